/* proctasks.c -- the tasks of a process and of the system, read from /proc/PID/task (procfs.h):
 * a process's threads and their names, every task a tracer holds. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "procfs.h"

int proc_thread_comm(pid_t pid, pid_t tid, char comm[16])
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char b[32];
	ssize_t n = read(fd, b, sizeof b - 1);
	close(fd);
	if (n <= 0)
		return -1;
	if (b[n - 1] == '\n')
		n--;
	memset(comm, 0, 16);
	memcpy(comm, b, (size_t)n < 15 ? (size_t)n : 15);
	return 0;
}

int proc_threads(pid_t pid, pid_t *tids, int cap)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
	DIR *d = opendir(p);
	if (!d)
		return -1;
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		if (e->d_name[0] != '.') {
			if (n < cap)
				tids[n] = (pid_t)atoi(e->d_name);
			n++;
		}
	closedir(d);
	return n;
}

/* "Tgid:" and "TracerPid:" of a task's status; 0, or -1 if gone. */
static int task_tracer(pid_t pid, pid_t tid, pid_t *tgid, pid_t *tracer)
{
	char p[96], line[128];
	snprintf(p, sizeof p, "/proc/%d/task/%d/status", (int)pid, (int)tid);
	FILE *f = fopen(p, "re");
	if (!f)
		return -1;
	int got = 0, v;
	while (got < 2 && fgets(line, sizeof line, f)) {
		if (sscanf(line, "Tgid: %d", &v) == 1)
			*tgid = v, got++;
		else if (sscanf(line, "TracerPid: %d", &v) == 1)
			*tracer = v, got++;
	}
	fclose(f);
	return got == 2 ? 0 : -1;
}

int proc_traced_by(pid_t tracer, pid_t *tids, pid_t *tgids, int cap)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	int n = 0;
	for (struct dirent *e; (e = readdir(d));) {
		pid_t pid = (pid_t)atoi(e->d_name);
		if (pid <= 0)
			continue;
		pid_t tt[256];
		int nt = proc_threads(pid, tt, 256);
		for (int i = 0; i < nt && i < 256; i++) {
			pid_t tgid = 0, by = 0;
			if (task_tracer(pid, tt[i], &tgid, &by) != 0 || by != tracer)
				continue;
			if (n < cap)
				tids[n] = tt[i], tgids[n] = tgid;
			n++;
		}
	}
	closedir(d);
	return n;
}
