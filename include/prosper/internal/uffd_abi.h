/* uffd_abi.h -- userfaultfd and PAGEMAP_SCAN constants that Debian 12's 6.1 headers lack
 * (kernel >= 6.7 provides them; values from the kernel's uapi headers). */
#ifndef PROSPER_UFFD_ABI_H
#define PROSPER_UFFD_ABI_H
#include <errno.h>
#include <linux/ioctl.h>
#include <linux/userfaultfd.h>
#include <stdint.h>

#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
/* What the write tracker asks of a userfaultfd (UFFDIO_API): one place for the shim, the
 * supervisor's child processes and its preflight (they must agree). */
#define PROSPER_UFFD_TRACK_FEATURES (UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED)

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
/* The flags of the userfaultfd(2) call to make after `first` failed with `err`: a full
 * userfaultfd is denied to an ordinary user where vm.unprivileged_userfaultfd is 0 (the default),
 * one that handles faults of user mode only is not.  The write tracker loses nothing by it (with
 * UFFD_FEATURE_WP_ASYNC the kernel resolves write faults itself, in kernel mode too); a fill of
 * missing pages does (a fault the kernel takes on the program's behalf, a read(2) into a page not
 * there yet, is then an EFAULT or a SIGBUS): a resume fills such a process whole before it runs
 * (restore.c).  -1: no other call to try. */
static inline int prosper_uffd_retry_flags(int first, int err)
{
	return err == EPERM && !(first & UFFD_USER_MODE_ONLY) ? first | UFFD_USER_MODE_ONLY : -1;
}

struct prosper_page_region {
	uint64_t start, end, categories;
};

struct prosper_pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted,
		category_mask, category_anyof_mask, return_mask;
};

#define PROSPER_PAGEMAP_SCAN _IOWR('f', 16, struct prosper_pm_scan_arg)
#define PROSPER_PM_SCAN_WP_MATCHING (1 << 0)
#define PROSPER_PM_SCAN_CHECK_WPASYNC (1 << 1)
#define PROSPER_PAGE_IS_WPALLOWED (1 << 0)
#define PROSPER_PAGE_IS_WRITTEN (1 << 1)
#define PROSPER_PAGE_IS_FILE (1 << 2)
#define PROSPER_PAGE_IS_PRESENT (1 << 3)
#define PROSPER_PAGE_IS_SWAPPED (1 << 4)
#endif
