/* pr_main.c -- the Valgrind tool "prosper": the Prosper hardware tracker on every store.
 *
 * Glue only (cachegrind's layout): the tracker model is src/hwmodel, the OS component (SP-aware
 * inspection, redo log) is src/stack.  This file routes every store of the program to N model
 * instances (one per granularity x table configuration), runs the OS component for the main
 * thread's stack every --interval-instr guest instructions, measures what a checkpoint copies,
 * and checks each instance's shadow persistent stack against the live stack.
 *
 * Notes:
 *   - Stores are Ist_Store, Ist_StoreG, Ist_CAS (counted as a store, even if it fails),
 *     Ist_LLSC store-conditionals, dirty helpers that write memory (FXSAVE/XSAVE and such), and
 *     memory the kernel writes for a system call or a signal frame (post_mem_write).
 *   - Intervals are counted in guest instructions and checked at superblock entries, where the
 *     guest state is consistent; a checkpoint therefore lands at most one superblock late.
 *   - Threads: every thread's stack [stack_max - stack_size + 1, stack_max] is tracked, each with
 *     its own bitmaps, shadow image and OS state.  The tracker is per core: when Valgrind runs
 *     another thread, the tracker is flushed into the outgoing thread's bitmap (counted as
 *     context-switch work) and loaded with the incoming thread's range and bitmap (§III-C).
 *     A store to another thread's stack is invisible to the per-core tracker; it is counted and
 *     marked in the owner's bitmap (as an OS would learn of it from a protected foreign stack).
 *   - A checkpoint is a consistent cut: all threads' stacks at the same instant.
 *   - The soundness oracle compares, after each checkpoint, every 8-byte granule of the active
 *     region [SP-128, top) that is DEFINED: written since it last lay below SP-128 at a
 *     checkpoint, or copied by the first (full) checkpoint.  Memory below SP is dead in Prosper's
 *     design, so bytes never written since are not part of the persistent state.
 *   - "Exact" bytes: 8-byte granules of the active region written in the interval whose value
 *     differs from the previous checkpoint's image: the least any tracker could copy.
 *   - "Dirtybit" bytes: 4 KiB pages of the stack written in the interval, from the page of
 *     SP-128 up, as the paper's Dirtybit baseline copies them.
 *   - Totals are printed; averages and ratios are computed by `prosper hw` (no floating point
 *     formatting inside the tool).
 *   - With --trace-out=PATH every load and store is also written to PATH as an uncompressed
 *     trace stream (docs/trace-format.md; `prosper trace` compresses it).  A record's
 *     instruction position is its superblock's entry count plus the index of its instruction in
 *     the superblock (side exits make later superblocks start "late", as for the intervals).
 *     Loads are instrumented only when tracing, so `prosper hw` pays nothing for them.
 *   - The trace also records the address space changing after start-up (mmap, munmap, mremap,
 *     brk) as MAP/UNMAP records of whole pages, from the core's memory-event callbacks.
 */
#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_machine.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_clientstate.h"
#include "pub_tool_vki.h"
#include "pub_tool_aspacemgr.h"

#include "prosper/hwmodel.h"
#include "prosper/stackckpt.h"
#include "prosper/trace_format.h"
#include "prosper/prosper_hw.h"

/*------------------------------------------------------------*/
/*--- Options                                              ---*/
/*------------------------------------------------------------*/

#define MAX_CONFIGS 32
static const HChar *clo_gran = "8,16,32,64,128";
static const HChar *clo_tables = "16:24:8";
static Long clo_interval = 30000000;
static const HChar *clo_json = NULL;
static const HChar *clo_trace = NULL;

static Bool pr_process_cmd_line_option(const HChar *arg)
{
	if VG_STR_CLO(arg, "--gran", clo_gran) {}
	else if VG_STR_CLO(arg, "--tables", clo_tables) {}
	else if VG_BINT_CLO(arg, "--interval-instr", clo_interval, 1000, 1000000000000LL) {}
	else if VG_STR_CLO(arg, "--json-out", clo_json) {}
	else if VG_STR_CLO(arg, "--trace-out", clo_trace) {}
	else return False;
	return True;
}

static void pr_print_usage(void)
{
	VG_(printf)("    --gran=LIST               granularities in bytes, 8..128 [8,16,32,64,128]\n"
		    "    --tables=T:H:L[,...]      lookup-table entries:HWM:LWM per configuration [16:24:8]\n"
		    "    --interval-instr=N        guest instructions per checkpoint interval [30000000]\n"
		    "    --json-out=FILE           write the totals as JSON to FILE (%%p: the pid)\n"
		    "    --trace-out=FILE          write every load and store as an uncompressed trace\n");
}

static void pr_print_debug_usage(void) { VG_(printf)("    (none)\n"); }

/*------------------------------------------------------------*/
/*--- Types                                                ---*/
/*------------------------------------------------------------*/

/* One tracker per configuration: the per-core hardware.  Its range and bitmap registers hold
 * the running thread's; a thread switch flushes it and loads the incoming thread's. */
struct config {
	struct prosper_hw hw;
	UInt log_gran;
	ULong bytes, records, runs, words_scanned, words_zeroed, mismatches, compared, max_log;
	ULong switch_writeouts;     /* entries written out by context-switch flushes */
	UChar *log;                 /* redo log, step 1 of the two-step commit */
	ULong log_cap;
};

/* One tracked stack per thread, with the OS's per-thread state for every configuration. */
struct tstack {
	Bool active;
	Addr base, top;             /* [base, top] */
	ULong len;
	UChar *written;             /* 1 bit per 8 B granule: stored to in this interval */
	UChar *defined;             /* 1 bit per 8 B granule: part of the persistent state */
	UInt *store_count;          /* stores per 8 B granule in this interval (Fig 2) */
	UChar *page_dirty;          /* 1 byte per 4 KiB page: written in this interval */
	Addr touched_lo, touched_hi;
	ULong checkpoints;          /* of this thread; its first is a full copy */
	struct {
		UChar *bitmap;
		ULong bitmap_bytes;
		UChar *shadow;          /* persistent stack image: shadow[i] = byte at base + i */
		ULong track_min;        /* lowest tracked store of the interval, over switch-outs */
	} c[MAX_CONFIGS];
};

static struct config cfgs[MAX_CONFIGS];
static Int ncfg;

#define MAX_THREADS 64
static struct tstack stacks[MAX_THREADS];
static ThreadId running;            /* whose stack the trackers hold (0: none yet) */
static Addr main_base, main_top;    /* the main thread's stack, for the report */

static ULong instrs, next_ckpt;
static ULong checkpoints, stack_stores, beyond_sp_stores, dirtybit_bytes, exact_bytes, exact_written_bytes;
static ULong first_ckpt_bytes, stores_seen, thread_switches, inter_thread_stores, threads_seen;

/* The program's own tracker, driven by client requests; its bitmap is in client memory. */
static struct prosper_hw client_hw;

/*------------------------------------------------------------*/
/*--- Bitmap memory for the model                          ---*/
/*------------------------------------------------------------*/

static uint32_t mem_load32(void *ctx, uint64_t addr) { return *(volatile UInt *)(Addr)addr; }
static void mem_store32(void *ctx, uint64_t addr, uint32_t v) { *(volatile UInt *)(Addr)addr = v; }
static const struct prosper_hw_bitmap_ops mem_ops = { mem_load32, mem_store32, NULL };

static inline Bool bit_get(const UChar *bm, ULong i) { return (bm[i >> 3] >> (i & 7)) & 1; }
static inline void bit_set(UChar *bm, ULong i) { bm[i >> 3] |= (UChar)(1 << (i & 7)); }

/*------------------------------------------------------------*/
/*--- Trace recording (docs/trace-format.md)               ---*/
/*------------------------------------------------------------*/

enum {
	TR_ADVANCE = PROSPER_TRACE_ADVANCE, TR_LOAD = PROSPER_TRACE_LOAD, TR_STORE = PROSPER_TRACE_STORE,
	TR_REGION = PROSPER_TRACE_REGION, TR_MAP = PROSPER_TRACE_MAP, TR_UNMAP = PROSPER_TRACE_UNMAP, TR_END = PROSPER_TRACE_END
};
enum { TR_OTHER = PROSPER_TRACE_OTHER, TR_STACK = PROSPER_TRACE_STACK, TR_HEAP = PROSPER_TRACE_HEAP };
#define TR_RECORD PROSPER_TRACE_RECORD

static Int trace_fd = -1;
static UChar trace_buf[1 << 20];
static UInt trace_used;
static ULong trace_records, trace_last_pos, sb_base;

static void trace_flush(void)
{
	UInt off = 0;
	while (off < trace_used) {
		Int n = VG_(write)(trace_fd, trace_buf + off, trace_used - off);
		if (n <= 0) {
			VG_(umsg)("prosper: trace write failed; tracing stops\n");
			VG_(close)(trace_fd);
			trace_fd = -1;
			break;
		}
		off += (UInt)n;
	}
	trace_used = 0;
}

/* trace_put -- one record (trace_format.h). */
static void trace_put(UInt delta, UChar op, UChar region, UShort size, ULong addr, ULong sp)
{
	if (trace_used + TR_RECORD > sizeof trace_buf)
		trace_flush();
	prosper_trace_encode(trace_buf + trace_used, delta, op, region, size, addr, sp);
	trace_used += TR_RECORD;
	if (op != TR_END)
		trace_records++;
}

/* trace_advance -- the instruction delta to `pos`, split into ADVANCE records when it does not
 * fit 32 bits; positions never go backwards. */
static UInt trace_advance(ULong pos)
{
	if (pos < trace_last_pos)
		pos = trace_last_pos;
	ULong d = pos - trace_last_pos;
	trace_last_pos = pos;
	while (d > 0xFFFFFFFFull) {
		trace_put(0xFFFFFFFFu, TR_ADVANCE, 0, 0, 0, 0);
		d -= 0xFFFFFFFFull;
	}
	return (UInt)d;
}

static void trace_open(void)
{
	SysRes r = VG_(open)(clo_trace, VKI_O_WRONLY | VKI_O_CREAT | VKI_O_TRUNC, VKI_S_IRUSR | VKI_S_IWUSR);
	if (sr_isError(r))
		VG_(fmsg_bad_option)("--trace-out", "cannot open %s\n", clo_trace);
	trace_fd = (Int)sr_Res(r);
	HChar head[1024];
	Int n = VG_(snprintf)(head, sizeof head, PROSPER_TRACE_HEADER_HEAD "%s" PROSPER_TRACE_HEADER_TAIL,
			      VG_(args_the_exename) ? VG_(args_the_exename) : "?");
	VG_(memcpy)(trace_buf, head, n);
	trace_used = (UInt)n;
}

static void trace_close(void)
{
	if (trace_fd < 0)
		return;
	trace_put(0, TR_END, 0, 0, trace_records, instrs);
	trace_flush();
	if (trace_fd >= 0)
		VG_(close)(trace_fd);
	trace_fd = -1;
}

/*------------------------------------------------------------*/
/*--- Threads                                              ---*/
/*------------------------------------------------------------*/

static void stack_setup(ThreadId tid)
{
	struct tstack *t = &stacks[tid];
	Addr max = VG_(thread_get_stack_max)(tid);
	SizeT size = VG_(thread_get_stack_size)(tid);
	if (size == 0 || size > (1UL << 30) || max < size)
		return; /* no usable stack bounds (yet) */
	t->top = max;
	t->base = max - size + 1;
	t->len = size;
	ULong granules = t->len / 8 + 1;
	t->written = VG_(calloc)("pr.written", granules / 8 + 8, 1);
	t->defined = VG_(calloc)("pr.defined", granules / 8 + 8, 1);
	t->store_count = VG_(calloc)("pr.counts", granules, sizeof(UInt));
	t->page_dirty = VG_(calloc)("pr.pages", t->len / 4096 + 2, 1);
	t->touched_lo = ~0UL;
	t->touched_hi = 0;
	t->checkpoints = 0;
	for (Int i = 0; i < ncfg; i++) {
		t->c[i].bitmap_bytes = prosper_hw_bitmap_bytes(t->len, cfgs[i].log_gran);
		t->c[i].bitmap = VG_(calloc)("pr.bitmap", t->c[i].bitmap_bytes, 1);
		t->c[i].shadow = VG_(calloc)("pr.shadow", t->len, 1);
		t->c[i].track_min = ~0UL;
	}
	t->active = True;
	threads_seen++;
	if (trace_fd >= 0) /* the stack's bounds, [base, top+1), so that the trace describes itself */
		trace_put(trace_advance(sb_base), TR_REGION, TR_STACK, (UShort)tid, t->base, t->top + 1);
	if (tid == 1) {
		main_base = t->base;
		main_top = t->top;
	}
}

static void stack_free(ThreadId tid)
{
	struct tstack *t = &stacks[tid];
	if (!t->active)
		return;
	VG_(free)(t->written);
	VG_(free)(t->defined);
	VG_(free)(t->store_count);
	VG_(free)(t->page_dirty);
	for (Int i = 0; i < ncfg; i++) {
		VG_(free)(t->c[i].bitmap);
		VG_(free)(t->c[i].shadow);
	}
	VG_(memset)(t, 0, sizeof *t);
}

/* tracker_unload -- context switch out: flush the table into the thread's bitmap, wait for
 * quiescence, remember the thread's TRACK_MIN for its next checkpoint. */
static void tracker_unload(void)
{
	if (!running || !stacks[running].active)
		return;
	struct tstack *t = &stacks[running];
	for (Int i = 0; i < ncfg; i++) {
		struct config *c = &cfgs[i];
		ULong before = c->hw.c.flush_writeouts;
		prosper_hw_set_gran(&c->hw, 0);
		prosper_hw_flush(&c->hw);
		tl_assert(prosper_hw_sync(&c->hw));
		c->switch_writeouts += c->hw.c.flush_writeouts - before;
		if (c->hw.track_min < t->c[i].track_min)
			t->c[i].track_min = c->hw.track_min;
	}
}

/* tracker_load -- context switch in: the incoming thread's range, bitmap, granularity. */
static void tracker_load(ThreadId tid)
{
	running = tid;
	struct tstack *t = &stacks[tid];
	for (Int i = 0; i < ncfg; i++) {
		struct config *c = &cfgs[i];
		if (!t->active) {
			prosper_hw_set_gran(&c->hw, 0);
			continue;
		}
		prosper_hw_set_range(&c->hw, t->base, t->top);
		prosper_hw_set_dirtymap(&c->hw, (Addr)t->c[i].bitmap);
		prosper_hw_set_gran(&c->hw, c->log_gran);
	}
}

static void switch_to(ThreadId tid)
{
	if (tid == running || tid == 0 || tid >= MAX_THREADS)
		return;
	if (!stacks[tid].active)
		stack_setup(tid);
	if (running)
		thread_switches++;
	tracker_unload();
	tracker_load(tid);
}

static void pr_thread_exit(ThreadId tid)
{
	if (tid == running) {
		tracker_unload();
		running = 0;
	}
	if (tid < MAX_THREADS)
		stack_free(tid);
}

/*------------------------------------------------------------*/
/*--- Simulation calls                                     ---*/
/*------------------------------------------------------------*/

/* note_store -- the OS-side bookkeeping of a store to thread t's stack (oracle, Fig 2,
 * Dirtybit, exact minimum); independent of the tracker configurations. */
static void note_store(struct tstack *t, Addr a, UWord size)
{
	uint64_t from, first, last;
	if (!prosper_store_granules(a, size, t->base, t->top, 3, &from, &first, &last))
		return;
	Addr lo = from, hi = a + size - 1 > t->top ? t->top : a + size - 1;
	stack_stores++;
	t->store_count[first]++;
	for (ULong g = first; g <= last; g++) {
		bit_set(t->written, g);
		bit_set(t->defined, g);
	}
	for (ULong p = (lo - t->base) >> 12; p <= (hi - t->base) >> 12; p++)
		t->page_dirty[p] = 1;
	if (lo < t->touched_lo)
		t->touched_lo = lo;
	if (hi > t->touched_hi)
		t->touched_hi = hi;
}

static inline Bool in_stack(const struct tstack *t, Addr a, UWord size)
{
	return t->active && a + size - 1 >= t->base && a <= t->top;
}

static VG_REGPARM(2) void pr_store(Addr a, UWord size)
{
	stores_seen++;
	if (client_hw.log_gran)
		prosper_hw_store(&client_hw, a, size);
	if (size == 0)
		return;
	ThreadId tid = VG_(get_running_tid)();
	if (tid != running)
		switch_to(tid);
	if (running && in_stack(&stacks[running], a, size)) {
		for (Int i = 0; i < ncfg; i++)
			prosper_hw_store(&cfgs[i].hw, a, size);
		note_store(&stacks[running], a, size);
		return;
	}
	/* A store to another thread's stack: the per-core tracker does not see it (its range is the
	 * running thread's).  Counted, and marked in the owner's bitmap as the OS would learn of it
	 * (e.g. from a write-protected foreign stack), so that no write is lost. */
	for (ThreadId o = 1; o < MAX_THREADS; o++) {
		struct tstack *t = &stacks[o];
		if (o == running || !in_stack(t, a, size))
			continue;
		inter_thread_stores++;
		for (Int i = 0; i < ncfg; i++) {
			uint64_t lo, first, last;
			if (!prosper_store_granules(a, size, t->base, t->top, cfgs[i].log_gran, &lo, &first, &last))
				continue;
			for (ULong b = first; b <= last; b++)
				t->c[i].bitmap[b >> 3] |= (UChar)(1 << (b & 7));
			if (lo < t->c[i].track_min)
				t->c[i].track_min = lo;
		}
		note_store(t, a, size);
		return;
	}
}

/* region_of -- stack if in a thread's stack, heap if in anonymous client memory (brk and
 * anonymous mmaps), else other (the program's and libraries' file mappings). */
static UChar region_of(Addr a)
{
	if (running && in_stack(&stacks[running], a, 1))
		return TR_STACK;
	for (ThreadId o = 1; o < MAX_THREADS; o++)
		if (o != running && in_stack(&stacks[o], a, 1))
			return TR_STACK;
	const NSegment *seg = VG_(am_find_nsegment)(a);
	return seg && seg->kind == SkAnonC ? TR_HEAP : TR_OTHER;
}

/* pr_trace -- one access; `packed` = op | size << 8 | instruction index in the SB << 32. */
static VG_REGPARM(3) void pr_trace(Addr a, UWord packed, UWord sp)
{
	if (trace_fd < 0)
		return;
	ThreadId tid = VG_(get_running_tid)();
	if (tid != running)
		switch_to(tid);
	UInt delta = trace_advance(sb_base + (packed >> 32));
	UWord size = (packed >> 8) & 0xFFFFFF;
	trace_put(delta, (UChar)(packed & 0xFF), region_of(a), size > 0xFFFF ? 0xFFFF : (UShort)size, a, sp);
}

/* trace_mapping -- the address space changed: a MAP or UNMAP record of whole pages [lo, hi), at
 * the position of the previous record (the system call that did it). */
static void trace_mapping(UChar op, UChar region, UShort prot, Addr lo, Addr hi)
{
	if (trace_fd >= 0 && hi > lo)
		trace_put(trace_advance(trace_last_pos), op, region, prot, lo, hi);
}

static void pr_new_mem_mmap(Addr a, SizeT len, Bool rr, Bool ww, Bool xx, ULong di_handle)
{
	trace_mapping(TR_MAP, region_of(a), (UShort)((rr ? 1 : 0) | (ww ? 2 : 0) | (xx ? 4 : 0)), VG_PGROUNDDN(a),
		      VG_PGROUNDUP(a + len));
}

static void pr_die_mem_munmap(Addr a, SizeT len) { trace_mapping(TR_UNMAP, 0, 0, VG_PGROUNDDN(a), VG_PGROUNDUP(a + len)); }

/* mremap: the moved pages are a new mapping (Valgrind reports the old range's death apart). */
static void pr_copy_mem_remap(Addr from, Addr to, SizeT len)
{
	trace_mapping(TR_MAP, region_of(to), 3, VG_PGROUNDDN(to), VG_PGROUNDUP(to + len));
}

/* brk moves by bytes: the page holding the old break stays mapped, so only whole pages past it
 * come and go. */
static void pr_new_mem_brk(Addr a, SizeT len, ThreadId tid)
{
	trace_mapping(TR_MAP, TR_HEAP, 3, VG_PGROUNDUP(a), VG_PGROUNDUP(a + len));
}

static void pr_die_mem_brk(Addr a, SizeT len) { trace_mapping(TR_UNMAP, 0, 0, VG_PGROUNDUP(a), VG_PGROUNDUP(a + len)); }

static void pr_post_mem_write(CorePart part, ThreadId tid, Addr a, SizeT size)
{
	pr_store(a, size);
	if (trace_fd >= 0 && size > 0)
		trace_put(trace_advance(trace_last_pos), TR_STORE, region_of(a), size > 0xFFFF ? 0xFFFF : (UShort)size,
			  a, VG_(get_SP)(tid));
}

/* The emit callback of the inspection: append the run's live bytes to the redo log. */
struct emit_ctx {
	struct config *c;
	Addr base;
	ULong bytes;
};

static void emit_run(void *vctx, uint64_t off, uint64_t len)
{
	struct emit_ctx *e = vctx;
	struct config *c = e->c;
	while (prosper_stacklog_append(c->log, c->log_cap, off, (const void *)(e->base + off), (UInt)len) != 0) {
		c->log_cap *= 2;
		c->log = VG_(realloc)("pr.log", c->log, c->log_cap);
	}
	e->bytes += len;
	c->runs++;
}

static void emit_nothing(void *vctx, uint64_t off, uint64_t len) {}

static void ensure_log(struct config *c, ULong need)
{
	if (c->log_cap < need) {
		c->log_cap = need;
		c->log = VG_(realloc)("pr.log", c->log, c->log_cap);
	}
}

/* checkpoint_stack -- the OS component for one thread's stack, every configuration. */
static void checkpoint_stack(ThreadId tid)
{
	struct tstack *t = &stacks[tid];
	Addr sp = VG_(get_SP)(tid);
	Addr active_lo = prosper_stack_active_lo(sp, t->base, t->top + 1);
	ULong lo_off = active_lo - t->base, g_lo = lo_off >> 3, g_end = (t->len + 7) >> 3;
	Bool first = t->checkpoints == 0;

	/* Exact minimum: written granules whose value differs from the last image (config 0's). */
	ULong exact = 0, exact_w = 0;
	for (ULong g = g_lo; g < g_end; g++) {
		if (!first && !bit_get(t->written, g))
			continue;
		exact_w += 8;
		ULong from = g * 8 < lo_off ? lo_off : g * 8, to = g * 8 + 8 > t->len ? t->len : g * 8 + 8;
		if (first || VG_(memcmp)(t->c[0].shadow + from, (const void *)(t->base + from), to - from) != 0)
			exact += 8;
	}

	for (Int i = 0; i < ncfg; i++) {
		struct config *c = &cfgs[i];
		struct prosper_stack_inspect_stats st;
		VG_(memset)(&st, 0, sizeof st);
		struct emit_ctx e = { c, t->base, 0 };
		ULong tmin = t->c[i].track_min;
		if (first) {
			/* the first checkpoint copies the whole active region */
			prosper_stack_inspect((uint64_t *)t->c[i].bitmap, t->c[i].bitmap_bytes / 8, t->base, t->len,
					      c->log_gran, active_lo, tmin, emit_nothing, NULL, &st);
			ensure_log(c, t->len - lo_off + 4096);
			prosper_stacklog_init(c->log, c->log_cap, t->checkpoints + 1);
			emit_run(&e, lo_off, t->len - lo_off);
		} else {
			prosper_stacklog_init(c->log, c->log_cap, t->checkpoints + 1);
			prosper_stack_inspect((uint64_t *)t->c[i].bitmap, t->c[i].bitmap_bytes / 8, t->base, t->len,
					      c->log_gran, active_lo, tmin, emit_run, &e, &st);
		}
		t->c[i].track_min = ~0UL;
		prosper_stacklog_seal(c->log);
		uint64_t epoch = 0;
		tl_assert(prosper_stacklog_check(c->log, c->log_cap, &epoch) == 0 && epoch == t->checkpoints + 1);
		/* step 2: apply to the persistent image */
		tl_assert(prosper_stacklog_apply(c->log, t->c[i].shadow, t->len) == 0);
		if (first) {
			if (tid == 1 && i == 0)
				first_ckpt_bytes = e.bytes;
		} else {
			c->bytes += e.bytes;
		}
		c->records += prosper_stacklog_records(c->log);
		if (prosper_stacklog_bytes(c->log) > c->max_log)
			c->max_log = prosper_stacklog_bytes(c->log);
		c->words_scanned += st.words_scanned;
		c->words_zeroed += st.words_zeroed;
	}

	/* Dead granules (below SP-128) stop being part of the persistent state. */
	if (first)
		for (ULong g = g_lo; g < g_end; g++)
			bit_set(t->defined, g);
	VG_(memset)(t->defined, 0, g_lo >> 3);
	for (ULong g = g_lo & ~7ULL; g < g_lo; g++)
		t->defined[g >> 3] &= (UChar)~(1 << (g & 7));

	/* Soundness oracle: every defined byte of the active region equals the live stack. */
	for (Int i = 0; i < ncfg; i++) {
		struct config *c = &cfgs[i];
		for (ULong g = g_lo; g < g_end; g++) {
			if (!bit_get(t->defined, g))
				continue;
			ULong from = g * 8 < lo_off ? lo_off : g * 8, to = g * 8 + 8 > t->len ? t->len : g * 8 + 8;
			const UChar *live = (const UChar *)(t->base + from);
			for (ULong k = 0; k < to - from; k++)
				c->mismatches += t->c[i].shadow[from + k] != live[k];
			c->compared += to - from;
		}
	}

	/* Dirtybit and Fig 2 counts; reset the per-interval state. */
	ULong pages = 0;
	uint64_t first_page;
	ULong scanned = prosper_stack_active_pages(sp, t->base, t->base + t->len, t->base, &first_page);
	for (ULong p = first_page; p < first_page + scanned; p++)
		pages += first || t->page_dirty[p];
	if (!first) {
		dirtybit_bytes += pages * 4096;
		exact_bytes += exact;
		exact_written_bytes += exact_w;
	}
	if (t->touched_lo <= t->touched_hi) {
		for (ULong g = (t->touched_lo - t->base) >> 3; g <= (t->touched_hi - t->base) >> 3; g++) {
			if (t->base + g * 8 < sp)
				beyond_sp_stores += t->store_count[g];
			t->store_count[g] = 0;
		}
		for (ULong g = (t->touched_lo - t->base) >> 6; g <= (t->touched_hi - t->base) >> 6; g++)
			t->written[g] = 0;
		for (ULong p = (t->touched_lo - t->base) >> 12; p <= (t->touched_hi - t->base) >> 12; p++)
			t->page_dirty[p] = 0;
	}
	t->touched_lo = ~0UL;
	t->touched_hi = 0;
	t->checkpoints++;
}

/* checkpoint -- every thread stopped at once (a consistent cut): flush the running thread's
 * tracker (the others were flushed when they were switched out), then each thread's stack. */
static void checkpoint(void)
{
	ThreadId cur = running;
	if (!cur)
		return;
	tracker_unload();
	for (ThreadId tid = 1; tid < MAX_THREADS; tid++)
		if (stacks[tid].active)
			checkpoint_stack(tid);
	tracker_load(cur);
	checkpoints++;
}

static VG_REGPARM(1) void pr_sb_entry(UWord n)
{
	ThreadId tid = VG_(get_running_tid)();
	if (tid != running)
		switch_to(tid);
	sb_base = instrs;
	instrs += n;
	if (instrs >= next_ckpt) {
		checkpoint();
		next_ckpt = instrs + (ULong)clo_interval;
	}
}

/*------------------------------------------------------------*/
/*--- Instrumentation                                      ---*/
/*------------------------------------------------------------*/

static void add_store(IRSB *sb, IRExpr *addr, Int size, IRExpr *guard)
{
	IRDirty *di = unsafeIRDirty_0_N(2, "pr_store", VG_(fnptr_to_fnentry)(&pr_store),
					mkIRExprVec_2(addr, mkIRExpr_HWord((HWord)size)));
	if (guard)
		di->guard = guard;
	addStmtToIRSB(sb, IRStmt_Dirty(di));
}

/* add_trace -- a call recording one access (tracing only); SP is read from the guest state at
 * this point of the superblock, so it reflects every earlier Put in it. */
static void add_trace(IRSB *sb, IRExpr *addr, Int size, UInt op, Int imark, IRExpr *guard, const VexGuestLayout *layout)
{
	if (!clo_trace || size <= 0)
		return;
	if (addr->tag != Iex_RdTmp && addr->tag != Iex_Const) {
		IRTemp t = newIRTemp(sb->tyenv, Ity_I64);
		addStmtToIRSB(sb, IRStmt_WrTmp(t, addr));
		addr = IRExpr_RdTmp(t);
	}
	IRTemp sp = newIRTemp(sb->tyenv, Ity_I64);
	addStmtToIRSB(sb, IRStmt_WrTmp(sp, IRExpr_Get(layout->offset_SP, Ity_I64)));
	ULong packed = (ULong)op | ((ULong)size << 8) | ((ULong)(imark < 0 ? 0 : imark) << 32);
	IRDirty *di = unsafeIRDirty_0_N(3, "pr_trace", VG_(fnptr_to_fnentry)(&pr_trace),
					mkIRExprVec_3(addr, mkIRExpr_HWord((HWord)packed), IRExpr_RdTmp(sp)));
	if (guard)
		di->guard = guard;
	addStmtToIRSB(sb, IRStmt_Dirty(di));
}

static IRSB *pr_instrument(VgCallbackClosure *closure, IRSB *in, const VexGuestLayout *layout,
			   const VexGuestExtents *vge, const VexArchInfo *archinfo_host, IRType gWordTy,
			   IRType hWordTy)
{
	IRSB *out = deepCopyIRSBExceptStmts(in);
	Int i = 0, ninstr = 0;
	for (Int k = 0; k < in->stmts_used; k++)
		ninstr += in->stmts[k] && in->stmts[k]->tag == Ist_IMark;
	while (i < in->stmts_used && in->stmts[i]->tag != Ist_IMark)
		addStmtToIRSB(out, in->stmts[i++]);
	/* Interval accounting at entry; it reads SP, so say so (the guest state must be current). */
	IRDirty *entry = unsafeIRDirty_0_N(1, "pr_sb_entry", VG_(fnptr_to_fnentry)(&pr_sb_entry),
					   mkIRExprVec_1(mkIRExpr_HWord((HWord)ninstr)));
	entry->nFxState = 1;
	entry->fxState[0].fx = Ifx_Read;
	entry->fxState[0].offset = layout->offset_SP;
	entry->fxState[0].size = layout->sizeof_SP;
	entry->fxState[0].nRepeats = 0;
	entry->fxState[0].repeatLen = 0;
	addStmtToIRSB(out, IRStmt_Dirty(entry));

	Int imark = -1;
	for (; i < in->stmts_used; i++) {
		IRStmt *st = in->stmts[i];
		if (!st)
			continue;
		switch (st->tag) {
		case Ist_IMark:
			imark++;
			break;
		case Ist_WrTmp:
			if (st->Ist.WrTmp.data->tag == Iex_Load)
				add_trace(out, st->Ist.WrTmp.data->Iex.Load.addr, sizeofIRType(st->Ist.WrTmp.data->Iex.Load.ty),
					  TR_LOAD, imark, NULL, layout);
			break;
		case Ist_LoadG: {
			IRLoadG *lg = st->Ist.LoadG.details;
			IRType res, arg;
			typeOfIRLoadGOp(lg->cvt, &res, &arg);
			add_trace(out, lg->addr, sizeofIRType(arg), TR_LOAD, imark, lg->guard, layout);
			break;
		}
		case Ist_Store: {
			Int sz = sizeofIRType(typeOfIRExpr(in->tyenv, st->Ist.Store.data));
			add_store(out, st->Ist.Store.addr, sz, NULL);
			add_trace(out, st->Ist.Store.addr, sz, TR_STORE, imark, NULL, layout);
			break;
		}
		case Ist_StoreG: {
			IRStoreG *sg = st->Ist.StoreG.details;
			Int sz = sizeofIRType(typeOfIRExpr(in->tyenv, sg->data));
			add_store(out, sg->addr, sz, sg->guard);
			add_trace(out, sg->addr, sz, TR_STORE, imark, sg->guard, layout);
			break;
		}
		case Ist_CAS: {
			IRCAS *cas = st->Ist.CAS.details;
			Int sz = sizeofIRType(typeOfIRExpr(in->tyenv, cas->dataLo)) * (cas->dataHi ? 2 : 1);
			add_store(out, cas->addr, sz, NULL);
			add_trace(out, cas->addr, sz, TR_LOAD, imark, NULL, layout);
			add_trace(out, cas->addr, sz, TR_STORE, imark, NULL, layout);
			break;
		}
		case Ist_LLSC:
			if (st->Ist.LLSC.storedata) {
				Int sz = sizeofIRType(typeOfIRExpr(in->tyenv, st->Ist.LLSC.storedata));
				add_store(out, st->Ist.LLSC.addr, sz, NULL);
				add_trace(out, st->Ist.LLSC.addr, sz, TR_STORE, imark, NULL, layout);
			} else {
				add_trace(out, st->Ist.LLSC.addr, sizeofIRType(typeOfIRTemp(in->tyenv, st->Ist.LLSC.result)),
					  TR_LOAD, imark, NULL, layout);
			}
			break;
		case Ist_Dirty: {
			IRDirty *d = st->Ist.Dirty.details;
			if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
				add_trace(out, d->mAddr, d->mSize, TR_LOAD, imark, d->guard, layout);
			if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify) {
				add_store(out, d->mAddr, d->mSize, NULL);
				add_trace(out, d->mAddr, d->mSize, TR_STORE, imark, d->guard, layout);
			}
			break;
		}
		default:
			break;
		}
		addStmtToIRSB(out, st);
	}
	return out;
}

/*------------------------------------------------------------*/
/*--- Client requests                                      ---*/
/*------------------------------------------------------------*/

static Bool pr_handle_client_request(ThreadId tid, UWord *arg, UWord *ret)
{
	if (!VG_IS_TOOL_USERREQ('P', 'R', arg[0]))
		return False;
	*ret = 0;
	switch (arg[0]) {
	case PROSPER_HW_TRACK_START: client_hw.track_start = arg[1]; break;
	case PROSPER_HW_TRACK_END: client_hw.track_end = arg[1]; break;
	case PROSPER_HW_DIRTYMAP_ADDR: prosper_hw_set_dirtymap(&client_hw, arg[1]); break;
	case PROSPER_HW_LOG_TRACK_GRAN: prosper_hw_set_gran(&client_hw, (UInt)arg[1]); break;
	case PROSPER_HW_TRACK_MIN: *ret = client_hw.track_min; break;
	case PROSPER_HW_TRACK_SYNC: *ret = prosper_hw_sync(&client_hw); break;
	case PROSPER_HW_FLUSH: prosper_hw_flush(&client_hw); break;
	case PROSPER_HW_CHECKPOINT: switch_to(tid); checkpoint(); break;
	case PROSPER_HW_RUNNING: *ret = 1; break;
	default: return False;
	}
	return True;
}

/*------------------------------------------------------------*/
/*--- Finish                                               ---*/
/*------------------------------------------------------------*/

static void pr_fini(Int exitcode)
{
	trace_close();
	/* No checkpoint at exit: the program is over, and a tail interval after main returned
	 * would only dilute the per-checkpoint averages. */
	VG_(umsg)("prosper: %llu checkpoints, %llu instructions, %llu stack stores (%llu below the final SP)\n",
		  checkpoints, instrs, stack_stores, beyond_sp_stores);
	VG_(umsg)("prosper: per checkpoint after the first: dirtybit %llu B, exact %llu B\n",
		  checkpoints > 1 ? dirtybit_bytes / (checkpoints - 1) : 0,
		  checkpoints > 1 ? exact_bytes / (checkpoints - 1) : 0);
	for (Int i = 0; i < ncfg; i++) {
		struct config *c = &cfgs[i];
		VG_(umsg)("prosper: gran %3u table %2u hwm %2u lwm %2u: %llu B/ckpt, bitmap loads %llu stores %llu, "
			  "soundness mismatches %llu\n", 1u << c->log_gran, c->hw.cfg.table_entries, c->hw.cfg.hwm,
			  c->hw.cfg.lwm, checkpoints > 1 ? c->bytes / (checkpoints - 1) : 0, (ULong)c->hw.c.bitmap_loads,
			  (ULong)c->hw.c.bitmap_stores, c->mismatches);
	}
	if (!clo_json)
		return;
	/* %p in the name becomes the pid: with --trace-children=yes every process writes its own */
	const HChar *path = VG_(expand_file_name)("--json-out", clo_json);
	VgFile *f = VG_(fopen)(path, VKI_O_CREAT | VKI_O_TRUNC | VKI_O_WRONLY, VKI_S_IRUSR | VKI_S_IWUSR);
	if (!f) {
		VG_(umsg)("prosper: cannot write %s\n", path);
		return;
	}
	VG_(fprintf)(f, "{\"checkpoints\": %llu, \"instructions\": %llu, \"interval_instr\": %lld, "
			"\"stack_base\": %lu, \"stack_top\": %lu, \"stores\": %llu, \"stack_stores\": %llu, "
			"\"beyond_sp_stores\": %llu, \"first_checkpoint_bytes\": %llu, \"dirtybit_bytes\": %llu, "
			"\"exact_bytes\": %llu, \"exact_written_bytes\": %llu, \"exit_code\": %d, \"threads\": %llu, "
			"\"thread_switches\": %llu, \"inter_thread_stores\": %llu, \"configs\": [",
		     checkpoints, instrs, clo_interval, main_base, main_top, stores_seen, stack_stores,
		     beyond_sp_stores, first_ckpt_bytes, dirtybit_bytes, exact_bytes, exact_written_bytes, exitcode,
		     threads_seen, thread_switches, inter_thread_stores);
	for (Int i = 0; i < ncfg; i++) {
		struct config *c = &cfgs[i];
		struct prosper_hw_counters *k = &c->hw.c;
		VG_(fprintf)(f, "%s{\"gran\": %u, \"table\": %u, \"hwm\": %u, \"lwm\": %u, \"bytes\": %llu, "
				"\"records\": %llu, \"runs\": %llu, \"words_scanned\": %llu, \"words_zeroed\": %llu, "
				"\"max_log_bytes\": %llu, \"bitmap_loads\": %llu, \"bitmap_stores\": %llu, "
				"\"redundant_stores\": %llu, \"hits\": %llu, \"misses\": %llu, \"hwm_writeouts\": %llu, "
				"\"lwm_evictions\": %llu, \"random_evictions\": %llu, \"flush_writeouts\": %llu, "
				"\"stores_tracked\": %llu, \"granules_marked\": %llu, \"soundness_mismatches\": %llu, "
				"\"soundness_bytes_compared\": %llu, \"switch_writeouts\": %llu}",
			     i ? ", " : "", 1u << c->log_gran, c->hw.cfg.table_entries, c->hw.cfg.hwm, c->hw.cfg.lwm,
			     c->bytes, c->records, c->runs, c->words_scanned, c->words_zeroed, c->max_log,
			     (ULong)k->bitmap_loads, (ULong)k->bitmap_stores, (ULong)k->redundant_stores, (ULong)k->hits,
			     (ULong)k->misses, (ULong)k->hwm_writeouts, (ULong)k->lwm_evictions, (ULong)k->random_evictions,
			     (ULong)k->flush_writeouts, (ULong)k->stores_tracked, (ULong)k->granules_marked, c->mismatches,
			     c->compared, c->switch_writeouts);
	}
	VG_(fprintf)(f, "]}\n");
	VG_(fclose)(f);
}

/*------------------------------------------------------------*/
/*--- Setup                                                ---*/
/*------------------------------------------------------------*/

/* parse_list -- "8,16" into numbers; returns the count or -1. */
static Int parse_list(const HChar *s, ULong *out, Int max, HChar sep)
{
	Int n = 0;
	while (*s) {
		if (n == max)
			return -1;
		HChar *end;
		out[n++] = VG_(strtoull10)(s, &end);
		if (end == s)
			return -1;
		s = end;
		if (*s == sep || *s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return n;
}

static void pr_post_clo_init(void)
{
	ULong grans[8], tabs[3 * MAX_CONFIGS];
	Int ng = parse_list(clo_gran, grans, 8, ',');
	Int nt = parse_list(clo_tables, tabs, 3 * MAX_CONFIGS, ':');
	if (ng <= 0 || nt <= 0 || nt % 3)
		VG_(fmsg_bad_option)("--gran / --tables", "expected --gran=8,16 and --tables=16:24:8[,T:H:L]\n");
	ncfg = 0;
	for (Int t = 0; t < nt; t += 3)
		for (Int g = 0; g < ng; g++) {
			UInt lg = 0;
			while ((1ull << lg) < grans[g])
				lg++;
			if ((1ull << lg) != grans[g] || lg < 3 || lg > 7)
				VG_(fmsg_bad_option)("--gran", "granularities are 8, 16, 32, 64 or 128\n");
			if (ncfg == MAX_CONFIGS)
				VG_(fmsg_bad_option)("--gran / --tables", "at most 32 configurations\n");
			struct config *c = &cfgs[ncfg++];
			struct prosper_hw_config hc;
			prosper_hw_config_default(&hc);
			hc.table_entries = (UInt)tabs[t];
			hc.hwm = (UInt)tabs[t + 1];
			hc.lwm = (UInt)tabs[t + 2];
			hc.log_gran = lg;
			if (prosper_hw_init(&c->hw, &hc, &mem_ops) != 0)
				VG_(fmsg_bad_option)("--tables", "table 1..64, HWM 1..32, LWM 0..32\n");
			c->log_gran = lg;
			c->log_cap = 1 << 20;
			c->log = VG_(malloc)("pr.log", c->log_cap);
		}
	struct prosper_hw_config cc;
	prosper_hw_config_default(&cc);
	prosper_hw_init(&client_hw, &cc, &mem_ops);
	next_ckpt = (ULong)clo_interval;
	if (clo_trace)
		trace_open();
}

static void pr_pre_clo_init(void)
{
	VG_(details_name)("prosper");
	VG_(details_version)("0.1");
	VG_(details_description)("the Prosper stack-persistence hardware, emulated");
	VG_(details_copyright_author)("Copyright (C) the Prosper developers.");
	VG_(details_bug_reports_to)("the Prosper issue tracker");
	VG_(details_avg_translation_sizeB)(400);
	VG_(basic_tool_funcs)(pr_post_clo_init, pr_instrument, pr_fini);
	VG_(needs_command_line_options)(pr_process_cmd_line_option, pr_print_usage, pr_print_debug_usage);
	VG_(needs_client_requests)(pr_handle_client_request);
	VG_(track_post_mem_write)(pr_post_mem_write);
	VG_(track_new_mem_mmap)(pr_new_mem_mmap);
	VG_(track_die_mem_munmap)(pr_die_mem_munmap);
	VG_(track_copy_mem_remap)(pr_copy_mem_remap);
	VG_(track_new_mem_brk)(pr_new_mem_brk);
	VG_(track_die_mem_brk)(pr_die_mem_brk);
	VG_(track_pre_thread_ll_exit)(pr_thread_exit);
}

VG_DETERMINE_INTERFACE_VERSION(pr_pre_clo_init)
