/* test_procfs -- the /proc readers follow a process across an exec: the maps file stays open
 * between stops (procfs.c), and one opened before an exec shows the old memory map, which reads
 * empty.  A checkpoint taken from that empty read once committed an image with no memory at all
 * (its resume was refused: "the preloaded libraries differ").  Also: a process that is gone has
 * no map: an error, never an empty one. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "procfs.h"

#define MAX 4096

static int failures;

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "FAIL %s\n", what);
		failures++;
	}
}

/* does the map hold a mapping of a file whose name ends in `name`? */
static int maps_file(const struct vma *v, int n, const char *name)
{
	size_t k = strlen(name);
	for (int i = 0; i < n; i++) {
		size_t l = strlen(v[i].path);
		if (l >= k && !strcmp(v[i].path + l - k, name))
			return 1;
	}
	return 0;
}

static int exe_is(pid_t pid, const char *name)
{
	char p[64], buf[256];
	snprintf(p, sizeof p, "/proc/%d/exe", (int)pid);
	ssize_t l = readlink(p, buf, sizeof buf - 1);
	if (l <= 0)
		return 0;
	buf[l] = 0;
	size_t k = strlen(name);
	return (size_t)l >= k && !strcmp(buf + l - k, name);
}

int main(void)
{
	static struct vma v[MAX];
	pid_t child = fork();
	if (child == 0) {
		raise(SIGSTOP);
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	int st, n = 0;
	waitpid(child, &st, WUNTRACED);
	check(proc_maps(child, v, MAX, &n) == 0 && n > 0, "the map before the exec");
	check(!maps_file(v, n, "/sleep"), "sleep is not mapped before its exec");
	kill(child, SIGCONT);
	for (int i = 0; i < 500 && !exe_is(child, "/sleep"); i++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	nanosleep(&(struct timespec){ 0, 50000000 }, NULL); /* past the exec's own mapping of the image */
	n = 0;
	int rc = proc_maps(child, v, MAX, &n);
	check(rc == 0 && n > 0, "the map after the exec is read, not the old empty one");
	check(maps_file(v, n, "/sleep"), "the map after the exec is the new image's");
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
	n = 0;
	check(proc_maps(child, v, MAX, &n) < 0, "a process that is gone has no map: an error, not an empty one");
	if (failures)
		return 1;
	printf("procfs: ok\n");
	return 0;
}
