/* top.c -- fixture of check_layers: the top of a three-file cycle. */
int mid_step(int x);

int top_hook(int x) { return x + 1; }

int top_run(int x) { return mid_step(x) * 2; }
