/* side.c -- fixture of check_layers: its own static top_hook, which its calls mean (file-local). */
static int top_hook(int x) { return x - 1; }

int side_use(int x) { return top_hook(x); }
