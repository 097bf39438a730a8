#!/usr/bin/env bash
# tests/integration/t_csum.sh - a metadata_csum image (made by mke2fs)
# through the FUSE mount: files, an htree directory, a fragmented file,
# xattrs, renames and unlinks; e2fsck -fn clean (it verifies every
# checksum); read back after a remount.  Where loop devices work: the
# kernel's ext4 reads what simfs wrote, and what the kernel writes (its
# journal then carries journal_checksum_v3) reads back on simfs.
#
#   tests/integration/t_csum.sh BUILD/simfs
set -uo pipefail
SIMFS=$(realpath "${1:?usage: t_csum.sh SIMFS}")
TAG=tcsum
. "$(dirname "$0")/mount_tap.sh"
kmnt=$dir/kmnt
mkdir -p "$kmnt"
# the kernel mount, if any, goes before mount_tap.sh's cleanup
trap 'mountpoint -q "$kmnt" && umount "$kmnt"; cleanup' EXIT INT TERM
img=$dir/img
mke2fs -q -F -t ext4 -O metadata_csum,^64bit,^flex_bg,^orphan_file,^metadata_csum_seed \
	-E lazy_itable_init=0 "$img" 64M || { echo "Bail out! mke2fs"; exit 1; }
check "mke2fs made a metadata_csum image" bash -c "dumpe2fs -h '$img' 2>/dev/null | grep -q 'metadata_csum'"
"$SIMFS" mount -o alloc=extent "$img" "$mnt" || { echo "Bail out! mount"; exit 1; }
mkdir "$mnt/big" "$mnt/other"
for i in $(seq 1 500); do echo "file $i" >"$mnt/big/a-longer-file-name-$i"; done
for i in $(seq 1 500 3); do mv "$mnt/big/a-longer-file-name-$i" "$mnt/other/r$i"; done
for i in $(seq 2 500 3); do rm "$mnt/big/a-longer-file-name-$i"; done
# two files written a block at a time in turn: many extents
python3 - "$mnt" <<'PY'
import os, sys
fds = [os.open(os.path.join(sys.argv[1], n), os.O_CREAT | os.O_WRONLY, 0o644) for n in ("f1", "f2")]
for i in range(800):
    for k, fd in enumerate(fds):
        os.pwrite(fd, bytes([(i + k) % 256]) * 4096, i * 8192)
    if i % 50 == 0:
        os.fsync(fds[0]); os.fsync(fds[1])
for fd in fds:
    os.close(fd)
PY
setfattr -n user.big -v "$(head -c 700 /dev/zero | tr '\0' v)" "$mnt/f1"
(cd "$mnt" && find . -path ./.simfs -prune -o -type f -print0 | sort -z | xargs -0 md5sum) >"$dir/sums"
"$SIMFS" umount "$mnt" || fail "umount"
check "e2fsck -fn is clean after simfs's writes" bash -c "e2fsck -fn '$img' >'$dir/fsck' 2>&1" || cat "$dir/fsck"
"$SIMFS" mount "$img" "$mnt" || { echo "Bail out! remount"; exit 1; }
check "remount: every file reads back" bash -c "cd '$mnt' && md5sum --quiet -c '$dir/sums'"
check "remount: the xattr" bash -c "[[ \$(getfattr --only-values -n user.big '$mnt/f1' 2>/dev/null | wc -c) == 700 ]]"
"$SIMFS" umount "$mnt" || fail "umount"

if [[ $(id -u) == 0 && -e /dev/loop-control ]] && losetup -f >/dev/null 2>&1 &&
	mount -o loop,ro "$img" "$kmnt" 2>/dev/null; then
	check "kernel ext4 reads every file simfs wrote" bash -c "cd '$kmnt' && md5sum --quiet -c '$dir/sums'"
	umount "$kmnt"
	mount -o loop "$img" "$kmnt" || fail "kernel rw mount"
	mkdir "$kmnt/k" && for i in $(seq 1 300); do echo "k $i" >"$kmnt/k/kernel-file-$i"; done
	rm "$kmnt/big/a-longer-file-name-3" && echo changed >"$kmnt/other/r1"
	(cd "$kmnt" && find . -type f -print0 | sort -z | xargs -0 md5sum) >"$dir/ksums"
	umount "$kmnt"
	check "the kernel's journal has checksum v3" bash -c "dumpe2fs -h '$img' 2>/dev/null | grep -q journal_checksum_v3"
	check "e2fsck -fn is clean after the kernel's writes" bash -c "e2fsck -fn '$img' >/dev/null 2>&1"
	"$SIMFS" mount "$img" "$mnt" || { echo "Bail out! mount after kernel"; exit 1; }
	check "files the kernel wrote read back on simfs" bash -c "cd '$mnt' && md5sum --quiet -c '$dir/ksums'"
	echo more >"$mnt/k/kernel-file-7"
	"$SIMFS" umount "$mnt" || fail "umount"
	check "e2fsck -fn is clean at the end" bash -c "e2fsck -fn '$img' >/dev/null 2>&1"
	mount -o loop,ro "$img" "$kmnt" || fail "kernel mount at the end"
	check "the kernel reads simfs's last write" bash -c "[[ \$(tail -1 '$kmnt/k/kernel-file-7') == more ]]"
	umount "$kmnt"
else
	echo "# no loop device or kernel ext4 mount here: the kernel cross-check is left out"
fi
# mke2fs's plain default: 64bit, flex_bg, and inode tables left for lazy
# zeroing (no ITABLE_ZEROED).  Garbage in never-used slots of group 0's
# table and in all of group 1's must not matter: a read-only mount before
# the first read-write one works and writes nothing (the slots read as
# never-used inodes); the first read-write mount zeroes them.
lazy=$dir/lazy.img
mke2fs -q -F -t ext4 -b 1024 "$lazy" 64M || { echo "Bail out! mke2fs lazy"; exit 1; }
check "the default image leaves inode tables unzeroed" bash -c "! dumpe2fs '$lazy' 2>/dev/null | grep -q ITABLE_ZEROED"
isz=$(dumpe2fs -h "$lazy" 2>/dev/null | sed -n 's/^Inode size: *//p')
t0=$(dumpe2fs "$lazy" 2>/dev/null | sed -n 's/^ *Inode table at \([0-9]*\)-\([0-9]*\).*/\1 \2/p' | sed -n 1p)
t1=$(dumpe2fs "$lazy" 2>/dev/null | sed -n 's/^ *Inode table at \([0-9]*\)-\([0-9]*\).*/\1 \2/p' | sed -n 2p)
read -r a0 b0 <<<"$t0"
read -r a1 b1 <<<"$t1"
# group 0: the last half of its table (its used inodes are the first 11)
half=$(((b0 - a0 + 1) / 2))
head -c $((half * 1024)) /dev/zero | tr '\0' '\245' | dd of="$lazy" bs=1024 seek=$((b0 - half + 1)) conv=notrunc status=none
head -c $(((b1 - a1 + 1) * 1024)) /dev/zero | tr '\0' '\245' | dd of="$lazy" bs=1024 seek="$a1" conv=notrunc status=none
lsum0=$(sha256sum <"$lazy")
"$SIMFS" mount -o ro "$lazy" "$mnt" || { echo "Bail out! ro mount lazy"; exit 1; }
check "read-only before the first read-write mount: lost+found stats" bash -c "[[ -d '$mnt/lost+found' ]] && stat '$mnt/lost+found' >/dev/null"
check "read-only before the first read-write mount: readdir of the root" bash -c "ls -a '$mnt' | grep -qx lost+found"
check "read-only before the first read-write mount: mkdir is EROFS" bash -c "! mkdir '$mnt/x' 2>/dev/null && [[ ! -e '$mnt/x' ]]"
"$SIMFS" umount "$mnt" || fail "umount lazy ro"
check "the read-only mount left every byte of the image" bash -c "[[ \$(sha256sum <'$lazy') == '$lsum0' ]]"
"$SIMFS" mount -o preset=ext4 "$lazy" "$mnt" || { echo "Bail out! mount lazy"; exit 1; }
for d in $(seq 1 12); do mkdir "$mnt/d$d" && for i in $(seq 1 150); do echo "$d $i" >"$mnt/d$d/f$i"; done; done
(cd "$mnt" && find . -path ./.simfs -prune -o -type f -print0 | sort -z | xargs -0 md5sum) >"$dir/lsums"
"$SIMFS" umount "$mnt" || fail "umount lazy"
check "e2fsck -fn is clean on the lazily made image" bash -c "e2fsck -fn '$lazy' >'$dir/lfsck' 2>&1" || cat "$dir/lfsck"
check "every group is now ITABLE_ZEROED" bash -c "[[ \$(dumpe2fs '$lazy' 2>/dev/null | grep -c ITABLE_ZEROED) == \$(dumpe2fs '$lazy' 2>/dev/null | grep -c '^Group [0-9]') ]]"
"$SIMFS" mount -o ro "$lazy" "$mnt" || { echo "Bail out! ro remount lazy"; exit 1; }
check "read-only remount: every file reads back" bash -c "cd '$mnt' && md5sum --quiet -c '$dir/lsums'"
"$SIMFS" umount "$mnt" || fail "umount lazy ro"
tap_done
