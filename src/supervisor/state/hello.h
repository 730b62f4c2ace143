/* hello.h -- an image's shim's hello taken into its supervised process (hello.c). */
#ifndef PROSPER_SUP_HELLO_H
#define PROSPER_SUP_HELLO_H
#include "sup.h"

/* The addresses an image's shim said hello with (gate, records, scratch), its records empty. */
void sup_take_hello(struct sup *s, const struct shim_hello *hello);

#endif
