# tests/integration/tap.sh - sourced by the shell tests: the TAP helpers.
# ok and fail print one numbered result line each and count it in $n
# (failures also in $failed); check runs a command and reports it as one
# case; tap_done prints the plan "1..$n" and is true only when no case
# failed, so that a test ending with it exits 0 or 1 as TAP wants.
# tap_tscale sets $tscale, the factor by which a test stretches its own
# time limits as meson's timeout does (tests/run-all.sh), or bails out on
# a malformed SIMFS_TEST_TIMEOUT_MULTIPLIER.
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
fail() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
check() { # check DESCRIPTION CMD...
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}
tap_done() { echo "1..$n"; [[ $failed == 0 ]]; }
tap_tscale() {
	tscale=${SIMFS_TEST_TIMEOUT_MULTIPLIER:-1}
	[[ $tscale =~ ^[1-9][0-9]{0,5}$ ]] || {
		echo "Bail out! SIMFS_TEST_TIMEOUT_MULTIPLIER must be an integer from 1 to 999999, not '$tscale'"
		exit 1
	}
}
