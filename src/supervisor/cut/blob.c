/* blob.c -- the epoch's record of a stopped process (image.h): registers of every thread, the map,
 * the mapped files' identities, the fds (each by its kind, fdkind.h), cwd, umask, the launch record. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fdkind.h"
#include "mapfollow.h"
#include "sharedmem.h"
#include "sup.h"
#include "tree_fds.h"
#include "nvm.h"

int capture_blob(struct sup *s, struct img_buf *out, int nmaps)
{
	struct img_buf strings = { 0 }, vmas = { 0 }, fds = { 0 }, files = { 0 }, threads = { 0 };
	const struct thr *main_thr = &s->thr[0];
	size_t xlen = main_thr->xlen;
	struct img_hdr h = { .magic = IMG_MAGIC, .version = IMG_VERSION, .regs = main_thr->regs,
			     .xstate_bytes = (uint32_t)xlen,
			     .tid_offset = s->tid_offset, .xcr0 = cpu_xcr0(), .cwd_str = IMG_NONE, .kernel_str = IMG_NONE,
			     .altstack = main_thr->altstack };
	int rc = 0;
	struct proc_status ps;
	if ((rc = proc_status(s->pid, &ps)) != 0)
		goto out;
	h.sigblk = main_thr->sigmask;
	for (int t = 1; t < s->nthr; t++) {
		const struct thr *th = &s->thr[t];
		struct img_thread it = { .tid = th->own ? th->own : th->tid, .sigmask = th->sigmask, .robust_head = th->robust_head,
					 .robust_len = th->robust_len, .regs = th->regs, .altstack = th->altstack,
					 .clear_tid = img_clear_tid_encode(th->clear_tid, th->regs.fs_base) };
		memcpy(it.comm, th->comm, sizeof it.comm);
		img_buf_put(&threads, &it, sizeof it);
	}
	for (int t = 1; t < s->nthr; t++)
		img_buf_put(&threads, s->thr[t].xstate, xlen);
	h.nthreads = (uint32_t)(s->nthr - 1);
	h.own_pid = (uint32_t)main_thr->own;
	h.umask = ps.umask;
	h.start_brk = ps.start_brk;
	h.arg_start = ps.arg_start, h.arg_end = ps.arg_end, h.env_start = ps.env_start, h.env_end = ps.env_end;
	memcpy(h.comm, ps.comm, sizeof h.comm);
	h.exe_str = img_str(&strings, s->exe);
	h.launch_cwd_str = img_str(&strings, s->launch_cwd);
	char p[64], cwd[VMA_PATH_MAX];
	snprintf(p, sizeof p, "/proc/%d/cwd", (int)s->pid);
	ssize_t l = readlink(p, cwd, sizeof cwd - 1);
	if (l > 0) {
		cwd[l] = 0;
		h.cwd_str = img_str(&strings, cwd);
	}
	if (kernel_release()[0])
		h.kernel_str = img_str(&strings, kernel_release());
	h.args_str = (uint32_t)strings.len;
	h.argc = (uint32_t)s->argc;
	h.envc = (uint32_t)s->envc;
	for (int i = 0; i < s->argc; i++)
		img_str(&strings, s->argv[i]);
	for (int i = 0; i < s->envc; i++)
		img_str(&strings, s->envp[i]);
	/* the map: saved mappings name their region; the rest are rebuilt */
	const struct known_file *exe = sup_known_file(s, s->exe);
	for (int i = 0; i < nmaps; i++) {
		const struct vma *v = &s->cut.now[i];
		if (sup_nvm_find(s, v->start))
			continue; /* NVM memory: the pool's region table is its record (nvm.c, N3) */
		if (vma_is_special(v) && !strcmp(v->path, "[vdso]"))
			h.vdso = v->start;
		struct img_vma iv = { .start = v->start, .end = v->end, .offset = v->offset, .region = IMG_NONE,
				      .path = v->path[0] ? img_str(&strings, v->path) : IMG_NONE };
		memcpy(iv.perms, v->perms, 4);
		if (v->seen) {
			const struct vma *sv = map_find_saved(s, v->start);
			iv.region = sv ? (uint32_t)sv->region : IMG_NONE;
		}
		/* a read-only shared file mapping is rebuilt from its file, memory only the program's
		 * processes hold is in the tree blob (sharedmem.h); a writable shared mapping of a file
		 * that exists writes to that file, which the pool does not keep */
		if (v->perms[3] == 's' && !vma_is_special(v) && (v->perms[1] == 'w' || v->path[0] != '/') &&
		    !shm_kept_mapping(v) && !s->warned_shared &&
		    !(s->tree->files.on && v->path[0] == '/')) { /* a file: kept by the file-undo journal (filetrack.h) */
			s->warned_shared = 1;
			fprintf(stderr, "prosper: warning: shared mapping %s is not persisted\n", v->path[0] ? v->path : "(anonymous)");
		}
		if (v->path[0] == '/')
			sup_known_file(s, v->path);
		img_buf_put(&vmas, &iv, sizeof iv);
	}
	h.nvmas = (uint32_t)(vmas.len / sizeof(struct img_vma));
	/* files: the executable and every file mapped now */
	h.nfiles = 0;
	for (int i = 0; i < s->nfiles; i++) {
		int mapped = &s->files[i] == exe;
		for (int j = 0; j < nmaps && !mapped; j++)
			mapped = !strcmp(s->cut.now[j].path, s->files[i].path);
		if (!mapped)
			continue;
		sup_known_file_refresh(&s->files[i]);
		h.nfiles++;
		struct img_file fi = { .path = img_str(&strings, s->files[i].path), .size = s->files[i].id.size,
				       .mtime_ns = s->files[i].id.mtime_ns, .ino = s->files[i].id.ino,
				       .dev = s->files[i].id.dev, .build_id_len = s->files[i].id.build_id_len };
		memcpy(fi.build_id, s->files[i].id.build_id, sizeof fi.build_id);
		img_buf_put(&files, &fi, sizeof fi);
	}
	int nf = 0;
	if ((rc = tree_read_fds(s, &nf)) != 0)
		goto out;
	for (int i = 0; i < nf; i++) { /* each fd recorded by its kind (fdkind.h) */
		struct img_fd e;
		if ((rc = fd_record(s, &s->cut.fds[i], &e, &strings)) != 0 || (rc = img_buf_put(&fds, &e, sizeof e) ? -ENOMEM : 0) != 0)
			goto out;
	}
	h.nfds = (uint32_t)nf;
	h.strings_bytes = (uint32_t)strings.len;
	h.total_bytes = (uint32_t)(sizeof h + xlen + threads.len + vmas.len + fds.len + files.len + strings.len);
	out->len = 0;
	if (img_buf_put(out, &h, sizeof h) || img_buf_put(out, main_thr->xstate, xlen) ||
	    img_buf_put(out, threads.p, threads.len) || img_buf_put(out, vmas.p, vmas.len) ||
	    img_buf_put(out, fds.p, fds.len) || img_buf_put(out, files.p, files.len) ||
	    img_buf_put(out, strings.p, strings.len))
		rc = -ENOMEM;
out:
	free(strings.p);
	free(vmas.p);
	free(fds.p);
	free(files.p);
	free(threads.p);
	return rc;
}
