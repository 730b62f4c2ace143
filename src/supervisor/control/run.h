/* run.h -- `prosper run` (run.c) and `prosper resume` (resume.c): what each does before and after
 * the common launch in main.c.  Every function returns 0 or the exit code of a refusal already
 * printed (refusal.h). */
#ifndef PROSPER_SUP_RUN_H
#define PROSPER_SUP_RUN_H
#include "image.h"
#include "launch.h"
#include "options.h"
#include "sup.h"

/* run: create (or refuse) the pool, launch the program seized and running. */
int run_start(struct sup *s, const struct opts *o, const char *pool_path, struct child *c);
/* run, as soon as the program has exec'd: the launch record's executable (what /proc says). */
void run_exec_done(struct sup *s);
/* run, once the shim has said hello (hello_rc: hello_wait's, or -ENOEXEC with why: the
 * image cannot load the shim): tracking on -- or checkpointing off, with the reason (quietly if
 * the program has already exited). */
void run_started(struct sup *s, int hello_rc, int uffd, const char *why);

/* resume: the admission check -- pool, checkpoint, files, kernel, CPU -- before anything is
 * launched; fills *im with the committed epoch's image. */
int resume_admit(struct sup *s, const char *pool_path, struct img *im);
/* resume: relaunch the program of the launch record, seized and running. */
int resume_start(struct sup *s, const struct img *im, struct child *c);
/* resume, once the relaunched program has exec'd and the shim has said hello: rebuild it from
 * *im, track its saved mappings again, let its threads go. */
int resume_started(struct sup *s, const struct img *im, int hello_rc, const struct shim_hello *hello, int uffd,
		   double t_start);

#endif
