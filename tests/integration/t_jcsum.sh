#!/usr/bin/env bash
# tests/integration/t_jcsum.sh - the jbd2 checksums (journal_checksum_v3,
# journal_64bit) on mke2fs's default ext4 image (64bit, metadata_csum),
# under data=ordered and data=journal.  simfs's log after a clean unmount
# and after a SIGKILL of the daemon (committed, not checkpointed): e2fsck
# replays it (its recovery checks every checksum) and stays clean, debugfs
# lists it, the kernel's ext4 replays it, simfs replays it.  And a log the
# kernel left (an image copied while mounted, after sync) replayed by
# simfs.  The kernel parts need root and loop devices.
#
#   tests/integration/t_jcsum.sh BUILD/simfs
set -uo pipefail
SIMFS=$(realpath "${1:?usage: t_jcsum.sh SIMFS}")
TAG=tjcsum
. "$(dirname "$0")/mount_tap.sh"
kmnt=$dir/kmnt
mkdir -p "$kmnt"
pid=
trap '[[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null; mountpoint -q "$kmnt" && umount "$kmnt"; cleanup' EXIT INT TERM
kernel=0
[[ $(id -u) == 0 && -e /dev/loop-control ]] && losetup -f >/dev/null 2>&1 && kernel=1

sums() { (cd "$1" && find . -path ./.simfs -prune -o -path ./lost+found -prune -o -type f -print0 | sort -z | xargs -0 md5sum); }
jstart() { dumpe2fs -h "$1" 2>/dev/null | sed -n 's/^Journal start: *//p'; }
fsck_clean() { e2fsck -fn "$1" >"$dir/fsck.out" 2>&1 || { cat "$dir/fsck.out"; return 1; }; }

# files, a directory, a 1 MiB file, each fsynced (a commit each)
work() {
	python3 - "$1" "$2" <<'PY'
import os, sys
root, tag = sys.argv[1], sys.argv[2]
d = os.path.join(root, tag)
os.mkdir(d)
for i in range(120):
    p = os.path.join(d, "file-%d" % i)
    with open(p, "w") as f:
        f.write("%s %d\n" % (tag, i) * (i + 1))
        if i % 40 == 0:
            f.flush(); os.fsync(f.fileno())
with open(os.path.join(d, "big"), "wb") as f:
    for i in range(256):
        f.write(bytes([i]) * 4096)
    f.flush(); os.fsync(f.fileno())
fd = os.open(d, os.O_RDONLY); os.fsync(fd); os.close(fd)
PY
}

for mode in ordered journal; do
	img=$dir/$mode.img
	mke2fs -q -F -t ext4 -E lazy_itable_init=0 "$img" 64M || { echo "Bail out! mke2fs"; exit 1; }
	"$SIMFS" mount -o "data=$mode" "$img" "$mnt" || { echo "Bail out! mount"; exit 1; }
	work "$mnt" clean
	"$SIMFS" umount "$mnt" || fail "$mode: umount"
	check "$mode: simfs's log is journal_64bit, journal_checksum_v3" \
		bash -c "dumpe2fs -h '$img' 2>/dev/null | grep -q 'Journal features:.*journal_64bit.*journal_checksum_v3'"
	check "$mode: e2fsck -fn clean after a clean unmount" fsck_clean "$img"

	# committed, not checkpointed: kill the daemon after the fsyncs
	"$SIMFS" mount -f -o "data=$mode,commit=600" "$img" "$mnt" &
	pid=$!
	for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
	work "$mnt" crash
	sums "$mnt" >"$dir/sums"
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	pid=
	umount -l "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null
	js=$(jstart "$img")
	check "$mode: the killed daemon left a log to replay (s_start $js)" bash -c "[[ '$js' =~ ^[1-9] ]] && dumpe2fs -h '$img' 2>/dev/null | grep -q needs_recovery"
	debugfs -R logdump "$img" >"$dir/logdump" 2>&1
	check "$mode: debugfs lists the committed transactions" grep -q 'type 2 (commit block)' "$dir/logdump"
	check "$mode: debugfs finds no bad checksum" bash -c "! grep -qi 'bad\\|invalid\\|error' '$dir/logdump'"

	cp "$img" "$dir/e2.img"
	e2fsck -fy "$dir/e2.img" >"$dir/e2.out" 2>&1
	check "$mode: e2fsck replays simfs's log" grep -q 'recovering journal' "$dir/e2.out"
	check "$mode: e2fsck -fn clean after that replay" fsck_clean "$dir/e2.img"
	if [[ $kernel == 1 ]]; then
		cp "$img" "$dir/k.img"
		if mount -o loop "$dir/k.img" "$kmnt"; then
			check "$mode: the kernel replays simfs's log and reads every file" \
				bash -c "cd '$kmnt' && md5sum --quiet -c '$dir/sums'"
			umount "$kmnt"
			check "$mode: e2fsck -fn clean after the kernel's replay" fsck_clean "$dir/k.img"
		else
			fail "$mode: the kernel mounts the image simfs left"
		fi
	fi
	# a flipped bit in the last commit block: the log ends before it, and
	# the mount says so
	cp "$img" "$dir/flip.img"
	cblk=$(sed -n 's/.*type 2 (commit block) at block \([0-9]*\).*/\1/p' "$dir/logdump" | tail -1)
	bsz=$(dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^Block size: *//p')
	dblk=$(debugfs -R "bmap <8> $cblk" "$dir/flip.img" 2>/dev/null)
	printf '\x5a' | dd of="$dir/flip.img" bs=1 seek=$((dblk * bsz + bsz - 8)) conv=notrunc status=none
	"$SIMFS" mount "$dir/flip.img" "$mnt" 2>"$dir/flip.err" && "$SIMFS" umount "$mnt"
	check "$mode: a bad commit checksum (journal block $cblk) ends the log, with a message" \
		grep -q "commit block at journal block $cblk .*bad checksum.*the log ends there" "$dir/flip.err" ||
		cat "$dir/flip.err"
	"$SIMFS" mount "$img" "$mnt" 2>"$dir/mount.err" || { cat "$dir/mount.err"; echo "Bail out! replay mount"; exit 1; }
	check "$mode: simfs replays its own log: every file reads back" \
		bash -c "cd '$mnt' && md5sum --quiet -c '$dir/sums'"
	"$SIMFS" umount "$mnt" || fail "$mode: umount"
	check "$mode: e2fsck -fn clean after simfs's replay" fsck_clean "$img"
done

# the kernel's log: sync with a long commit interval, copy while mounted
if [[ $kernel == 1 ]]; then
	img=$dir/kernel.img
	mke2fs -q -F -t ext4 -E lazy_itable_init=0 "$img" 64M || { echo "Bail out! mke2fs"; exit 1; }
	mount -o loop,commit=600 "$img" "$kmnt" || { echo "Bail out! kernel mount"; exit 1; }
	work "$kmnt" kernel
	sync
	sums "$kmnt" >"$dir/ksums"
	cp "$img" "$dir/kcopy.img"
	umount "$kmnt"
	js=$(jstart "$dir/kcopy.img")
	check "the kernel left a journal_checksum_v3 log to replay (s_start $js)" \
		bash -c "[[ '$js' =~ ^[1-9] ]] && dumpe2fs -h '$dir/kcopy.img' 2>/dev/null | grep -q 'Journal features:.*journal_checksum_v3'"
	"$SIMFS" mount "$dir/kcopy.img" "$mnt" || { echo "Bail out! mount kernel copy"; exit 1; }
	check "simfs replays the kernel's log: every file reads back" \
		bash -c "cd '$mnt' && md5sum --quiet -c '$dir/ksums'"
	"$SIMFS" umount "$mnt" || fail "umount kernel copy"
	check "e2fsck -fn clean after simfs replayed the kernel's log" fsck_clean "$dir/kcopy.img"
else
	echo "# no loop device or kernel ext4 mount here: the kernel cross-checks are left out"
fi
tap_done
