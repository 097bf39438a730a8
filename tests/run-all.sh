#!/usr/bin/env bash
# tests/run-all.sh - build and run every test, the way CI does.
#
#  1. build/        -Dwerror=true, `meson test` of every suite
#                   (unit + integration through real FUSE mounts)
#  2. build-asan/   -Db_sanitize=address,undefined: the unit suite, then the
#                   integration suite with the simfs daemon under ASan/UBSan
#  3. build-clang/  CC=clang -Dwerror=true -Doptimization=0: must compile
#                   warning-free (build only)
#  4. build-tsan/   -Db_sanitize=thread: t_concurrent (several processes on
#                   one mount) with the daemon under ThreadSanitizer
#
# SIMFS_TEST_TIMEOUT_MULTIPLIER=N (default 1) gives every test N times
# its timeout, for a loaded machine: meson's --timeout-multiplier, and the
# same variable in each test's environment, which stretches the time
# limits inside the tests (polls, deadlock guards; tests/integration/
# harness.h h_time_scale).
#
# CI time (2 cores).  The sanitizer steps repeat paths the normal build
# runs in full, so where a test is only more repetitions of the same
# paths it runs shorter there, each through a knob the test honours and
# prints (the normal build keeps the full size):
#   - t_randops: T_RANDOPS_OPS_MAX=2500 under ASan, every seed,
#     configuration and check (half-way remount, fsck, O_DIRECT) kept;
#     10000 operations per seed in build/;
#   - t_concurrent: T_CONCURRENT_OPS=2000 under ASan and TSan (6000 in
#     build/), all five configurations;
#   - test_fuzzimage: SFS_FUZZ_ITERS=100 corruptions per image under ASan
#     (400 in build/), all four images, same seed;
#   - test_allocprop: SFS_ALLOCPROP_SEEDS=1,4,5,6 under ASan, 4 of the 7
#     seeded runs of every allocator row, one per block size and group
#     layout (1 KiB in 3 and in 2 groups, 2 KiB, 4 KiB).
# Measured under ASan on a shared, loaded 2-core machine, one test alone
# unless noted: randops-seed10-delalloc 126 s -> 34 s; fuzzimage 100
# iterations 58 s (400: 215 s, in the unit suite beside allocprop);
# allocprop 4 runs 57 s (7: 192 s, in the suite); concurrent at 2000
# operations 88 s.  The crash suite runs in build/ only, as before.
#
# Build dirs live in the source tree (ignored by git); set BUILD_ROOT to put
# them elsewhere.  Exits non-zero if any step fails; runs every step anyway
# and prints a verdict per step at the end.
set -uo pipefail
# SIMFS_TEST_TIMEOUT_MULTIPLIER=N stretches every test's timeout N times
# (a loaded machine); the sanitizer integration steps multiply it again by
# 3.  Exported: the tests scale their own time limits by it.
M=${SIMFS_TEST_TIMEOUT_MULTIPLIER:-1}
if ! [[ $M =~ ^[1-9][0-9]*$ ]]; then
	echo "run-all.sh: SIMFS_TEST_TIMEOUT_MULTIPLIER must be a positive integer, not '$M'" >&2
	exit 2
fi
M3=$((M * 3))
export SIMFS_TEST_TIMEOUT_MULTIPLIER=$M

root=$(cd "$(dirname "$0")/.." && pwd)
BUILD_ROOT=${BUILD_ROOT:-$root}
declare -a verdicts=()
failed=0

run() { # run NAME CMD...
	local name=$1 t0 rc
	shift
	echo
	echo "==== $name: $*"
	t0=$(date +%s)
	"$@"
	rc=$?
	verdicts+=("$(printf '%-44s %s (%ds)' "$name" \
		"$([[ $rc == 0 ]] && echo ok || echo "FAILED ($rc)")" \
		$(($(date +%s) - t0)))")
	[[ $rc == 0 ]] || failed=1
	return $rc
}

setup() { # setup DIR [meson options...]: configure, or reconfigure
	local dir=$1
	shift
	if [[ -f $dir/build.ninja ]]; then
		meson configure "$dir" "$@"
	else
		meson setup "$dir" "$root" "$@"
	fi
}

# 1. normal build, all suites
B=$BUILD_ROOT/build
if run "configure build (werror)" setup "$B" -Dwerror=true &&
	run "compile build" meson compile -C "$B"; then
	run "meson test (all suites)" meson test -C "$B" --print-errorlogs \
		--timeout-multiplier "$M"
fi

# 2. sanitizers.  detect_leaks=0: GLib keeps one-time allocations (type
# system, quarks, thread pools, the main context) for the whole process
# life and LeakSanitizer reports them at exit as leaks; with LSan on, the
# daemon's exit status at unmount would turn into a failure that is not a
# simfs bug.  Every other ASan/UBSan error aborts the process.  The
# reports also go to files (log_path): the simfs daemon has no stderr once
# detached, so a report from it is found there, and any report fails the
# step even if the test around it passed.
A=$BUILD_ROOT/build-asan
sanlog=$A/sanitizer-logs
rm -rf "$sanlog"
mkdir -p "$sanlog"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:log_path=$sanlog/asan
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$sanlog/ubsan
no_sanitizer_reports() {
	local f found=0
	for f in "$sanlog"/*; do
		[[ -e $f ]] || continue
		echo "---- $f"
		cat "$f"
		found=1
	done
	return $found
}
if run "configure build-asan" setup "$A" -Db_sanitize=address,undefined \
		-Db_lundef=false -Dbuildtype=debug &&
	run "compile build-asan" meson compile -C "$A"; then
	run "asan: unit suite" env SFS_FUZZ_ITERS=100 \
		SFS_ALLOCPROP_SEEDS=1,4,5,6 meson test -C "$A" --suite unit \
		--print-errorlogs --timeout-multiplier "$M"
	# the integration tests are slower under ASan: give them 3x the time
	run "asan: integration suite" env SIMFS_TEST_TIMEOUT_MULTIPLIER="$M3" \
		T_RANDOPS_OPS_MAX=2500 T_CONCURRENT_OPS=2000 \
		meson test -C "$A" --suite integration --print-errorlogs \
		--timeout-multiplier "$M3"
	run "asan: no sanitizer reports" no_sanitizer_reports
fi
unset ASAN_OPTIONS UBSAN_OPTIONS

# 3. clang, warning-free.  -O0: clang emits its warnings from the front
# end, whatever the optimisation level (the few back-end ones, such as
# -Wframe-larger-than, are not enabled here; the optimiser-dependent
# warnings are GCC's, and build/ is GCC at -O2 with -Werror); 56 s
# instead of 107 s of compile on a loaded 2-core machine.
C=$BUILD_ROOT/build-clang
if [[ -f $C/build.ninja ]]; then
	run "configure build-clang (werror)" meson configure "$C" \
		-Dwerror=true -Doptimization=0
else
	run "configure build-clang (werror)" env CC=clang meson setup "$C" \
		"$root" -Dwerror=true -Doptimization=0
fi && run "compile build-clang" meson compile -C "$C"

# 4. ThreadSanitizer on the daemon while several processes use one mount.
# G_SLICE=always-malloc: GLib's slice allocator hands memory between
# threads through locks TSan cannot see (simfs's own locks are pthread
# mutexes for this reason, simfs/lock.h).  Reports go to files, as in 2.
T=$BUILD_ROOT/build-tsan
sanlog=$T/sanitizer-logs
rm -rf "$sanlog"
mkdir -p "$sanlog"
export G_SLICE=always-malloc
export TSAN_OPTIONS=halt_on_error=1:log_path=$sanlog/tsan
if run "configure build-tsan" setup "$T" -Db_sanitize=thread \
		-Db_lundef=false -Dbuildtype=debug &&
	run "compile build-tsan" meson compile -C "$T" simfs:executable \
		t_concurrent:executable; then
	# 2000 operations per worker and configuration (6000 elsewhere): the
	# same paths, at a third of the cost under TSan
	run "tsan: t_concurrent" env T_CONCURRENT_OPS=2000 \
		SIMFS_TEST_TIMEOUT_MULTIPLIER="$M3" meson test -C "$T" \
		--no-rebuild concurrent --print-errorlogs --timeout-multiplier "$M3"
	run "tsan: no sanitizer reports" no_sanitizer_reports
fi
unset G_SLICE TSAN_OPTIONS

echo
echo "==== summary"
printf '%s\n' "${verdicts[@]}"
if [[ $failed != 0 ]]; then
	echo "run-all.sh: FAILED.  Rerun one test with"
	echo "  meson test -C BUILD_DIR TEST_NAME --print-errorlogs"
	echo "(the failed tests are listed above, after 'Summary of Failures';"
	echo " BUILD_DIR is build, build-asan or build-tsan under $BUILD_ROOT;"
	echo " SIMFS_TEST_TIMEOUT_MULTIPLIER=N gives every test N times its time)"
	exit 1
fi
echo "run-all.sh: all passed"
