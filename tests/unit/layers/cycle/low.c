/* low.c -- fixture of check_layers: calls back up to top.c, which closes the cycle. */
int top_hook(int x);

int low_work(int x)
{
	if (x > 3)
		return top_hook(x);
	return x;
}
