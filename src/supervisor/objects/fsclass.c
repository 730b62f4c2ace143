/* fsclass.c -- local, kernel or outside: the file systems the journal can put back (fsclass.h). */
#include "fsclass.h"
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>

static const struct {
	unsigned long type;
	enum fs_class cls;
	const char *name;
} known[] = {
	{ 0xEF53, FS_LOCAL, "ext4" },         { 0x58465342, FS_LOCAL, "xfs" },
	{ 0x9123683E, FS_LOCAL, "btrfs" },    { 0xF2F52010, FS_LOCAL, "f2fs" },
	{ 0x01021994, FS_MEMORY, "tmpfs" },   { 0x858458f6, FS_MEMORY, "ramfs" },
	{ 0x958458f6, FS_MEMORY, "hugetlbfs" }, { 0x794c7630, FS_LOCAL, "overlay" },
	{ 0x4d44, FS_LOCAL, "vfat" },         { 0x2011BAB0, FS_LOCAL, "exfat" },
	{ 0x3434, FS_LOCAL, "nilfs2" },       { 0x3153464a, FS_LOCAL, "jfs" },
	{ 0x52654973, FS_LOCAL, "reiserfs" }, { 0xca451a4e, FS_LOCAL, "bcachefs" },
	{ 0x2fc12fc1, FS_LOCAL, "zfs" },      { 0x15013346, FS_LOCAL, "udf" },
	{ 0x9fa0, FS_KERNEL, "proc" },        { 0x62656572, FS_KERNEL, "sysfs" },
	{ 0x27e0eb, FS_KERNEL, "cgroup" },    { 0x63677270, FS_KERNEL, "cgroup2" },
	{ 0x64626720, FS_KERNEL, "debugfs" }, { 0x74726163, FS_KERNEL, "tracefs" },
	{ 0x73636673, FS_KERNEL, "securityfs" }, { 0xcafe4a11, FS_KERNEL, "bpf" },
	{ 0x62656570, FS_KERNEL, "configfs" }, { 0x6165676C, FS_KERNEL, "pstore" },
	{ 0xde5e81e4, FS_KERNEL, "efivarfs" }, { 0xf97cff8c, FS_KERNEL, "selinuxfs" },
	{ 0x7655821, FS_KERNEL, "resctrl" },  { 0x1cd1, FS_KERNEL, "devpts" },
	{ 0x6969, FS_OUTSIDE, "nfs" },        { 0x517B, FS_OUTSIDE, "smb" },
	{ 0xFF534D42, FS_OUTSIDE, "cifs" },   { 0xFE534D42, FS_OUTSIDE, "smb2" },
	{ 0x01021997, FS_OUTSIDE, "9p" },     { 0x6a656a63, FS_OUTSIDE, "virtiofs" },
	{ 0x00c36400, FS_OUTSIDE, "ceph" },   { 0x65735546, FS_OUTSIDE, "fuse" },
	{ 0x5346414F, FS_OUTSIDE, "afs" },    { 0x6B414653, FS_OUTSIDE, "afs" },
	{ 0x7461636f, FS_OUTSIDE, "ocfs2" },  { 0x01161970, FS_OUTSIDE, "gfs2" },
	{ 0x0BD00BD0, FS_OUTSIDE, "lustre" }, { 0x47504653, FS_OUTSIDE, "gpfs" },
	{ 0x73757245, FS_OUTSIDE, "coda" },
};

enum fs_class fsclass_type(unsigned long f_type, char *name, size_t namelen)
{
	f_type &= 0xffffffffu; /* f_type is a signed word on some ABIs: compare the 32 bits */
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (known[i].type == f_type) {
			snprintf(name, namelen, "%s", known[i].name);
			return known[i].cls;
		}
	snprintf(name, namelen, "file system type 0x%lx", f_type);
	return FS_OUTSIDE;
}

enum fs_class fsclass_of(const char *path, char *name, size_t namelen)
{
	struct statfs s;
	if (statfs(path, &s) != 0) {
		/* not there (yet): the directory it is to be made in */
		char dir[PATH_MAX];
		snprintf(dir, sizeof dir, "%s", path);
		char *slash = strrchr(dir, '/');
		if (slash == dir)
			slash[1] = 0;
		else if (slash)
			*slash = 0;
		if (!slash || statfs(dir, &s) != 0) {
			snprintf(name, namelen, "unknown");
			return FS_LOCAL; /* the call fails (no such directory): nothing changes */
		}
	}
	return fsclass_type((unsigned long)s.f_type, name, namelen);
}

/* Devices seen, and their class: a device is one file system for as long as it is mounted (an
 * unmount and another mount on the same device number while the program runs is not followed). */
static struct {
	dev_t dev;
	enum fs_class cls;
	char name[40];
} seen[32];
static int nseen;

enum fs_class fsclass_of_stat(const char *path, const struct stat *st, char *name, size_t namelen)
{
	for (int i = 0; i < nseen; i++)
		if (seen[i].dev == st->st_dev) {
			snprintf(name, namelen, "%s", seen[i].name);
			return seen[i].cls;
		}
	enum fs_class c = fsclass_of(path, name, namelen);
	if (nseen < (int)(sizeof seen / sizeof seen[0])) {
		seen[nseen].dev = st->st_dev, seen[nseen].cls = c;
		snprintf(seen[nseen].name, sizeof seen[nseen].name, "%s", name);
		nseen++;
	}
	return c;
}
