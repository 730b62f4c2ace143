/* mid.c -- fixture of check_layers: the middle of three layers. */
int low_work(int x);

int mid_step(int x)
{
	return low_work(x) - 1;
}
