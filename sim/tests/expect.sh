# expect.sh -- sourced by the CLI tests: `expect CODE NEEDLE -- ARGS...` runs "$sim" ARGS and
# records a failure (fail=1) unless it exits with CODE and its stderr contains NEEDLE.
fail=0
expect() {
	local code=$1 needle=$2; shift 3
	local err; err=$("$sim" "$@" 2>&1 >/dev/null); local rc=$?
	if [ "$rc" != "$code" ] || [[ "$err" != *"$needle"* ]]; then
		echo "FAILED: prosper-sim $* -> exit $rc, stderr: $err (want $code, \"$needle\")"; fail=1
	fi
}
