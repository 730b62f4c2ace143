/* precopy.h -- the pre-copy pass of --copy precopy (precopy.c; stage.h says what it reads and why).
 *
 * Above both halves it drives: the map followed (sup_adopt_new_maps, capture.c) and the batch
 * (stage.h), which therefore never call it.
 */
#ifndef PROSPER_SUP_PRECOPY_H
#define PROSPER_SUP_PRECOPY_H
#include "sup.h"

/* The pre-copy pass (--copy precopy) over one stopped-or-running process; a no-op when the
 * batch is already pre-copied for the coming cut or nothing can be pre-copied. */
int stage_precopy(struct sup *s);

#endif
