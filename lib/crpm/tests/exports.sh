#!/bin/sh
# exports.sh -- the shared libraries a user links export their API and nothing else: no pool,
# tracker or allocator internals, and no test machinery (crash simulation, mutations).
#   exports.sh LIBCRPM LIBCRPM_MPI LIBNVM HEADER_DIR
# Fails if a library exports a symbol outside its allowed list, or misses a function its public
# header declares.
set -eu
crpm=$1 mpi=$2 nvm=$3 inc=$4
fail=0
exported() { nm -D --defined-only "$1" | awk '{print $3}' | sed 's/@.*//' | sort -u; }

check() { # LIB ALLOWED_REGEX HEADER PREFIX [NOT_PREFIX]: the header's PREFIX* functions, less NOT_PREFIX*
	lib=$1 allowed=$2 header=$3 prefix=$4 not=${5:-^$}
	syms=$(exported "$lib")
	bad=$(printf '%s\n' "$syms" | grep -Ev "$allowed" || true)
	test=$(printf '%s\n' "$syms" | grep -Ei 'crash|mutant|mutation|test' || true)
	if [ -n "$bad$test" ]; then
		echo "FAIL $(basename "$lib") exports what is not its API:" $bad $test
		fail=1
	fi
	for f in $(grep -o "\b${prefix}[a-z0-9_]*(" "$header" | tr -d '(' | grep -v "$not" | sort -u); do
		printf '%s\n' "$syms" | grep -qx "$f" || { echo "FAIL $(basename "$lib") does not export $f ($header)"; fail=1; }
	done
	echo "$(basename "$lib"): $(printf '%s\n' "$syms" | grep -c .) symbols"
}

# crpm: the API of crpm.h (crpm_mpi_* live in the MPI library), instrumented programs' entry
# points (hook.h, instrumented.c, stdcxx.c) and what libprosper-crpm-mpi calls (exports.map).
check "$crpm" '^(crpm_(open|close|get_root|set_root|malloc|free|checkpoint|epoch|errormsg|annotate|protect|get_stats|init_option|declare_instrumented|checkpoint_ahead|checkpoint_commit|prepare_ahead|rollback|fail|fail_null)|crpm__[a-z_]+|__sanitizer_cov_(load|store)[0-9]+|__wrap_[a-z_]+)$' \
	"$inc/prosper/crpm.h" 'crpm_' '^crpm_mpi_'
[ -e "$mpi" ] && check "$mpi" '^crpm_mpi_[a-z_]+$' "$inc/prosper/crpm.h" 'crpm_mpi_'
check "$nvm" '^prosper_nvm_[a-z_]+$' "$inc/prosper/nvm.h" 'prosper_nvm_'
exit $fail
