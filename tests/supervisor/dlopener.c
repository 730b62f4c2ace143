/* dlopener -- loads and unloads a library with a slow constructor (slowinit) ROUNDS times and
 * prints what it computed each time: most of its run is spent inside dlopen(), holding the
 * loader's recursive lock.
 *
 * usage: dlopener LIBRARY ROUNDS */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	if (argc != 3 || atoi(argv[2]) < 1) {
		fprintf(stderr, "usage: dlopener LIBRARY ROUNDS\n");
		return 2;
	}
	for (int r = 0; r < atoi(argv[2]); r++) {
		void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
		uint64_t (*value)(void) = h ? (uint64_t (*)(void))dlsym(h, "slowinit_value") : NULL;
		if (!value) {
			fprintf(stderr, "dlopener: %s\n", dlerror());
			return 1;
		}
		printf("round %d: %016llx\n", r, (unsigned long long)value());
		fflush(stdout);
		dlclose(h);
	}
	return 0;
}
