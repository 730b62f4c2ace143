/* fileundo.h -- a resume puts the program's files back as they were at its checkpoint, from the
 * file-undo journal (undolog.h, written by filetrack.h), or refuses (fileundo.c).
 *
 * Invariants
 *   - First every record is judged, nothing touched: a change that could not be undone
 *     (file-not-undoable), a file open at the cut changed by no change of the program's
 *     (file-changed-outside), a checkpoint whose run did not see its file changes
 *     (files-untracked), a damaged journal (pool-corrupt) -- each a refusal naming the file.
 *   - Then the records are undone (undoput.h), newest first, each noted as undone (undo_progress)
 *     before the next: a resume killed here goes on after the last one noted, never undoing again
 *     a record whose files later records have changed since.
 *   - Only then is the journal restarted at the resumed cut (filetrack_start): the records it
 *     undid are dropped, those of older cuts kept while a power cut could still need them.
 */
#ifndef PROSPER_SUP_FILEUNDO_H
#define PROSPER_SUP_FILEUNDO_H
#include <stddef.h>
#include "refusal.h"
#include "sup.h"

/* The committed epoch of t->pool is the checkpoint resumed: judge and undo its journal in
 * pool_path's folder, then restart it.  0, or the refusal with why. */
enum refusal fileundo_resume(struct tree *t, const char *pool_path, char *why, size_t whylen);

#endif
