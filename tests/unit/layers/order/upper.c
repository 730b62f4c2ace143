/* upper.c -- fixture of check_layers: above lower.c in layers.h, and calls it. */
int lower_base(int x);

int upper_use(int x) { return lower_base(x) + 1; }
