/* layers_upside_down.h -- fixture of check_layers --order: the same files listed the wrong way up.
 *
 *   lower.c
 *   upper.c
 */
