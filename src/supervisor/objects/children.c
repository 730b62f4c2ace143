/* children.c -- the program's child processes (children.h). */
#include "children.h"
#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void children_add(struct sup *s, pid_t child)
{
	if (s->nchildren == s->children_cap) {
		int cap = s->children_cap ? 2 * s->children_cap : 16;
		pid_t *p = realloc(s->children, (size_t)cap * sizeof *p);
		if (!p) {
			s->children_lost = 1;
			return;
		}
		s->children = p, s->children_cap = cap;
	}
	s->children[s->nchildren++] = child;
}

/* Is pid a child of parent now (a zombie keeps its parent)? */
static int is_child_of(pid_t pid, pid_t parent) { return proc_parent(pid) == parent; }

/* Any child listed by the kernel under one of the program's threads (CONFIG_PROC_CHILDREN)? */
static int kernel_lists_children(pid_t pid)
{
	int cap = proc_threads(pid, NULL, 0) + 16; /* a few more may start meanwhile */
	pid_t *tids = cap > 16 ? malloc((size_t)cap * sizeof *tids) : NULL;
	int n = tids ? proc_threads(pid, tids, cap) : 0, any = 0;
	for (int i = 0; i < n && i < cap && !any; i++) {
		char c[96];
		snprintf(c, sizeof c, "/proc/%d/task/%d/children", (int)pid, (int)tids[i]);
		FILE *f = fopen(c, "re");
		if (f) {
			any = fgetc(f) != EOF;
			fclose(f);
		}
	}
	free(tids);
	return any;
}

int children_any(struct sup *s)
{
	for (int i = 0; i < s->nchildren; i++)
		if (!is_child_of(s->children[i], s->pid))
			s->children[i--] = s->children[--s->nchildren];
	if (s->children_lost && !s->nchildren && !kernel_lists_children(s->pid))
		s->children_lost = 0;
	return s->nchildren > 0 || s->children_lost;
}

/* The link text of fd in /proc/PID/fd ("pipe:[123]"); 0 or -1. */
static int fd_link(pid_t pid, const char *fd, char *out, size_t cap)
{
	char p[300];
	snprintf(p, sizeof p, "/proc/%d/fd/%s", (int)pid, fd);
	ssize_t n = readlink(p, out, cap - 1);
	if (n <= 0)
		return -1;
	out[n] = 0;
	return 0;
}

void children_note_inherited_pipes(struct sup *s)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d)) && s->tree->run.ninherited < MAX_INHERITED_PIPES;) {
		char link[64];
		int fd = atoi(e->d_name);
		if (e->d_name[0] == '.' || fd == dirfd(d) || fcntl(fd, F_GETFD) != 0 ||
		    fd_link(getpid(), e->d_name, link, sizeof link) != 0 || strncmp(link, "pipe:", 5))
			continue;
		snprintf(s->tree->run.inherited_pipes[s->tree->run.ninherited++], sizeof s->tree->run.inherited_pipes[0], "%s", link);
	}
	closedir(d);
}

int children_pipe_is_own(const struct sup *s, const char *link)
{
	if (strncmp(link, "pipe:", 5))
		return 0;
	for (int i = 0; i < s->tree->run.ninherited; i++)
		if (!strcmp(s->tree->run.inherited_pipes[i], link))
			return 0;
	return 1;
}

/* Bytes waiting in the pipe behind the program's fd (opened again through /proc: the program
 * is stopped, and the open adds nothing it could see). */
static int pipe_bytes(pid_t pid, const char *fd)
{
	char p[300];
	snprintf(p, sizeof p, "/proc/%d/fd/%s", (int)pid, fd);
	int f = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (f < 0)
		return 0;
	int n = 0;
	if (ioctl(f, FIONREAD, &n) != 0)
		n = 0;
	close(f);
	return n;
}

int children_pipe_in_flight(struct sup *s)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/fd", (int)s->pid);
	DIR *d = opendir(p);
	if (!d)
		return -1;
	int found = -1;
	for (struct dirent *e; (e = readdir(d));) {
		char link[64];
		int fd = atoi(e->d_name);
		if (e->d_name[0] == '.' || fd < 3 || (found >= 0 && fd > found) ||
		    fd_link(s->pid, e->d_name, link, sizeof link) != 0 || !children_pipe_is_own(s, link))
			continue;
		if (pipe_bytes(s->pid, e->d_name) > 0)
			found = fd;
	}
	closedir(d);
	return found;
}
