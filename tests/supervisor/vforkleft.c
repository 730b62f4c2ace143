/* vforkleft -- a program that ends while a process it leaves behind is in the middle of a vfork:
 * the main process forks a child and exits 100 ms later; the child vforks at once, and the vforked
 * grandchild first waits (so that the supervisor's end meets its parent waiting for it in the kernel), then
 * writes a file -- a call the launch filter sends to a tracer -- and executes `cp` on it.  The
 * files it leaves: vforkleft.a (written by the grandchild) and vforkleft.b (the copy).
 * usage: vforkleft [WAIT_MS]  (default 500) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long wait_ms = argc > 1 ? atol(argv[1]) : 500;
	if (fork() != 0) {
		struct timespec ts = { 0, 100 * 1000000L }; /* the child's vfork is under way by then */
		nanosleep(&ts, NULL);
		return 0; /* the program's end, while its child goes on */
	}
	pid_t g = vfork();
	if (g == 0) {
		/* only system calls here: the parent's memory is shared until the exec */
		struct timespec ts = { wait_ms / 1000, (wait_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		int fd = open("vforkleft.a", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			(void)!write(fd, "written in a vfork\n", 19);
			close(fd);
		}
		execl("/bin/cp", "cp", "vforkleft.a", "vforkleft.b", (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(g, &st, 0);
	return 0;
}
