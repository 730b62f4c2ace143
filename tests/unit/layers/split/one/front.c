/* front.c -- fixture of check_layers: one half of a cycle across two directories. */
int back_fill(int x);

int front_take(int x) { return back_fill(x); }
