#!/usr/bin/env bash
# tests/run-all.sh - build and run every test, the way CI does.
#
#  1. build/        -Dwerror=true, `meson test` of every suite
#                   (unit + integration through real FUSE mounts)
#  2. build-asan/   -Db_sanitize=address,undefined: the unit suite, then the
#                   integration suite with the simfs daemon under ASan/UBSan
#  3. build-clang/  CC=clang -Dwerror=true: must compile warning-free
#                   (build only)
#  4. build-tsan/   -Db_sanitize=thread: t_concurrent (several processes on
#                   one mount) with the daemon under ThreadSanitizer
#
# SIMFS_TEST_TIMEOUT_MULTIPLIER=N (default 1) gives every test N times
# its timeout, for a loaded machine.
#
# Build dirs live in the source tree (ignored by git); set BUILD_ROOT to put
# them elsewhere.  Exits non-zero if any step fails; runs every step anyway
# and prints a verdict per step at the end.
set -uo pipefail
# SIMFS_TEST_TIMEOUT_MULTIPLIER=N stretches every test's timeout N times
# (a loaded machine); the sanitizer steps multiply it again by 3.
M=${SIMFS_TEST_TIMEOUT_MULTIPLIER:-1}
if ! [[ $M =~ ^[1-9][0-9]*$ ]]; then
	echo "run-all.sh: SIMFS_TEST_TIMEOUT_MULTIPLIER must be a positive integer, not '$M'" >&2
	exit 2
fi
M3=$((M * 3))

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
	run "asan: unit suite" meson test -C "$A" --suite unit --print-errorlogs \
		--timeout-multiplier "$M"
	# the integration tests are slower under ASan: give them 3x the time
	run "asan: integration suite" meson test -C "$A" --suite integration \
		--print-errorlogs --timeout-multiplier "$M3"
	run "asan: no sanitizer reports" no_sanitizer_reports
fi
unset ASAN_OPTIONS UBSAN_OPTIONS

# 3. clang, warning-free
C=$BUILD_ROOT/build-clang
if [[ -f $C/build.ninja ]]; then
	run "configure build-clang (werror)" meson configure "$C" -Dwerror=true
else
	run "configure build-clang (werror)" env CC=clang meson setup "$C" \
		"$root" -Dwerror=true
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
	run "tsan: t_concurrent" env T_CONCURRENT_OPS=2000 meson test -C "$T" \
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
