/* filer -- a program for resume tests that leans on what lives outside memory: it reads an input
 * file in pieces (fd offset), writes a transformed copy to a file it creates by relative path (cwd,
 * fd offset, truncation of output written after the last checkpoint), prints progress to stdout,
 * sleeps between pieces (an interrupted system call must be restarted), and counts signals in a
 * handler it installed (the handler must survive a resume).  Prints a checksum at the end.
 * usage: filer INPUT [CHUNK] */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t handled;
static void on_usr1(int sig) { (void)sig, handled++; }

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: filer INPUT [CHUNK]\n");
		return 2;
	}
	size_t chunk = argc > 2 ? (size_t)atol(argv[2]) : 4096;
	int in = open(argv[1], O_RDONLY);
	int out = open("out.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || out < 0) {
		perror("filer: open");
		return 1;
	}
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigaction(SIGUSR1, &sa, NULL);
	unsigned char *buf = malloc(chunk);
	uint64_t h = 1469598103934665603ull, pieces = 0;
	ssize_t n;
	while ((n = read(in, buf, chunk)) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			h = (h ^ buf[i]) * 1099511628211ull;
			buf[i] = (unsigned char)(buf[i] ^ (h >> 56));
		}
		if (write(out, buf, (size_t)n) != n) {
			perror("filer: write");
			return 1;
		}
		if (++pieces % 64 == 0) {
			printf("piece %llu hash %016llx\n", (unsigned long long)pieces, (unsigned long long)h);
			fflush(stdout);
			raise(SIGUSR1);
		}
		struct timespec ts = { 0, 200000 };
		nanosleep(&ts, NULL);
	}
	printf("pieces %llu signals %d checksum 0x%016llx\n", (unsigned long long)pieces, (int)handled,
	       (unsigned long long)h);
	return 0;
}
