#!/usr/bin/env bash
# tests/integration/t_acl_image.sh - an image holding a POSIX ACL as the
# kernel and e2fsprogs write it (xattr name index 2, an empty name, the
# ext4 ACL encoding; put there by debugfs) is read as valid: listing and
# reading the file's other attributes work, the filesystem stays
# writable, a new attribute on the same file keeps the ACL byte for byte,
# and e2fsck -fn stays clean.  Once in the inode body and once in an
# xattr block (128-byte inodes have no in-inode area).  Then the trusted.*
# and security.* namespaces: root sets and reads them, they land on the
# image under ext4's name indexes (debugfs reads them back), another user
# sees security.* but neither sees nor sets trusted.*, as on ext4, and
# that user's write drops setuid and security.capability.
#
#   tests/integration/t_acl_image.sh BUILD/simfs
set -uo pipefail
SIMFS=${1:?usage: t_acl_image.sh SIMFS}
TAG=tacl
. "$(dirname "$0")/mount_tap.sh"
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
img=$dir/img256
"$SIMFS" mount -o allow_other "$img" "$mnt" || { echo "Bail out! mount"; exit 1; }
chmod 755 "$dir"
chmod 666 "$mnt/f"
check "root sets trusted.a" setfattr -n trusted.a -v ta "$mnt/f"
check "root sets security.b" setfattr -n security.b -v sb "$mnt/f"
check "root reads trusted.a back" bash -c "getfattr --only-values -n trusted.a '$mnt/f' | grep -qx ta"
getfattr -d -m - "$mnt/f" >"$dir/all" 2>&1
check "root lists every namespace" bash -c "grep -q trusted.a '$dir/all' && grep -q security.b '$dir/all' && grep -q user.k '$dir/all'"
if command -v setpriv >/dev/null; then
	as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	as_nobody getfattr -d -m - "$mnt/f" >"$dir/nobody" 2>&1
	check "another user sees security.b and user.k" bash -c "grep -q security.b '$dir/nobody' && grep -q user.k '$dir/nobody'"
	check "another user does not see trusted.a" bash -c "! grep -q trusted '$dir/nobody'"
	check "another user cannot set trusted.z" bash -c "! setpriv --reuid=65534 --regid=65534 --clear-groups setfattr -n trusted.z -v 1 '$mnt/f' 2>/dev/null"
	# a write by someone else drops setuid and security.capability, and
	# stat says so at once (the kernel's cached mode is invalidated)
	chmod 4777 "$mnt/f"
	setfattr -n security.capability -v 0sAQAAAgAgAAAAAAAAAAAAAAAAAAA= "$mnt/f"
	as_nobody sh -c "echo y >>'$mnt/f'"
	check "another user's write clears setuid at once" test "$(stat -c %a "$mnt/f")" = 777
	check "and removes security.capability" bash -c "! getfattr -n security.capability '$mnt/f' >/dev/null 2>&1"
	chmod 666 "$mnt/f"
fi
"$SIMFS" umount "$mnt" || fail "umount"
debugfs -R "ea_list /f" "$img" >"$dir/ea" 2>/dev/null
check "debugfs reads trusted.a and security.b from the image" bash -c "grep -q 'trusted.a.*ta' '$dir/ea' && grep -q 'security.b.*sb' '$dir/ea'"
e2fsck -fn "$img" >"$dir/fsck" 2>&1
check "e2fsck -fn clean after the namespaces" test $? = 0
tap_done
