#!/usr/bin/env bash
# tests/integration/t_acl_image.sh - an image holding a POSIX ACL as the
# kernel and e2fsprogs write it (xattr name index 2, an empty name, the
# ext4 ACL encoding; put there by debugfs) is read as valid: listing and
# reading the file's other attributes work, the filesystem stays
# writable, a new attribute on the same file keeps the ACL byte for byte,
# and e2fsck -fn stays clean.  Once in the inode body and once in an
# xattr block (128-byte inodes have no in-inode area).
#
#   tests/integration/t_acl_image.sh BUILD/simfs
set -uo pipefail
SIMFS=${1:?usage: t_acl_image.sh SIMFS}
[[ -r /dev/fuse && -w /dev/fuse ]] || { echo "1..0 # SKIP no /dev/fuse"; exit 77; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/simfs-tacl.XXXXXX")
mnt=$dir/mnt
cleanup() {
	mountpoint -q "$mnt" && { "$SIMFS" umount "$mnt" >/dev/null 2>&1 || umount -l "$mnt"; }
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
fail() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
check() { # check DESCRIPTION CMD...
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}
mkdir -p "$mnt"
# u::rw-, g::r--, o::r-- in the POSIX xattr format debugfs converts from
printf '\x02\x00\x00\x00\x01\x00\x06\x00\xff\xff\xff\xff\x04\x00\x04\x00\xff\xff\xff\xff\x20\x00\x04\x00\xff\xff\xff\xff' >"$dir/acl.bin"

for isize in 256 128; do
	img=$dir/img$isize
	"$SIMFS" mkfs -I "$isize" "$img" 64M >/dev/null 2>&1 ||
		mke2fs -q -F -t ext2 -O ^dir_index -I "$isize" "$img" 64M >/dev/null ||
		{ echo "Bail out! mkfs"; exit 1; }
	"$SIMFS" mount "$img" "$mnt" || { echo "Bail out! mount"; exit 1; }
	echo hi >"$mnt/f" && setfattr -n user.k -v v1 "$mnt/f"
	"$SIMFS" umount "$mnt"
	debugfs -w -R "ea_set -f $dir/acl.bin /f system.posix_acl_access" "$img" >/dev/null 2>&1
	debugfs -R "ea_list /f" "$img" 2>/dev/null | grep posix_acl_access >"$dir/acl0"
	check "$isize-byte inodes: debugfs put the ACL on the image" test -s "$dir/acl0"
	"$SIMFS" mount "$img" "$mnt" || { echo "Bail out! mount"; exit 1; }
	check "$isize: the file's attributes list and read" bash -c "getfattr -d '$mnt/f' 2>&1 | grep -q 'user.k=\"v1\"'"
	check "$isize: a new attribute on the same file" setfattr -n user.j -v v2 "$mnt/f"
	check "$isize: the filesystem stays writable" bash -c "echo more >'$mnt/g'"
	"$SIMFS" umount "$mnt" || fail "$isize: umount"
	debugfs -R "ea_list /f" "$img" 2>/dev/null | grep posix_acl_access >"$dir/acl1"
	check "$isize: the ACL is kept byte for byte" cmp -s "$dir/acl0" "$dir/acl1"
	check "$isize: user.j is on the image" bash -c "debugfs -R 'ea_list /f' '$img' 2>/dev/null | grep -q 'user.j'"
	e2fsck -fn "$img" >"$dir/fsck" 2>&1
	check "$isize: e2fsck -fn clean" test $? = 0
done
echo "1..$n"
[[ $failed == 0 ]]
