"""Servers killed and resumed while their clients go on (docs/run-resume.md "Sockets of the
network"): the scenarios shared by the e2e tests (tests/e2e/test_services.py, a few kills, with
assertions) and bench/scripts/services.py (the issue's numbers of kills, results kept).

Each scenario starts a real server under `prosper run`, drives it from clients outside the
program that reconnect as after a server restart, kills the supervisor's whole process group with
SIGKILL at random instants and resumes it with `prosper resume`, and returns what it saw as a dict
(its `ok` says whether every guarantee held; `failures` lists what did not)."""
import os
import random
import signal
import socket
import subprocess
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROSPER = os.path.join(ROOT, "bin", "prosper")


# What a kill may undo: a checkpoint is cut an interval (10 ms) after the last one's stop, and
# holds what was done before its cut once it commits -- so an acknowledged write is safe once an
# interval, a stop and a commit have passed: 10-15 ms mostly, up to 65 ms measured (a threaded
# Python server, a Go server: bench/results/services.md), and over 104 ms once for the threaded
# server during a clean-clone CI run (2 cores busy with the tests).  The scenarios assert a bound
# with room for such a loaded machine -- a resume from a much older state still fails it -- and
# report the age of the oldest acknowledged write a kill undid (`lost_oldest_ms`).
BOUND_MS = 250


def free_port(family=socket.AF_INET):
    """A free port below the kernel's ephemeral range, as servers use: one the kernel hands out to
    a connection (bind to port 0) can be taken by another connection between a kill and the
    resume (docs/limitations.md)."""
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    host = "::1" if family == socket.AF_INET6 else "127.0.0.1"
    for port in random.sample(range(max(1024, low - 10000), low), 200):
        s = socket.socket(family)
        try:
            s.bind((host, port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise AssertionError("no free port below the ephemeral range")


class Supervised:
    """A program under `prosper run`, killed with its process group and resumed, its stdout and
    stderr appended to files in `d`."""

    def __init__(self, d, pool, argv, env=None, extra=()):
        self.d, self.pool, self.env, self.extra = d, pool, env, list(extra)
        self.out = open(os.path.join(d, "server.out"), "ab")
        self.err = open(os.path.join(d, "server.err"), "ab")
        self.p = self._start([PROSPER, "run", *self.extra, "--pool", pool, "--", *argv])
        self.kills = 0

    def _start(self, argv):
        return subprocess.Popen(argv, stdout=self.out, stderr=self.err, cwd=self.d, env=self.env,
                                start_new_session=True)

    def kill(self):
        """SIGKILL to the whole group: the supervisor, the program, everything.  The instant
        (time.monotonic) just before it."""
        assert self.p.poll() is None, "the supervised server ended before its kill: " + self.stderr()
        t = time.monotonic()
        os.killpg(self.p.pid, signal.SIGKILL)
        self.p.wait()
        self.dead_at = time.monotonic()  # the supervisor reaped: nothing of the old run serves
        self.kills += 1
        return t

    def resume(self):
        self.p = self._start([PROSPER, "resume", *self.extra, "--pool", self.pool])

    def stop(self, timeout=60):
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.p.wait(timeout)
        self.out.close()
        self.err.close()

    def stderr(self):
        with open(os.path.join(self.d, "server.err"), "rb") as f:
            return f.read().decode(errors="replace")[-2000:]


def connect(port, deadline, family=socket.AF_INET):
    """A connection to the server, retried while it is not listening (being resumed)."""
    host = "::1" if family == socket.AF_INET6 else "127.0.0.1"
    while True:
        c = socket.socket(family)
        c.settimeout(10)
        try:
            c.connect((host, port))
            return c
        except (ConnectionRefusedError, ConnectionResetError):
            c.close()
        if time.monotonic() > deadline:
            raise AssertionError(f"nothing listens on port {port}")
        time.sleep(0.01)


# ------------------------------------------------------------------------------------------ Redis

class Resp:
    """A Redis connection speaking its protocol (RESP): commands out, replies in."""

    def __init__(self, sock):
        self.s, self.buf = sock, b""

    def _line(self):
        while b"\r\n" not in self.buf:
            got = self.s.recv(65536)
            if not got:
                raise ConnectionResetError("the server closed the connection")
            self.buf += got
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _bulk(self, n):
        while len(self.buf) < n + 2:
            got = self.s.recv(65536)
            if not got:
                raise ConnectionResetError("the server closed the connection")
            self.buf += got
        v, self.buf = self.buf[:n], self.buf[n + 2:]
        return v

    def reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b":"):
            return rest
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._bulk(n)
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        raise RuntimeError(f"not a reply: {line!r}")

    def send(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)

    def call(self, *args):
        self.send(*args)
        return self.reply()


def redis_across_kills(d, pool_dir, kills, bound_ms=0, seed=1, extra=()):
    """redis-server (persistence off) under prosper run; a client sets keys k1, k2, ... one after
    the other, reconnecting after each kill; the server is killed at random instants (20-300 ms
    apart) and resumed.  With its output held until committed (the default, bound_ms=0), every
    key whose reply reached the client must hold its value after each resume, whatever the instant
    of the kill.  With --external-sync off (extra=["--external-sync", "off"]), every key whose reply
    arrived at least bound_ms before the kill must (BOUND_MS); one acknowledged later may be gone
    (the age of the oldest such is reported: `lost_oldest_ms`), and so may one whose reply reached
    the client just after the kill instant, sent by the dying server.  A connection opened after
    the kill is the resumed server's, and every key it acknowledged must be there at the end."""
    rng = random.Random(seed)
    port = free_port()
    srv = Supervised(d, os.path.join(pool_dir, "redis.prosper"),
                     ["/usr/bin/redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                      "--appendonly", "no", "--daemonize", "no", "--dir", d], extra=extra)
    bound = bound_ms / 1000
    acked = []                 # (key number, monotonic time its reply arrived, time its connection was opened)
    stop = threading.Event()
    errors, failures = [], []

    def writer():
        n, r, opened = 0, None, 0.0
        while not stop.is_set():
            try:
                if r is None:
                    opened = time.monotonic()
                    r = Resp(connect(port, opened + 60))
                n += 1  # a SET cut by a kill is not retried: its key's fate is unknown, never checked
                if r.call("SET", "k%d" % n, "v%d" % n) != b"OK":
                    errors.append("SET k%d not OK" % n)
                acked.append((n, time.monotonic(), opened))
            except OSError:  # the server was killed (reset, closed, timed out): reconnect, go on
                r = None
            except Exception as e:  # noqa: BLE001  (a wrong reply, or nothing listens: fails)
                errors.append(repr(e))
                break

    def values(reader, keys):
        out = []
        for lo in range(0, len(keys), 2000):
            out += reader.call("MGET", *["k%d" % n for n in keys[lo:lo + 2000]])
        return out

    w = threading.Thread(target=writer, daemon=True)
    lost, lost_oldest, checked, dbsize, killed_at = set(), 0.0, 0, None, 0.0
    t0 = time.monotonic()
    try:
        reader = Resp(connect(port, time.monotonic() + 60))
        reader.call("PING")
        w.start()
        for k in range(kills):
            time.sleep(rng.uniform(0.02, 0.3))
            killed_at = srv.kill()
            srv.resume()
            # a client connecting at once may reach the dying server's listener and be reset
            for attempt in range(50):
                try:
                    reader = Resp(connect(port, time.monotonic() + 60))
                    reader.call("PING")
                    break
                except ConnectionResetError:
                    time.sleep(0.01)
            seen = list(acked)
            # held output (bound 0): every reply the client got, even one that arrived after the
            # kill instant, was sent only once its checkpoint had committed
            must = [n for n, t, _ in seen if (not bound or t <= killed_at - bound) and n not in lost]
            # (a key an earlier kill undid is not this one's: it would count that loss again, older)
            at_risk = [(n, t) for n, t, opened in seen if bound and t > killed_at - bound and opened < killed_at and n not in lost]
            gone = [n for n, v in zip(must, values(reader, must)) if v != b"v%d" % n]
            checked += len(must)
            if gone:
                times = {n: t for n, t, _ in seen}
                failures.append(f"kill {k + 1}: {len(gone)} keys acknowledged {bound_ms} ms or more before it "
                                f"are gone, k{gone[0]} ({1000 * (killed_at - times[gone[0]]):.1f} ms before) .. "
                                f"k{gone[-1]} ({1000 * (killed_at - times[gone[-1]]):.1f} ms before)")
                break
            for (n, t), v in zip(at_risk, values(reader, [n for n, _ in at_risk])):
                if v is None:
                    lost.add(n)
                    lost_oldest = max(lost_oldest, 1000 * (killed_at - t))
        time.sleep(0.2)
        stop.set()
        w.join(30)
        # the resumed server's own: acknowledged on connections opened after the last kill
        last = [n for n, _, opened in acked if opened > killed_at]
        failures += [f"k{n}, acknowledged by the resumed server, is {v!r}" for n, v in zip(last, values(reader, last))
                     if v != b"v%d" % n][:5]
        dbsize = int(reader.call("DBSIZE"))
    finally:
        stop.set()
        srv.stop()
    failures += errors
    if len(acked) < kills * 10:
        failures.append(f"only {len(acked)} keys acknowledged across {kills} kills: clients were not served")
    return {"case": "redis", "kills": srv.kills, "keys_acknowledged": len(acked), "keys_checked": checked,
            "acknowledged_late_lost": len(lost), "lost_oldest_ms": round(lost_oldest, 1), "bound_ms": bound_ms, "dbsize_at_end": dbsize,
            "seconds": round(time.monotonic() - t0, 1), "ok": not failures, "failures": failures[:10]}


# -------------------------------------------------------------- a counter in a server's memory

COUNTER_THREADING = r"""
import socketserver, sys, threading
count, lock = 0, threading.Lock()
class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        global count
        for line in self.rfile:
            with lock:
                count += 1
                n = count
            self.wfile.write(b"%d\n" % n)
socketserver.ThreadingTCPServer.allow_reuse_address = True
socketserver.ThreadingTCPServer.daemon_threads = True
socketserver.ThreadingTCPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""

COUNTER_ASYNCIO = r"""
import asyncio, sys
count = 0
async def handle(reader, writer):
    global count
    try:
        while await reader.readline():
            count += 1
            writer.write(b"%d\n" % count)
            await writer.drain()
    except ConnectionError:
        pass
    writer.close()
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]), reuse_address=True)
    await server.serve_forever()
asyncio.run(main())
"""


class LineCounter:
    """A client of a counter server speaking lines: "inc" out, the new count back."""

    def __init__(self, sock):
        self.f = sock.makefile("rwb")

    def inc(self):
        self.f.write(b"inc\n")
        self.f.flush()
        line = self.f.readline()
        if not line:
            raise ConnectionResetError("closed")
        return int(line)


class HttpCounter:
    """A client of a counter server over HTTP/1.1 with keep-alive: GET /inc, the new count back."""

    def __init__(self, sock):
        self.s, self.buf = sock, b""

    def inc(self):
        self.s.sendall(b"GET /inc HTTP/1.1\r\nHost: localhost\r\n\r\n")
        while b"\r\n\r\n" not in self.buf:
            got = self.s.recv(4096)
            if not got:
                raise ConnectionResetError("closed")
            self.buf += got
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        length = int([h.split(b":")[1] for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")][0])
        while len(self.buf) < length:
            got = self.s.recv(4096)
            if not got:
                raise ConnectionResetError("closed")
            self.buf += got
        body, self.buf = self.buf[:length], self.buf[length:]
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(head.split(b"\r\n")[0].decode())
        return int(body)


def counter_across_kills(d, pool_dir, kills, argv, client, name, clients=2, bound_ms=BOUND_MS, seed=1,
                         outside=None):
    """A server keeping a counter in memory (argv, its port appended), served by `clients`
    threads that each hold a connection and increment, reconnecting after each kill; killed at
    random instants and resumed.  After each resume a new connection's increment must continue
    the state: above every count acknowledged two intervals before the kill, at most what was
    reached plus the increments in flight (`lost_oldest_ms`: the age at the kill of the oldest
    acknowledged increment a kill undid).  No EBADF anywhere in the server's stderr.
    outside: argv of one more client process, run (port appended) across all the kills, which
    must end with status 0."""
    rng = random.Random(seed)
    port = free_port()
    srv = Supervised(d, os.path.join(pool_dir, name + ".prosper"), [*argv, str(port)])
    bound, lost_oldest, late_lost = bound_ms / 1000, 0.0, 0
    acked = []        # (count, monotonic time of its reply, time its connection was opened)
    stop = threading.Event()
    errors, failures, rolled_back = [], [], []  # rolled_back: acknowledged increments a kill undid

    # `opened` is when a connection was established, not when connecting began: connect() retries
    # while nothing listens, so one begun before a kill may be served by the resumed server
    def worker():
        c, opened = None, 0.0
        while not stop.is_set():
            try:
                if c is None:
                    sock = connect(port, time.monotonic() + 60)
                    opened = time.monotonic()
                    c = client(sock)
                n = c.inc()
                acked.append((n, time.monotonic(), opened))
            except OSError:
                c = None
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))
                break

    def first_inc():
        for _ in range(100):  # a client connecting at once may reach the dying server and be reset
            try:
                sock = connect(port, time.monotonic() + 60)
                opened = time.monotonic()
                n = client(sock).inc()
                acked.append((n, time.monotonic(), opened))
                return
            except ConnectionResetError:
                time.sleep(0.01)
        raise AssertionError("every connection was reset")

    t0 = time.monotonic()
    incarnated_at = 0.0
    other = None
    try:
        first_inc()
        workers = [threading.Thread(target=worker, daemon=True) for _ in range(clients)]
        for w in workers:
            w.start()
        if outside:
            other = subprocess.Popen([*outside, str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=d)
        for k in range(kills):
            time.sleep(rng.uniform(0.05, 0.3))
            killed_at = srv.kill()
            srv.resume()
            first_inc()
            # the resumed server's first count: the least acknowledged on a connection established
            # once the killed run was reaped.  What the killed incarnation acknowledged: every reply
            # on a connection established before the kill instant, even one read after it (the
            # test itself may be descheduled between taking that instant and sending the kill, and
            # the dying server answers meanwhile); counts a kill undid are given again after it.
            # A connection established in between is of neither.
            seen = [(n, t) for n, t, opened in acked if incarnated_at < opened <= killed_at]
            v = min(n for n, _, opened in acked if opened > srv.dead_at)
            incarnated_at = srv.dead_at
            floor = max((n for n, t in seen if t <= killed_at - bound), default=0)
            # in flight at the kill: one increment of each client (applied, its reply not yet there --
            # with replies held, nearly always), then this new one; the outside client's are not
            # seen at all: its one in flight, and those it made again after the resume before ours
            ceiling = max((n for n, _ in seen), default=0) + clients + (3 if outside else 0) + 1
            rolled_back.append(max(0, max((n for n, _ in seen), default=0) + 1 - v))
            undone = [t for n, t in seen if n >= v]
            if undone:
                lost_oldest = max(lost_oldest, 1000 * (killed_at - min(undone)))
                late_lost += sum(t > killed_at for t in undone)  # read after the kill instant, undone all the same

            if not floor < v <= ceiling:
                kept = [t for n, t in seen if n == v - 1]
                failures.append(f"kill {k + 1}: the count went on at {v}, not in ({floor}, {ceiling}]: "
                                "the state did not continue" + (f" (count {v - 1} was acknowledged "
                                f"{1000 * (killed_at - kept[0]):.1f} ms before the kill)" if kept else ""))
                break
        stop.set()
        for w in workers:
            w.join(30)
        if other:
            out, err = other.communicate(timeout=120)
            if other.returncode != 0:
                failures.append(f"the outside client ended with status {other.returncode}: {err.decode()[-300:]}")
    finally:
        stop.set()
        if other and other.poll() is None:
            other.kill()
        srv.stop()
    with open(os.path.join(d, "server.err"), "rb") as f:
        err = f.read().decode(errors="replace")
    if "Bad file descriptor" in err or "EBADF" in err:
        failures.append("the server met EBADF: " + err[-500:])
    failures += errors
    if len(acked) < kills * 10:
        failures.append(f"only {len(acked)} increments acknowledged across {kills} kills: clients were not served")
    return {"case": name, "kills": srv.kills, "increments_acknowledged": len(acked),
            "count_at_end": max((n for n, _, _ in acked), default=0),
            "acknowledged_increments_undone_max": max(rolled_back, default=0), "lost_oldest_ms": round(lost_oldest, 1),
            "acknowledged_late_lost": late_lost,
            "bound_ms": bound_ms,
            "seconds": round(time.monotonic() - t0, 1), "ok": not failures, "failures": failures[:10]}


# ------------------------------------------------------------------------- Go, linked against libc

GO_COUNTER = """package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

func main() {
	port := os.Args[len(os.Args)-1]
	if os.Args[1] == "serve" || os.Args[1] == "serve-mptcp" { // the counter, in the server's memory
		var mu sync.Mutex
		count := 0
		http.HandleFunc("/inc", func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			count++
			n := count
			mu.Unlock()
			fmt.Fprint(w, n)
		})
		var lc net.ListenConfig
		lc.SetMultipathTCP(os.Args[1] == "serve-mptcp") // MPTCP: its connections too, clients permitting
		l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:"+port)
		if err != nil {
			panic(err)
		}
		panic(http.Serve(l, nil))
	}
	// the client (client SECONDS PORT): requests on kept-alive connections for that long; one
	// the server's kill cut is sent again, as clients of a restarted server do.  It ends 0 if
	// every reply it got was a count.
	seconds, _ := strconv.Atoi(os.Args[2])
	client := &http.Client{Timeout: 10 * time.Second}
	served, retried := 0, 0
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	for time.Now().Before(deadline) {
		resp, err := client.Get("http://127.0.0.1:" + port + "/inc")
		if err != nil {
			retried++
			time.Sleep(10 * time.Millisecond)
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if _, perr := strconv.Atoi(string(body)); err != nil || perr != nil || resp.StatusCode != 200 {
			fmt.Fprintln(os.Stderr, "bad reply:", resp.StatusCode, string(body), err)
			os.Exit(1)
		}
		served++
	}
	fmt.Println("served", served, "retried", retried)
	if served == 0 {
		os.Exit(1)
	}
}
"""


def build_go(d):
    """The Go counter (serve PORT | serve-mptcp PORT | client SECONDS PORT) built against libc in d: its path, or None and why."""
    import shutil
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if not go:
        return None, "no Go toolchain"
    src = os.path.join(d, "gocounter")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, "main.go"), "w") as f:
        f.write(GO_COUNTER)
    with open(os.path.join(src, "go.mod"), "w") as f:
        f.write("module counter\n\ngo 1.21\n")
    env = dict(os.environ, CGO_ENABLED="1", GOCACHE=os.path.join(d, "gocache"), GOPATH=os.path.join(d, "gopath"),
               GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
    r = subprocess.run([go, "build", "-ldflags=-linkmode=external", "-o", "counter", "."], cwd=src, env=env,
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return None, "the Go toolchain cannot build a cgo program here: " + r.stderr[-200:]
    return os.path.join(src, "counter"), None


# ------------------------------------------------------- programs talking TCP among themselves

# Node.js querying its own HTTP server (a new connection per request, closed by the server after
# its reply), with timers, setImmediate and a child process at the end: its connections are
# between two of its own sockets, kept whole at a resume (fd_inet.c).
NODE_SELF_HTTP = r"""
const http = require('http');
const { spawn } = require('child_process');
let n = 0, h = 0;
const server = http.createServer((req, res) => { h = (h * 31 + n) % 1000003; res.end(String(h)); });
server.listen(0, '127.0.0.1', () => tick(server.address().port));
function tick(port) {
  http.get({ port, host: '127.0.0.1', path: '/', agent: false }, res => {
    let body = '';
    res.on('data', d => body += d);
    res.on('end', () => {
      n++;
      for (let k = 0; k < 20000; k++) h = (h * 31 + k) % 1000003;
      if (n % 100 === 0) console.log(n, body);
      if (n === 1500) return finish();
      if (n % 2) setTimeout(() => tick(port), 1); else setImmediate(() => tick(port));
    });
  }).on('error', e => { console.log('error', e.code); process.exit(3); });
}
function finish() {
  const c = spawn('/bin/sh', ['-c', 'echo child $((6*7))']);
  c.stdout.on('data', d => process.stdout.write(d));
  c.on('exit', code => setImmediate(() => { console.log('done', h, code); server.close(); }));
}
"""


# An MPI ring (Open MPI, one machine): each rank passes a value to the next 20000 times, computing
# between; rank 0 prints every 2000th round and the sum at the end.  Under mpirun the ranks' stdout
# is a pseudo-terminal mpirun reads, the ranks and mpirun talk over TCP and share memory in /dev/shm.
MPI_RING = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int r, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	long v = r, s = 0;
	for (int i = 0; i < 20000; i++) {
		long got;
		MPI_Sendrecv(&v, 1, MPI_LONG, (r + 1) % n, 0, &got, 1, MPI_LONG, (r + n - 1) % n, 0, MPI_COMM_WORLD,
			     MPI_STATUS_IGNORE);
		for (int k = 0; k < 20000; k++)
			s = (s * 31 + got + k) % 1000003;
		v = s;
		if (r == 0 && i % 2000 == 0)
			printf("%d %ld\n", i, s), fflush(stdout);
	}
	MPI_Allreduce(&s, &v, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (r == 0)
		printf("done %ld\n", v);
	MPI_Finalize();
	return 0;
}
"""

MPIRUN_NP2 = ["/usr/bin/mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2"]


def build_mpi_ring(d):
    """The ring built with mpicc in directory d: (its path, None) or (None, why)."""
    src = os.path.join(d, "ring.c")
    with open(src, "w") as f:
        f.write(MPI_RING)
    built = subprocess.run(["mpicc", "-O2", "-o", os.path.join(d, "ring"), src], capture_output=True, text=True)
    if built.returncode != 0:
        return None, "mpicc: " + built.stderr[-200:]
    return os.path.join(d, "ring"), None
