/* low.c -- fixture of check_layers: names top_hook( in every way that is not a call of top.c's
 * top_hook, each of which a tokenizer that is not careful would take for one. */
#define NAME "top_hook("
#define top_hook_twice(x) ((x) + (x))
#define STATIC_HOOK(x) low_only(x)

int top_hook(int x); /* a declaration, not a call: top_hook(x) */
int clamp(int x);    /* defined outside these files: top.c's static clamp is not it */

struct ops {
	int (*top_hook)(int);
};

static int low_only(int x) { return x; }

int low_work(int x, const struct ops *ops, struct ops o)
{
	const char *s = "top_hook(x)";
	char c = '(';
	/* top_hook(x) in a comment */
	// top_hook(x) in a line comment
	x += ops->top_hook(x) + o.top_hook(x);
	x += top_hook_twice(x);
	x += STATIC_HOOK(x);
	return clamp(x + (int)sizeof s + c);
}
