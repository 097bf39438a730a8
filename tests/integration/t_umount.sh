#!/usr/bin/env bash
# tests/integration/t_umount.sh - how long `simfs umount` waits.  A daemon
# that is stopped (SIGSTOP) after the kernel unmount cannot write back:
# `simfs umount --timeout 1` gives up after about a second with a message
# naming the daemon's pid, and leaves it running; once continued, the
# daemon finishes the write-back and the image is clean with the data.
# Without --timeout, on a terminal (script(1) gives it one), `simfs umount`
# of a mount with dirty data waits for the write-back and exits 0.
# `simfs sync --timeout 1` on the stopped daemon shows progress lines on a
# terminal and gives up naming the pid; continued, `simfs sync` completes
# and leaves no dirty bytes.  Bad --timeout values of either are usage
# errors (exit 2).  SKIP (77) without FUSE.
#
#   tests/integration/t_umount.sh BUILD/simfs
set -uo pipefail
. "$(dirname "$0")/tap.sh"
tap_tscale
SIMFS=${1:?usage: t_umount.sh SIMFS}
SIMFS=$(realpath "$SIMFS")
PATH=$PATH:/usr/sbin:/sbin
if [[ ! -c /dev/fuse ]] || ! command -v fusermount3 >/dev/null; then
	echo "SKIP: no /dev/fuse or fusermount3"
	exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/simfs-tumount.XXXXXX")
mnt=$dir/mnt
pid=
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	[[ -n $pid ]] && kill -CONT "$pid" 2>/dev/null
	mountpoint -q "$mnt" && { "$SIMFS" umount "$mnt" || fusermount3 -uz "$mnt"; } >/dev/null 2>&1
	flock -x -w $((60 * tscale)) "$dir/img" true 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM
mkdir -p "$mnt"

for cmd in umount sync; do
	for bad in 0 -1 abc 1e9; do
		"$SIMFS" $cmd --timeout "$bad" "$mnt" 2>"$dir/err"
		rc=$?
		if [[ $rc == 2 ]] && grep -q "bad --timeout '$bad'" "$dir/err"; then
			ok "$cmd --timeout $bad refused (exit 2)"
		else
			fail "$cmd --timeout $bad: exit $rc, $(cat "$dir/err")"
		fi
	done
done

"$SIMFS" mkfs -j "$dir/img" 64M >/dev/null || { echo "Bail out! mkfs"; exit 1; }
if ! "$SIMFS" mount -o preset=ext4 "$dir/img" "$mnt" 2>"$dir/err"; then
	echo "SKIP: cannot mount: $(cat "$dir/err")"
	exit 77
fi
head -c 8M /dev/urandom >"$dir/data"
cp "$dir/data" "$mnt/data"
pid=$(pgrep -f -- "mount -o preset=ext4 $dir/img" | head -1)
if [[ -z $pid ]]; then
	fail "the daemon's pid not found"
else
	# simfs sync on a terminal, the daemon stopped: progress lines, then
	# it gives up at --timeout; continued, a second sync succeeds
	kill -STOP "$pid"
	if command -v script >/dev/null; then
		script -qec "'$SIMFS' sync --timeout 1 '$mnt'" /dev/null >"$dir/tty" 2>&1
		rc=$?
		tr '\r' '\n' <"$dir/tty" >"$dir/lines"
		if [[ $rc == 1 ]] &&
			grep -q "gave up after --timeout 1 s.*pid $pid.*the sync goes on" "$dir/lines"; then
			ok "sync --timeout 1 gives up on a stopped daemon, naming its pid"
		else
			fail "sync --timeout 1 on a stopped daemon: exit $rc, $(cat "$dir/lines")"
		fi
		if grep -q "^simfs sync: writing back $mnt: 0 B written" "$dir/lines"; then
			ok "sync on a terminal shows the write-back's progress"
		else
			fail "no progress line from sync: $(cat "$dir/lines")"
		fi
	fi
	kill -CONT "$pid"
	if "$SIMFS" sync --timeout 600 "$mnt" 2>"$dir/err"; then
		ok "continued, simfs sync --timeout 600 completes (exit 0)"
	else
		fail "simfs sync after continuing: $(cat "$dir/err")"
	fi
	# the cache's dirty bytes and the delayed blocks (the 8 MiB copy is
	# delayed with preset=ext4): none left
	left=$("$SIMFS" stats --json "$mnt" | python3 -c 'import json,sys
d = json.load(sys.stdin)
print(d["cache"]["dirty_bytes"] + d["delalloc"]["delayed_blocks_now"])')
	if [[ $left == 0 ]]; then
		ok "after simfs sync nothing is dirty or delayed"
	else
		fail "after simfs sync: $left dirty bytes + delayed blocks"
	fi
	kill -STOP "$pid"
	"$SIMFS" umount --timeout 1 "$mnt" 2>"$dir/err"
	rc=$?
	if [[ $rc == 1 ]] && grep -q "gave up after --timeout 1 s.*pid $pid" "$dir/err"; then
		ok "--timeout 1 gives up on a stopped daemon, naming its pid"
	else
		fail "--timeout 1 on a stopped daemon: exit $rc, $(cat "$dir/err")"
	fi
	if kill -0 "$pid" 2>/dev/null && ! mountpoint -q "$mnt"; then
		ok "unmounted, and the daemon is left running"
	else
		fail "after giving up: daemon alive? mount gone?"
	fi
	kill -CONT "$pid"
	if flock -x -w $((60 * tscale)) "$dir/img" true; then
		ok "continued, the daemon finishes and releases the image"
	else
		fail "the daemon still holds the image"
	fi
	pid=
	if e2fsck -fn "$dir/img" >"$dir/fsck" 2>&1; then
		ok "e2fsck -fn clean"
	else
		fail "e2fsck: $(cat "$dir/fsck")"
	fi
	debugfs -R "dump /data $dir/back" "$dir/img" >/dev/null 2>&1
	if cmp -s "$dir/data" "$dir/back"; then
		ok "the data is on the image"
	else
		fail "the data is not on the image"
	fi
fi

# on a terminal, with dirty data (delayed allocation): waits, exits 0
rm -f "$dir/back"
if command -v script >/dev/null &&
	"$SIMFS" mount -o preset=ext4,mem=64M "$dir/img" "$mnt"; then
	cp "$dir/data" "$mnt/data2"
	script -qec "'$SIMFS' umount '$mnt'" /dev/null >"$dir/tty" 2>&1
	rc=$?
	if [[ $rc == 0 ]] && ! grep -q "gave up\|no progress" "$dir/tty"; then
		ok "umount on a terminal waits for the write-back (exit 0)"
	else
		fail "umount on a terminal: exit $rc, $(tr '\r' '\n' <"$dir/tty")"
	fi
	debugfs -R "dump /data2 $dir/back" "$dir/img" >/dev/null 2>&1
	if cmp -s "$dir/data" "$dir/back" && e2fsck -fn "$dir/img" >/dev/null 2>&1; then
		ok "its data is on the image, e2fsck clean"
	else
		fail "after umount on a terminal: data or fsck wrong"
	fi
fi

tap_done
