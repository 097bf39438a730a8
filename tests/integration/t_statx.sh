#!/usr/bin/env bash
# tests/integration/t_statx.sh - birth time through statx(2) on a simfs
# mount (FUSE_STATX, answered by the daemon: fuse.c rule 12): the time
# is the inode's i_crtime as debugfs shows it; on an image with 256-byte
# inodes written by a kernel ext2 loop mount, simfs reports the birth
# times the kernel reported; with 128-byte inodes neither reports one.
# STATX_DIOALIGN: the kernel's ext4 reports 512,512; FUSE's statx reply
# has no field for it, so simfs cannot (doc/user-guide.md).  With trace=
# the daemon leaves FUSE_STATX to libfuse: no birth time, stat still works.
#
#   tests/integration/t_statx.sh BUILD/simfs BUILD/t_statx_probe
set -uo pipefail
SIMFS=${1:?usage: t_statx.sh SIMFS PROBE}
PROBE=${2:?usage: t_statx.sh SIMFS PROBE}
TAG=tstatx
. "$(dirname "$0")/mount_tap.sh"
ext=$dir/ext
mkdir -p "$ext"
trap 'mountpoint -q "$ext" && umount "$ext"; cleanup' EXIT INT TERM

# debugfs's crtime of PATH in IMAGE as SEC.NSEC (epoch bits included)
crtime() { # IMAGE PATH
	local h s e
	h=$(debugfs -R "stat $2" "$1" 2>/dev/null | sed -n 's/^ *crtime: 0x\([0-9a-f]*\):\([0-9a-f]*\).*/\1 \2/p')
	[[ -n $h ]] || { echo none; return; }
	s=$((16#${h% *})) e=$((16#${h#* }))
	((s >= 1 << 31)) && s=$((s - (1 << 32)))
	printf '%d.%09d\n' $((s + (e & 3) * (1 << 32))) $((e >> 2))
}
probe() { "$PROBE" "$1" | sed -n "s/^$2=//p"; }

# 1. simfs's own image, 256-byte inodes
img=$dir/img
"$SIMFS" mkfs --preset ext4 "$img" 64M >/dev/null || { echo "Bail out! mkfs"; exit 1; }
"$SIMFS" mount -o preset=ext4 "$img" "$mnt" || { echo "Bail out! mount"; exit 1; }
echo x >"$mnt/f"
mkdir "$mnt/d"
sleep 1.1
touch "$mnt/f" # moves mtime/ctime, never the birth time
bf=$(probe "$mnt/f" btime)
bd=$(probe "$mnt/d" btime)
sw=$(stat -c %W "$mnt/f")
sy=$(stat -c %Y "$mnt/f")
check "statx basic fields come back with the birth time" test "$(probe "$mnt/f" basic)" = yes
check "stat -c %W shows a birth time" test "$sw" != 0 -a "$sw" != -
check "the birth time is before the later mtime" test "$sw" -lt "$sy"
check "STATX_DIOALIGN is not reported (no field in FUSE's reply)" \
	test "$(probe "$mnt/f" dioalign)" = none
"$SIMFS" umount "$mnt"
check "file: statx btime is debugfs's crtime ($bf)" test "$bf" = "$(crtime "$img" /f)"
check "directory: statx btime is debugfs's crtime ($bd)" test "$bd" = "$(crtime "$img" /d)"
check "stat -c %W is its seconds" test "$sw" = "${bf%.*}"
check "e2fsck -fn is clean" bash -c "e2fsck -fn '$img' >/dev/null 2>&1"

# 2. with trace= the request goes to libfuse (ENOSYS): no birth time
"$SIMFS" mount -o "preset=ext4,trace=$dir/t.trace" "$img" "$mnt" || { echo "Bail out! mount trace"; exit 1; }
check "trace=: statx gives no birth time" test "$(probe "$mnt/f" btime)" = none
check "trace=: the basic fields still come back" test "$(probe "$mnt/f" basic)" = yes
"$SIMFS" umount "$mnt"

# 3. images the kernel wrote: ext2 with 256- and 128-byte inodes
for isz in 256 128; do
	k=$dir/k$isz.img
	truncate -s 64M "$k"
	if ! mkfs.ext2 -q -F -I "$isz" "$k" || ! mount -o loop "$k" "$ext" 2>/dev/null; then
		echo "# no loop mount: kernel comparison for $isz-byte inodes skipped"
		continue
	fi
	echo y >"$ext/g"
	kb=$(probe "$ext/g" btime)
	kdio=$(probe "$ext/g" dioalign)
	umount "$ext"
	"$SIMFS" mount "$k" "$mnt" || { fail "mount kernel image I=$isz"; continue; }
	sb=$(probe "$mnt/g" btime)
	"$SIMFS" umount "$mnt"
	if [[ $isz == 256 ]]; then
		check "kernel, 256-byte inodes: a birth time ($kb)" test "$kb" != none
		check "kernel: STATX_DIOALIGN 512,512 (the O_DIRECT unit simfs applies)" test "$kdio" = 512,512
	else
		check "kernel, 128-byte inodes: no birth time" test "$kb" = none
	fi
	check "simfs, $isz-byte inodes: the kernel's answer ($sb)" test "$sb" = "$kb"
done

# 4. simfs's 128-byte inodes: no room for i_crtime
"$SIMFS" mkfs -I 128 "$dir/small" 32M >/dev/null || { echo "Bail out! mkfs -I 128"; exit 1; }
"$SIMFS" mount "$dir/small" "$mnt" || { echo "Bail out! mount small"; exit 1; }
echo z >"$mnt/h"
check "simfs 128-byte inodes: no birth time" test "$(probe "$mnt/h" btime)" = none
check "simfs 128-byte inodes: stat -c %w is -" test "$(stat -c %w "$mnt/h")" = -
"$SIMFS" umount "$mnt"
tap_done
