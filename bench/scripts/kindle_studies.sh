#!/usr/bin/env bash
# kindle_studies.sh [--quick] [NAME...] -- Kindle's studies through prosper-sim, each by
# `bin/prosper sim --study NAME`: pagetable (Fig 4, Tables III/IV), ssp-interval (Fig 5),
# hscc (Fig 6, Tables V/VI); all three when no NAME is given.  Each writes
# bench/results/kindle_NAME.{json,md} with the command that made it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
quick=()
names=()
for a in "$@"; do
	case "$a" in
	--quick) quick=(--quick) ;;
	-*) echo "kindle_studies.sh: unknown option $a (usage: kindle_studies.sh [--quick] [NAME...])" >&2; exit 2 ;;
	*) names+=("$a") ;;
	esac
done
[ ${#names[@]} -gt 0 ] || names=(pagetable ssp-interval hscc)
for n in "${names[@]}"; do
	echo "kindle_studies: $n" >&2
	"$root/bin/prosper" sim --study "$n" "${quick[@]}" >/dev/null
done
