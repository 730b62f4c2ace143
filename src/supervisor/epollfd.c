/* epollfd.c -- the program's epoll instances across a checkpoint and a resume (epollfd.h). */
#include "epollfd.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include "inject.h"

char *epoll_record(pid_t pid, int fd)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", (int)pid, fd);
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	size_t cap = 256, len = strlen(EPOLL_LINK);
	char *out = malloc(cap), line[256];
	if (!out) {
		fclose(f);
		return NULL;
	}
	memcpy(out, EPOLL_LINK, len + 1);
	while (fgets(line, sizeof line, f)) {
		int tfd;
		unsigned events;
		unsigned long long data;
		if (sscanf(line, "tfd: %d events: %x data: %llx", &tfd, &events, &data) != 3)
			continue;
		char one[64];
		int n = snprintf(one, sizeof one, " %d:%x:%llx", tfd, events, data);
		if (len + (size_t)n + 1 > cap) {
			char *bigger = realloc(out, cap * 2 + (size_t)n);
			if (!bigger) {
				free(out);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			out = bigger, cap = cap * 2 + (size_t)n;
		}
		memcpy(out + len, one, (size_t)n + 1);
		len += (size_t)n;
	}
	fclose(f);
	return out;
}

int epoll_remake(struct inject *in, const struct img_fd *f)
{
	long ep = inject_syscall(in, SYS_epoll_create1, (f->flags & O_CLOEXEC) ? EPOLL_CLOEXEC : 0, 0, 0, 0, 0, 0);
	if (ep < 0)
		return (int)ep;
	if (ep != f->fd) {
		long got = inject_syscall(in, SYS_dup3, ep, f->fd, (f->flags & O_CLOEXEC) ? O_CLOEXEC : 0, 0, 0, 0);
		inject_syscall(in, SYS_close, ep, 0, 0, 0, 0, 0);
		if (got != f->fd)
			return got < 0 ? (int)got : -EBADF;
	}
	return 0;
}

int epoll_rewatch(struct inject *in, uint64_t scratch, const struct img_fd *f, const char *record, int *left)
{
	const char *p = record + strlen(EPOLL_LINK);
	int tfd, n;
	unsigned events;
	unsigned long long data;
	while (sscanf(p, " %d:%x:%llx%n", &tfd, &events, &data, &n) == 3) {
		p += n;
		struct epoll_event ev = { .events = events, .data.u64 = data };
		int rc = inject_write(in, scratch, &ev, sizeof ev);
		if (rc)
			return rc;
		long got = inject_syscall(in, SYS_epoll_ctl, f->fd, EPOLL_CTL_ADD, tfd, (long)scratch, 0, 0);
		if (got == -EBADF)
			(*left)++; /* not back */
		else if (got < 0)
			return (int)got;
	}
	return 0;
}
