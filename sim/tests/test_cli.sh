#!/usr/bin/env bash
# test_cli.sh SIM TEST_SIM -- the CLI's exit codes: a broken trace, config or mechanism is
# refused with exit 2 and a message naming the file (and the record, for traces).
set -u
sim=$1; gen=$2
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
"$gen" --write-broken "$dir" || exit 1
. "$(dirname "$0")/expect.sh"
expect 0 "" -- "$dir/good.trace" --stack prosper,dirtybit,ssp-10us,romulus --json
expect 2 "$dir/bad-op.trace: record 5: unknown op" -- "$dir/bad-op.trace"
expect 2 "$dir/no-end.trace: record 10: truncated" -- "$dir/no-end.trace"
expect 2 "$dir/partial-record.trace: record 9: truncated" -- "$dir/partial-record.trace"
expect 2 "$dir/cut-compressed.trace: record" -- "$dir/cut-compressed.trace"
expect 2 "$dir/not-zstd.trace: record 0" -- "$dir/not-zstd.trace"
expect 2 "no-such.trace: cannot open" -- "$dir/no-such.trace"
expect 2 "unknown mechanism \"nope\"" -- "$dir/good.trace" --stack nope
expect 2 "works on the stack only" -- "$dir/good.trace" --heap prosper
printf 'l1_cycles = 3\nbogus = 1\n' > "$dir/bad.conf"
expect 2 "$dir/bad.conf:2: unknown key" -- "$dir/good.trace" --config "$dir/bad.conf"
expect 2 "--interval-ms" -- "$dir/good.trace" --interval-ms 0
out=$("$sim" "$dir/good.trace" --stack prosper,dirtybit --json)
for key in '"results"' '"stack"' '"heap"' '"cycles"' '"normalized"' '"nvm_write_bytes"' '"events_per_second"'; do
	[[ "$out" == *$key* ]] || { echo "FAILED: JSON lacks $key"; fail=1; }
done
exit $fail
