/* layers.h -- fixture of check_layers --order: the list it holds the files of order/ to.
 *
 *   upper.c   calls lower.c only
 *   lower.c   calls nothing
 */
