/* stats.c -- the statistics of a run as JSON (stats.h). */
#include "stats.h"
#include <stdio.h>
#include "json.h"

static double per(double total, uint64_t n)
{
	return n ? total / (double)n : 0.0;
}

int stats_write(const struct sup *s, const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	static const char *const tracker[] = { "", "page", "diff", "full" };
	const struct sup_stats *st = &s->tree->stats;
	const struct ckpt_stats *b = &st->bytes;
	const struct metalog_stats *m = &st->meta;
	struct prosper_pool_stats ps;
	prosper_pool_stats_get(s->tree->pool, &ps);
	struct json j;
	json_begin(&j, f);
	json_str(&j, "metadata_mode", s->cfg.meta_mode == META_LOG ? "log" : "rewrite");
	json_u64(&j, "metadata_bytes", m->bytes);
	json_u64(&j, "metadata_records", m->records);
	json_u64(&j, "metadata_rebuilds", m->rebuilds);
	json_u64(&j, "vma_adds", m->vma_add);
	json_u64(&j, "vma_removes", m->vma_remove);
	json_u64(&j, "vma_changes", m->vma_change);
	json_u64(&j, "fd_changes", m->fd_change);
	json_u64(&j, "file_changes", m->file_change);
	json_u64(&j, "metadata_first_bytes", st->meta_first_bytes);
	json_num(&j, "mean_commit_ms", "%.4f", 1e3 * per(st->commit_total, st->checkpoints));
	json_u64(&j, "checkpoints", st->checkpoints);
	json_u64(&j, "last_commit_given_up", (uint64_t)s->tree->commit_cancelled); /* the program finished during it */
	json_u64(&j, "tree_checkpoints", st->trees);
	json_u64(&j, "max_processes", st->max_processes);
	json_u64(&j, "pipe_bytes_in_flight", st->pipe_bytes_in_flight);
	json_u64(&j, "shared_memory_bytes", st->shm_bytes);
	json_u64(&j, "zombies_kept", st->zombies_kept);
	json_u64(&j, "late", st->late);
	static const char *const kinds[] = { "", "memory", "pmem", "disk", "two" };
	const struct tiers *t = &s->tree->tiers;
	json_str(&j, "tier", kinds[t->kind >= 0 && t->kind <= TIER_TWO ? t->kind : 0]);
	json_str(&j, "pool_fs", t->fs);
	json_num(&j, "durable_every_s", "%.3f", t->kind == TIER_TWO ? t->every_s : 0.0);
	json_u64(&j, "durable_copies", t->copies);
	json_u64(&j, "durable_copy_bytes", t->copy_written);
	json_u64(&j, "durable_copy_compared_bytes", t->copy_compared);
	json_num(&j, "durable_copy_mean_ms", "%.4f", 1e3 * per(t->copy_seconds, t->copies));
	json_num(&j, "durable_copy_max_ms", "%.4f", 1e3 * t->copy_max_seconds);
	json_num(&j, "durable_stage_max_ms", "%.4f", 1e3 * t->stage_max_seconds);
	json_u64(&j, "durable_epoch", t->kind == TIER_TWO ? t->durable_epoch : prosper_pool_epoch(s->tree->pool));
	uint64_t syncs;
	double sync_s;
	prosper_persist_sync_stats(&syncs, &sync_s);
	json_u64(&j, "fdatasyncs", syncs);
	json_num(&j, "fdatasync_mean_ms", "%.4f", 1e3 * per(sync_s, syncs));
	json_u64(&j, "waited_for_children", st->waited_for_children);
	json_u64(&j, "cuts_given_up", st->cuts_given_up);
	json_u64(&j, "cuts_put_off", st->cuts_put_off);
	json_u64(&j, "unread_lost_bytes", st->unread_lost_bytes);
	json_u64(&j, "execs_followed", st->execs_followed);
	json_u64(&j, "lock_owners_retagged", st->resume.lock_owners_retagged);
	json_bool(&j, "pid_namespace", s->tree->run.ns.on);
	json_u64(&j, "ids_changed", st->resume.ids_changed);
	json_bool(&j, "names_restored", (int)st->resume.names_restored);
	json_u64(&j, "timers_restored", st->resume.timers_restored);
	json_u64(&j, "posix_timers_restored", st->resume.posix_timers_restored);
	json_u64(&j, "epoll_watches_left", st->resume.epoll_watches_left);
	json_u64(&j, "limits_restored", st->resume.limits_restored);
	json_u64(&j, "timers_stale", st->timers_stale);
	json_u64(&j, "pending_saved", st->pending_saved);
	json_u64(&j, "pending_lost", st->pending_lost);
	json_u64(&j, "pending_restored", st->resume.pending_restored);
	json_num(&j, "mean_stop_ms", "%.4f", 1e3 * per(st->stop.total, st->checkpoints));
	json_num(&j, "max_stop_ms", "%.4f", 1e3 * st->stop.max);
	json_num(&j, "first_stop_ms", "%.4f", 1e3 * st->stop.first);
	json_num(&j, "max_stop_after_first_ms", "%.4f", 1e3 * st->stop.max_later);
	json_str(&j, "copy", s->cfg.copy_mode == COPY_PRECOPY ? "precopy" : "stop");
	json_u64(&j, "stop_read_bytes", st->stop.read_bytes);
	json_u64(&j, "stop_reads_shared", st->stop.reads_shared);
	json_u64(&j, "stop_read_faults", st->stop.read_faults);
	json_u64(&j, "staging_bytes", st->stop.staging_bytes);
	json_u64(&j, "staging_ahead_bytes", st->stop.staging_ahead_bytes);
	json_str(&j, "snapshot", s->cfg.snapshot_mode == SNAPSHOT_FORK ? "fork" : s->cfg.snapshot_mode == SNAPSHOT_COPY ? "copy" : "auto");
	json_u64(&j, "snapshot_views", st->snapshot.views);
	json_u64(&j, "snapshot_bytes", st->snapshot.bytes);
	json_u64(&j, "snapshot_declined", st->snapshot.declined);
	json_u64(&j, "snapshot_failed", st->snapshot.failed);
	json_u64(&j, "snapshot_forbidden", st->snapshot.forbidden);
	json_u64(&j, "snapshot_no_room", st->snapshot.no_room);
	json_u64(&j, "snapshot_cow_faults", st->snapshot.cow_faults);
	json_num(&j, "snapshot_cow_ms", "%.3f", 1e-6 * (double)st->snapshot.cow_extra_ns);
	json_num(&j, "snapshot_fork_mean_ms", "%.3f", 1e3 * per(st->snapshot.fork_total_s, st->snapshot.views));
	json_num(&j, "snapshot_fork_max_ms", "%.3f", 1e3 * st->snapshot.fork_max_s);
	json_num(&j, "snapshot_read_ms", "%.3f", 1e3 * st->snapshot.read_total_s);
	json_num(&j, "stop_copy_gbps", "%.3f", st->snapshot.copy_total_s > 0 ? st->snapshot.copied_bytes / st->snapshot.copy_total_s / 1e9 : 0.0);
	json_u64(&j, "precopies", st->precopy.passes);
	json_u64(&j, "precopy_bytes", st->precopy.bytes);
	json_u64(&j, "precopy_reread_bytes", st->precopy.reread_bytes);
	json_u64(&j, "precopy_dropped_bytes", st->precopy.dropped_bytes);
	json_u64(&j, "precopy_stale", st->precopy.stale);
	json_u64(&j, "precopy_skips", st->precopy.skips);
	json_num(&j, "precopy_ms", "%.4f", 1e3 * st->precopy.seconds);
	json_num(&j, "mean_threads", "%.3f", per((double)st->stop.thread_captures, st->checkpoints));
	json_num(&j, "thread_capture_us", "%.3f", 1e6 * per(st->stop.thread_capture_seconds, st->stop.thread_captures));
	/* where a stop's time went, per checkpoint (stopclock.h) */
	static const char *const phase_keys[STOP_NPHASES] = {
		"stop_threads_us", "stop_maps_us", "stop_follow_us", "stop_dirty_us", "stop_read_us",
		"stop_fds_us", "stop_blob_us", "stop_metadata_us", "stop_tree_us" };
	for (int p = 0; p < STOP_NPHASES; p++)
		json_num(&j, phase_keys[p], "%.1f", 1e6 * per(st->stop.phase_seconds[p], st->checkpoints));
	json_u64(&j, "stack_bytes", b->stack);
	json_u64(&j, "stack_page_bytes", b->stack_pages);
	json_u64(&j, "stack_exact_bytes", b->stack_exact);
	json_u64(&j, "stack_dense_checkpoints", b->stack_dense_checkpoints);
	json_u64(&j, "dense_region_switches", b->dense_regions);
	json_u64(&j, "other_bytes", b->other);
	json_u64(&j, "other_page_bytes", b->other_pages);
	json_u64(&j, "new_mapping_bytes", b->new_bytes);
	json_u64(&j, "pool_data_bytes", ps.data_bytes);
	json_u64(&j, "pool_catchup_bytes", ps.catchup_bytes);
	json_u64(&j, "pool_punched_bytes", ps.punched_bytes);
	json_u64(&j, "mismatches", b->mismatches);
	json_u64(&j, "verified_bytes", b->verified_bytes);
	json_u64(&j, "epoch", prosper_pool_epoch(s->tree->pool));
	json_str(&j, "stack_tracker", tracker[s->cfg.stack_mode]);
	json_str(&j, "heap_tracker", tracker[s->cfg.heap_mode]);
	json_u64(&j, "stack_granularity", s->cfg.stack_gran);
	json_u64(&j, "heap_granularity", s->cfg.heap_gran);
	json_num(&j, "interval_ms", "%g", s->cfg.interval_ms);
	/* the overhead budget (budget.h): the intervals taken, what checkpointing cost the program */
	const struct budget_stats *bu = &st->budget;
	json_num(&j, "max_overhead_pct", "%g", bu->percent);
	json_num(&j, "interval_mean_ms", "%.3f", 1e3 * per(bu->interval_sum_s, bu->intervals));
	json_num(&j, "interval_max_ms", "%.3f", 1e3 * bu->interval_max_s);
	json_num(&j, "interval_chosen_max_ms", "%.3f", 1e3 * bu->chosen_max_s);
	json_num(&j, "interval_last_ms", "%.3f", 1e3 * bu->chosen_last_s);
	json_num(&j, "overhead_measured_pct", "%.3f", budget_measured_pct(bu));
	json_num(&j, "overhead_stop_ms", "%.3f", 1e3 * bu->stop_s);
	json_num(&j, "overhead_fault_ms", "%.3f", 1e3 * bu->fault_total_s);
	json_num(&j, "overhead_wait_ms", "%.3f", 1e3 * bu->wait_s);
	json_num(&j, "write_fault_us", "%.3f", 1e6 * bu->fault_s);
	json_num(&j, "cow_fault_us", "%.3f", 1e6 * bu->cow_fault_s);
	json_u64(&j, "cuts_postponed", bu->postponed);
	json_num(&j, "page_written_us", "%.3f", 1e6 * bu->page_s);
	json_bool(&j, "resumed", s->cfg.resume);
	json_num(&j, "restore_seconds", "%.6f", st->resume.restore_seconds);
	json_num(&j, "restore_memory_seconds", "%.6f", st->resume.restore_memory_seconds);
	json_num(&j, "resume_command_seconds", "%.6f", st->resume.resume_command_seconds);
	json_u64(&j, "restored_bytes", st->resume.restored_bytes);
	json_u64(&j, "restore_copied_bytes", st->resume.restore_copied_bytes);
	json_bool(&j, "restore_lazy", st->resume.restore_lazy);
	json_u64(&j, "restore_fill_faults", st->resume.restore_fill_faults);
	json_num(&j, "cut_waited_for_fill_ms", "%.3f", 1e3 * st->resume.fill_wait_s);
	const struct file_track *ft = &s->tree->files;
	json_bool(&j, "files_tracked", ft->on);
	json_u64(&j, "file_calls_seen", ft->traps);
	json_u64(&j, "file_undo_records", ft->records);
	json_u64(&j, "file_undo_bytes", ft->bytes);
	json_u64(&j, "file_changes_not_undoable", ft->cannot);
	json_num(&j, "file_tracking_ms", "%.3f", 1e3 * ft->seconds);
	json_u64(&j, "file_journal_flushes", ft->flushes);
	json_u64(&j, "file_stdio_tightened", ft->tightened);
	json_num(&j, "file_journal_flush_ms", "%.3f", 1e3 * ft->flush_seconds);
	json_u64(&j, "files_undone", st->resume.files_undone);
	json_bool(&j, "output_held", ft->out != NULL);
	json_u64(&j, "output_held_writes", ft->held_writes);
	json_u64(&j, "output_held_bytes", ft->held_bytes);
	json_u64(&j, "output_released_at_resume", ft->released_at_resume);
	json_u64(&j, "output_waits", ft->hold_waits);
	json_num(&j, "output_wait_ms", "%.3f", 1e3 * ft->hold_wait_seconds);
	json_int(&j, "nvm_regions", s->nnvm);
	json_u64(&j, "nvm_faults", st->nvm.faults);
	json_u64(&j, "nvm_dirty_bytes", st->nvm.dirty_bytes);
	json_u64(&j, "pool_cow_bytes", ps.cow_bytes);
	json_u64(&j, "nvm_ahead_segments", st->nvm.ahead_segments);
	json_u64(&j, "nvm_ahead_changed", st->nvm.ahead_changed);
	json_num(&j, "nvm_fault_ms", "%.3f", 1e3 * st->nvm.fault_seconds);
	json_str(&j, "disabled", s->tree->disabled_reason[0] ? s->tree->disabled_reason : NULL);
	json_end(&j);
	return fclose(f) == 0 ? 0 : -1;
}
