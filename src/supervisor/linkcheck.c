/* linkcheck.c -- the entry point of each layer's link check (CMakeLists.txt): linked with the
 * whole of one layer and the layers below it, it builds only if the layer calls nothing above. */
int main(void)
{
	return 0;
}
