/* top.c -- fixture of check_layers: the same three files as cycle/, without the call back up,
 * and a call of side.c. */
int mid_step(int x);
int side_use(int x);

int top_hook(int x) { return x + 1; }

/* not top.c's to give: low.c's clamp is another (outside these files) */
static int clamp(int x) { return x < 0 ? 0 : x; }

int top_run(int x) { return clamp(mid_step(x) * 2 + side_use(x)); }
