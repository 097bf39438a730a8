#!/usr/bin/env bash
# tests/integration/t_ext4compat.sh - ext4 behaviour through a mount:
# nodiratime / diratime (a readdir moves a directory's atime unless
# nodiratime; t_mount8.sh passes both from fstab), and renameat2 RENAME_WHITEOUT (the
# old name left to a character device 0:0, NOREPLACE and EXCHANGE as the
# kernel has them): the same results as a kernel ext4 loop mount where
# loop devices work, and e2fsck -fn clean after.
#
#   tests/integration/t_ext4compat.sh BUILD/simfs
set -uo pipefail
SIMFS=${1:?usage: t_ext4compat.sh SIMFS}
TAG=text4c
. "$(dirname "$0")/mount_tap.sh"
here=$(dirname "$0")
ext=$dir/ext
mkdir -p "$ext"
trap 'mountpoint -q "$ext" && umount "$ext"; cleanup' EXIT INT TERM

img=$dir/img
"$SIMFS" mkfs --preset ext4 "$img" 64M >/dev/null || { echo "Bail out! mkfs"; exit 1; }

# atime of a directory after ls, its atime set to 2000 first
diratime_after_ls() { # MOUNT-OPTIONS -> prints the atime seen after ls
	"$SIMFS" mount -o "preset=ext4$1" "$img" "$mnt" || { echo mount-failed; return; }
	mkdir -p "$mnt/d"
	touch -a -d 2000-01-01T00:00:00Z "$mnt/d"
	ls "$mnt/d" >/dev/null
	stat -c %X "$mnt/d"
	"$SIMFS" umount "$mnt"
}
a=$(diratime_after_ls "")
check "default (relatime): ls moves a directory's atime" test "$a" != 946684800 -a "$a" != mount-failed
a=$(diratime_after_ls ",nodiratime")
check "nodiratime: ls leaves a directory's atime" test "$a" = 946684800
a=$(diratime_after_ls ",nodiratime,diratime")
check "diratime after nodiratime: ls moves it again" test "$a" != 946684800 -a "$a" != mount-failed
"$SIMFS" mount -o preset=ext4,nodiratime "$img" "$mnt" && {
	echo data >"$mnt/f"
	touch -a -d 2000-01-01T00:00:00Z "$mnt/f"
	cat "$mnt/f" >/dev/null
	check "nodiratime: a file's read still moves its atime" test "$(stat -c %X "$mnt/f")" != 946684800
	"$SIMFS" umount "$mnt"
}
"$SIMFS" mount -o preset=ext4 "$img" "$mnt" || { echo "Bail out! mount"; exit 1; }
mkdir "$mnt/w"
got=$(python3 "$here/t_whiteout.py" "$mnt/w" 2>&1)
check "RENAME_WHITEOUT leaves a character device 0:0 at the old name" \
	bash -c "grep -qx 'src=chr dev=0:0 mode=0 nlink=1' <<<'$got' && grep -qx 'rename=0' <<<'$got'"
check "RENAME_WHITEOUT: the data is at the new name" grep -qx 'dst=x' <<<"$got"
check "RENAME_WHITEOUT|RENAME_EXCHANGE: EINVAL" grep -qx 'exchange=EINVAL' <<<"$got"
check "RENAME_WHITEOUT|RENAME_NOREPLACE over a name: EEXIST" grep -qx 'noreplace_over_existing=EEXIST' <<<"$got"
"$SIMFS" umount "$mnt"
check "e2fsck -fn is clean after the whiteouts" e2fsck -fn "$img" >/dev/null 2>&1
check "debugfs sees a whiteout (character device) at w/c" \
	bash -c "debugfs -R 'stat /w/c' '$img' 2>/dev/null | grep -q 'Type: character special'"

truncate -s 64M "$dir/ext.img"
if mkfs.ext4 -q "$dir/ext.img" && mount -o loop "$dir/ext.img" "$ext" 2>/dev/null; then
	mkdir "$ext/w"
	want=$(python3 "$here/t_whiteout.py" "$ext/w" 2>&1)
	umount "$ext"
	if [[ $got == "$want" ]]; then
		ok "RENAME_WHITEOUT: every case as kernel ext4"
	else
		fail "RENAME_WHITEOUT differs from kernel ext4: simfs [$got] ext4 [$want]"
	fi
else
	echo "# no loop device: the kernel ext4 comparison is left out"
fi
# dir_nlink: a directory whose link count is 1 (ext4's "more than 65,000
# subdirectories") keeps 1 through mkdir, rmdir and renames in and out
nl=$dir/nlink.img
mke2fs -q -F -t ext4 "$nl" 32M || { echo "Bail out! mke2fs nlink"; exit 1; }
debugfs -w -R "mkdir /many" "$nl" >/dev/null 2>&1
debugfs -w -R "mkdir /many/sub" "$nl" >/dev/null 2>&1
debugfs -w -R "sif /many links_count 1" "$nl" >/dev/null 2>&1
"$SIMFS" mount "$nl" "$mnt" || { echo "Bail out! mount nlink"; exit 1; }
check "dir_nlink: the image's count of 1 is shown" bash -c "[[ \$(stat -c %h '$mnt/many') == 1 ]]"
mkdir "$mnt/many/a" "$mnt/other" && rmdir "$mnt/many/sub" && mv "$mnt/many/a" "$mnt/other/a" &&
	mv "$mnt/other/a" "$mnt/many/b"
check "dir_nlink: the count stays 1 through mkdir, rmdir and renames" bash -c "[[ \$(stat -c %h '$mnt/many') == 1 ]]"
check "dir_nlink: the other directory's count is exact" bash -c "[[ \$(stat -c %h '$mnt/other') == 2 ]]"
"$SIMFS" umount "$mnt"
check "dir_nlink: the count is 1 on the image" bash -c "debugfs -R 'stat /many' '$nl' 2>/dev/null | grep -q 'Links: 1'"
tap_done
