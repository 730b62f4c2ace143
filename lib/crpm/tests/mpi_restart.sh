#!/usr/bin/env bash
# mpi_restart.sh TEST_BINARY -- 4 ranks: run, one rank SIGKILLed before a checkpoint while the
# others have committed it, restart at the common epoch (the ranks ahead roll back), check, go
# on, check again.  Every restart must be exact; at least one of up to 3 attempts must have
# exercised a rollback (the victim waits 300 ms for the others to commit, which a loaded
# machine may not grant).  Then a gap of two epochs between ranks must be refused.
# PROSPER_LONG=1: more iterations.
set -u
bin=$1
base=/dev/shm; [ -w "$base" ] || base=${TMPDIR:-/tmp}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Shared-memory transport without cross-process copies (blocked by ptrace rules in containers).
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
kill_at=20; [ -n "${PROSPER_LONG:-}" ] && kill_at=200
fail() { echo "mpi_restart: $*" >&2; exit 1; }

for attempt in 1 2 3; do
	dir=$(mktemp -d "$base/crpm-mpi.XXXXXX")
	mpi() { mpirun -np 4 "$bin" "$dir" "$@"; }
	mpi run $((kill_at + 10)) 2 "$kill_at" >"$dir/run1.log" 2>&1 && fail "the run with a killed rank succeeded"
	mpi check $((kill_at - 1)) 2>"$dir/check1.err" || { cat "$dir/check1.err" "$dir/run1.log" >&2; fail "restart after the kill"; }
	rolled=$(grep -c "rolled back" "$dir/check1.err")
	echo "attempt $attempt: ranks that restarted one epoch ahead and rolled back: $rolled"
	mpi run 7 >/dev/null 2>&1 || fail "continuing after the restart"
	mpi check $((kill_at - 1 + 7)) 2>/dev/null || fail "check after continuing"
	rm -rf "$dir"
	[ "$rolled" -ge 1 ] && break
	[ "$attempt" = 3 ] && fail "no attempt rolled a rank back: the rollback was not exercised"
done

# A gap of two epochs has no common state: rank 0's container is put back two checkpoints
# behind the others; the restart must be refused, and roll no rank back: with rank 0's own
# container returned, the restart is exact again.
dir=$(mktemp -d "$base/crpm-mpi.XXXXXX")
mpi() { mpirun -np 4 "$bin" "$dir" "$@"; }
mpi run 3 >/dev/null 2>&1 || fail "gap test: first run"
cp "$dir/mpi.crpm.0" "$dir/behind"
mpi run 2 >/dev/null 2>&1 || fail "gap test: second run"
cp "$dir/mpi.crpm.0" "$dir/current"
cp "$dir/behind" "$dir/mpi.crpm.0"
mpi check 5 >"$dir/gap.log" 2>&1 && fail "a restart across a gap of two epochs was accepted"
grep -q "2 epochs apart" "$dir/gap.log" || { cat "$dir/gap.log" >&2; fail "the gap was not named as the reason"; }
echo "gap of two epochs refused: $(grep -m1 "epochs apart" "$dir/gap.log")"
cp "$dir/current" "$dir/mpi.crpm.0"
mpi check 5 || fail "after a refused restart, the ranks' own containers no longer restart"
rm -rf "$dir"
