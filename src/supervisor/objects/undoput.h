/* undoput.h -- one record of the file-undo journal put back (undolog.h; the resume that applies
 * them newest first, fileundo.c).
 *
 * A record is written before its change is let run, so it may name a change that never ran: the
 * program (with the supervisor) was killed at the call's stop, after the record and before the
 * call, or the call failed (rename across file systems, EXDEV; RENAME_NOREPLACE over a name,
 * EEXIST).  And a resume killed between undoing a record and noting it undoes it again.
 *
 * Invariants
 *   - Put back in the journal's reverse order, each record leaves the file system as it was just
 *     before its change -- whether that change ran or not, and if put back twice in a row.
 *   - A rename is moved back only if it took effect: its source name is gone (every later
 *     record, put back before it, has already taken away whatever was made under that name
 *     since).  A source name still there is a rename that never ran, failed, or was moved back
 *     already; moving the destination onto it would destroy the file the program holds there.
 */
#ifndef PROSPER_SUP_UNDOPUT_H
#define PROSPER_SUP_UNDOPUT_H
#include "undolog.h"

/* Put e back.  0, or -1 with errno. */
int undoput_record(const struct undo_entry *e);

#endif
