/* procmem.c -- a process's memory read and written from the supervisor (procfs.h):
 * process_vm_readv/writev, which the mappings' protections govern. */
#include <errno.h>
#include <stddef.h>
#include <sys/uio.h>
#include <unistd.h>
#include "procfs.h"

/* The kernel takes at most IOV_MAX pairs per call. */
#define MEM_IOV_MAX 1024

static int mem_rw(pid_t pid, struct iovec *local, struct iovec *remote, size_t n, uint64_t *bad, int write)
{
	size_t i = 0;
	while (i < n && !remote[i].iov_len)
		i++;
	while (i < n) {
		size_t k = n - i < MEM_IOV_MAX ? n - i : MEM_IOV_MAX;
		ssize_t got = write ? process_vm_writev(pid, local + i, k, remote + i, k, 0)
				    : process_vm_readv(pid, local + i, k, remote + i, k, 0);
		if (got <= 0) {
			if (bad)
				*bad = (uint64_t)(uintptr_t)remote[i].iov_base;
			return -EIO;
		}
		/* a partial transfer: the pairs moved whole are done, the one cut short goes on */
		for (size_t left = (size_t)got; i < n && left;) {
			size_t m = remote[i].iov_len < left ? remote[i].iov_len : left;
			local[i].iov_base = (char *)local[i].iov_base + m, local[i].iov_len -= m;
			remote[i].iov_base = (char *)remote[i].iov_base + m, remote[i].iov_len -= m;
			left -= m;
			if (!remote[i].iov_len)
				i++;
		}
		while (i < n && !remote[i].iov_len)
			i++;
	}
	return 0;
}

int proc_mem_readv(pid_t pid, struct iovec *local, struct iovec *remote, size_t n, uint64_t *bad)
{
	return mem_rw(pid, local, remote, n, bad, 0);
}

int proc_mem_writev(pid_t pid, struct iovec *local, struct iovec *remote, size_t n, uint64_t *bad)
{
	return mem_rw(pid, local, remote, n, bad, 1);
}

int proc_mem_read(pid_t pid, uint64_t addr, void *to, size_t n)
{
	struct iovec l = { to, n }, r = { (void *)(uintptr_t)addr, n };
	return mem_rw(pid, &l, &r, 1, NULL, 0);
}

int proc_mem_write(pid_t pid, uint64_t addr, const void *from, size_t n)
{
	struct iovec l = { (void *)from, n }, r = { (void *)(uintptr_t)addr, n };
	return mem_rw(pid, &l, &r, 1, NULL, 1);
}

/* The fields of /proc/PID/stat after the command name (which may hold spaces and parentheses):
 * " state ppid pgrp session tty_nr tpgid ...", or NULL. */
