#!/usr/bin/env bash
# test_pagetable_cli.sh SIM TEST_PAGETABLE -- the page-table study's command line: a broken
# MAP/UNMAP record, a bad --synth pattern or scheme is refused with exit 2 and a message naming
# the file and the record; a good run prints every scheme.
set -u
sim=$1; gen=$2
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
"$gen" --write-broken "$dir" || exit 1
. "$(dirname "$0")/expect.sh"
expect 0 "" -- "$dir/map-good.trace" --pagetable persistent,rebuild
expect 2 "$dir/map-unaligned.trace: record 2: a mapping not aligned" -- "$dir/map-unaligned.trace" --pagetable rebuild
expect 2 "$dir/map-prot.trace: record 2: a mapping with protection bits 9" -- "$dir/map-prot.trace" --pagetable persistent
expect 2 "$dir/map-empty.trace: record 2" -- "$dir/map-empty.trace" --stack none-dram
expect 2 "unknown page-table scheme \"nope\"" -- "$dir/map-good.trace" --pagetable nope
expect 2 "no-such.trace: cannot open" -- "$dir/no-such.trace" --pagetable rebuild
expect 2 "unknown pattern" -- --synth walk:4M "$dir/x.trace"
expect 2 "is not a size" -- --synth seq:4Q "$dir/x.trace"
expect 2 "cannot create" -- --synth seq:4M "$dir/no/such/dir.trace"
expect 2 "--interval-ms" -- "$dir/map-good.trace" --pagetable rebuild --interval-ms -1
expect 0 "" -- --synth allocfree:4M:1M:1 "$dir/af.trace"
out=$("$sim" "$dir/af.trace" --pagetable persistent,rebuild,volatile --json)
for key in '"scheme": "persistent"' '"scheme": "rebuild"' '"scheme": "volatile"' '"resume_ms"' '"entry_writes"' '"mappings": 6'; do
	[[ "$out" == *$key* ]] || { echo "FAILED: JSON lacks $key"; fail=1; }
done
# A loads-and-stores consumer skips the MAP/UNMAP records of the same trace.
expect 0 "" -- "$dir/af.trace" --stack none-dram
exit $fail
