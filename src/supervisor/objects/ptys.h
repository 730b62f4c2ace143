/* ptys.h -- pseudo-terminals the program made for itself (ptys.c; fd_pty.c keeps their fds).
 *
 * A program that opens /dev/ptmx holds a pseudo-terminal's master; its slave (/dev/pts/N) is
 * usually given to a child as its stdout (Open MPI's mpirun gives one to each rank, `script` and
 * `expect` run a shell on one).  Such a terminal is the program's own: a resume makes a new one
 * (another N: the kernel chooses) with the slave's settings (termios, window size, lock, packet
 * mode), and every fd that held the master or the slave holds the new one's.  A slave whose
 * master the program does not hold is the outside world's terminal and not one of these.
 *
 * At a cut, every process stopped, the bytes the slave's writers wrote and the master's reader
 * has not read yet are kept: read out of the master (from a copy of its fd) and written back
 * into the slave at once, output processing off for that write (OPOST: the bytes were processed
 * once already), so that the program, stopped, sees the same queue; a resume writes them into
 * the new slave the same way.
 *
 * Not kept (the master's record says why, and a resume is refused: fd-unsupported): a terminal
 * whose master is in packet mode while bytes wait at it (the packets' status bytes are not
 * read back), one whose slave holds input the program has not read (bytes written into the
 * master: a line not ended yet is out of sight, so none is put back), one that is the
 * controlling terminal of a process of the program (a session would have to be given it back).
 * A cut waits (-EAGAIN) while more than PTY_DATA_MAX bytes wait at a master.
 *
 * Invariants
 *   - What the program sees of a terminal after a cut is what it saw before: the bytes read out
 *     of a master are all written back before the cut ends (or the cut fails loudly), in order;
 *     the slave's termios and file flags the cut changes for that are set back.
 *   - A master whose slave the program does not hold is not read (its bytes are kept only
 *     with a slave to write them back through): with bytes waiting, it is not kept.
 */
#ifndef PROSPER_SUP_PTYS_H
#define PROSPER_SUP_PTYS_H
#include <stdint.h>
#include <sys/types.h>

struct tree;

#define PTY_DATA_MAX 16384

/* The termios of a terminal as the kernel's TCGETS and TCSETS carry it (struct termios of
 * <asm/termbits.h>: glibc's is another). */
struct pty_termios {
	uint32_t iflag, oflag, cflag, lflag;
	uint8_t line;
	uint8_t cc[19];
};

struct pty_winsize {
	uint16_t rows, cols, xpixel, ypixel;
};

/* A pseudo-terminal whose master the program holds, at this cut. */
struct pty_cut {
	int index;                 /* N of /dev/pts/N */
	pid_t master_pid;          /* a process that holds its master, and at which fd */
	int master_fd;
	pid_t slave_pid;           /* one that holds its slave (0: none) */
	int slave_fd;
	int locked, packet;        /* TIOCGPTLCK, TIOCGPKT */
	struct pty_termios tio;
	struct pty_winsize ws;
	uint8_t *data;             /* bytes waiting at the master (malloc'd), len of them */
	uint32_t len;
	int unkept;                /* enum pty_unkept */
};

/* Why a terminal is not kept (its record keeps the number; pty_unkept_why the words). */
enum pty_unkept { PTY_KEPT = 0, PTY_CTTY, PTY_INPUT, PTY_PACKET, PTY_NO_SLAVE, PTY_UNREAD, PTY_NUNKEPT };
const char *pty_unkept_why(int unkept);

/* Find the program's pseudo-terminals now (the program stopped) into t->cut.ptys: 0, -EAGAIN
 * (more than PTY_DATA_MAX bytes wait at a master: the cut waits), or -errno. */
int ptys_scan(struct tree *t);
/* t->cut.ptys let go (the supervisor leaves its own to its exit; a test frees them). */
void ptys_release(struct tree *t);
/* The terminal of this cut whose master or slave process pid holds at fd (path: the fd's link
 * text), or NULL: *master says which end. */
const struct pty_cut *ptys_of_fd(const struct tree *t, pid_t pid, int fd, const char *path, int *master);
/* Is path the link text of a pseudo-terminal master ("/dev/ptmx", "/dev/pts/ptmx")? */
int pty_is_master_path(const char *path);
/* N of a slave's link text "/dev/pts/N", or -1. */
int pty_slave_index(const char *path);

#endif
