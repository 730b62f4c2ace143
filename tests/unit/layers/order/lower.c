/* lower.c -- fixture of check_layers: below upper.c in layers.h. */
int lower_base(int x) { return x; }
