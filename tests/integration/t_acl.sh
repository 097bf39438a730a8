#!/usr/bin/env bash
# tests/integration/t_acl.sh - POSIX ACLs on a simfs mount, as on ext4:
# setfacl/getfacl round trip (stored in ext4's encoding under xattr name
# index 2/3, served in the VFS's), the kernel enforcing them (a named
# entry u:nobody:--- denies a user the mode would let in), the mode
# following the ACL and chmod following back, an ACL the mode says all
# of is not stored, default ACL inheritance (umask ignored under a
# default ACL, applied without one), the cost in the xattr statistics,
# everything read back after a remount, e2fsck -fn clean, -o noacl
# (EOPNOTSUPP, nothing listed, the ACLs kept).  Where loop devices work:
# the kernel's ext4 reads the same ACLs from the image, and ACLs the
# kernel wrote read back identically on simfs.
#
#   tests/integration/t_acl.sh BUILD/simfs
set -uo pipefail
SIMFS=$(realpath "${1:?usage: t_acl.sh SIMFS}")
TAG=tacl2
. "$(dirname "$0")/mount_tap.sh"
kmnt=$dir/kmnt
mkdir -p "$kmnt"
# the kernel mount, if any, goes before mount_tap.sh's cleanup
trap 'mountpoint -q "$kmnt" && umount "$kmnt"; cleanup' EXIT INT TERM
for t in setfacl getfacl setpriv getfattr; do
	command -v $t >/dev/null || { echo "Bail out! $t missing (tests/setup-debian.sh)"; exit 1; }
done
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
img=$dir/img
"$SIMFS" mkfs "$img" 64M >/dev/null || { echo "Bail out! mkfs"; exit 1; }
"$SIMFS" mount -o allow_other "$img" "$mnt" || { echo "Bail out! mount"; exit 1; }
chmod 755 "$mnt"
cd "$mnt" || exit 1

echo secret >f && chmod 644 f
check "nobody reads a 0644 file" bash -c "setpriv --reuid=65534 --regid=65534 --clear-groups cat f >/dev/null"
check "setfacl -m u:nobody:---,u:1234:rw,g:5678:r" setfacl -m u:nobody:---,u:1234:rw,g:5678:r f
getfacl -cn f >"$dir/f.acl" 2>/dev/null
printf '%s\n' user::rw- user:1234:rw- user:65534:--- group::r-- group:5678:r-- mask::rw- other::r-- >"$dir/f.want"
check "getfacl reads it back" diff <(grep . "$dir/f.acl") "$dir/f.want"
check "the mode's group bits are the mask (0664)" test "$(stat -c %a f)" = 664
check "u:nobody:--- denies nobody" bash -c "! setpriv --reuid=65534 --regid=65534 --clear-groups cat f 2>/dev/null"
check "uid 1234 may write (named entry)" setpriv --reuid=1234 --regid=1234 --clear-groups bash -c "echo more >>f"
check "setfacl -x u:nobody gives nobody access back" bash -c "setfacl -x u:nobody f && setpriv --reuid=65534 --regid=65534 --clear-groups cat f >/dev/null"
chmod 640 f
check "chmod 640 sets the mask and other entries" bash -c "getfacl -cn f 2>/dev/null | grep -qx 'mask::r--' && getfacl -cn f 2>/dev/null | grep -qx 'other::---'"
check "stored as the xattr system.posix_acl_access" bash -c "getfattr -m - -d f 2>/dev/null | grep -q '^system.posix_acl_access='"

touch plain
check "an ACL equal to the mode" setfacl -m u::rwx,g::r-x,o::r-x plain
check "... sets the mode (0755)" test "$(stat -c %a plain)" = 755
check "... and is not stored" bash -c "! getfattr -m - -d plain 2>/dev/null | grep -q posix_acl"
check "a default ACL on a file is refused" bash -c "! setfacl -d -m u:nobody:rwx plain 2>/dev/null"

mkdir d
check "setfacl -d on a directory" setfacl -d -m u:nobody:rwx,g::r-x,o::--- d
(umask 077 && touch d/new && mkdir d/sub)
check "inherited: umask 077 ignored, mode 0660 from 0666" test "$(stat -c %a d/new)" = 660
check "inherited: the file's access ACL" diff <(getfacl -cn d/new 2>/dev/null | grep .) \
	<(printf '%s\n' user::rw- 'user:65534:rwx	#effective:rw-' 'group::r-x	#effective:r--' mask::rw- other::---)
check "inherited: the subdirectory's default ACL is the parent's" \
	diff <(getfacl -cnd d 2>/dev/null) <(getfacl -cnd d/sub 2>/dev/null)
check "inherited: the subdirectory is 0770" test "$(stat -c %a d/sub)" = 770
check "nobody writes in d/sub (named entry)" as_nobody touch d/sub/by-nobody
(umask 027 && touch nodef)
check "no default ACL: the umask applies (0640)" test "$(stat -c %a nodef)" = 640
cd / || exit 1

sync_stats() { echo 1 >"$mnt/.simfs/sync" && python3 -c "
import json, sys
j = json.load(open('$mnt/.simfs/stats'))
print(j['ops']['by_type']['setxattr'],
      j['device']['submitted']['by_category']['xattr']['write_requests'])"; }
read -r nset nwr < <(sync_stats)
check "stats: setxattr requests counted ($nset)" test "${nset:-0}" -ge 4
check "stats: xattr blocks written to the device ($nwr)" test "${nwr:-0}" -ge 1

(cd "$mnt" && getfacl -Rn . 2>/dev/null) >"$dir/before"
"$SIMFS" umount "$mnt" || fail "umount"
check "e2fsck -fn is clean" bash -c "e2fsck -fn '$img' >/dev/null 2>&1"
"$SIMFS" mount -o allow_other "$img" "$mnt" || { echo "Bail out! remount"; exit 1; }
check "remount: getfacl -R is the same" diff "$dir/before" <(cd "$mnt" && getfacl -Rn . 2>/dev/null)
check "remount: still enforced" bash -c "setfacl -m u:nobody:--- '$mnt/d/new' && ! setpriv --reuid=65534 --regid=65534 --clear-groups cat '$mnt/d/new' 2>/dev/null"
(cd "$mnt" && getfacl -Rn . 2>/dev/null) >"$dir/before"
"$SIMFS" umount "$mnt" || fail "umount"

"$SIMFS" mount -o noacl "$img" "$mnt" || { echo "Bail out! mount noacl"; exit 1; }
check "noacl: setfacl fails with EOPNOTSUPP" bash -c "setfacl -m u:1:r '$mnt/plain' 2>&1 | grep -q 'Operation not supported'"
check "noacl: no system.posix_acl_* listed" bash -c "! getfattr -m - -d '$mnt/f' 2>/dev/null | grep -q posix_acl"
check "noacl: the umask applies under a default ACL (0600)" bash -c "(umask 077 && touch '$mnt/d/n2') && [[ \$(stat -c %a '$mnt/d/n2') == 600 ]] && rm '$mnt/d/n2'"
"$SIMFS" umount "$mnt" || fail "umount"
"$SIMFS" mount -o allow_other "$img" "$mnt" || { echo "Bail out! remount"; exit 1; }
check "after noacl: the ACLs are still there" diff "$dir/before" <(cd "$mnt" && getfacl -Rn . 2>/dev/null)
"$SIMFS" umount "$mnt" || fail "umount"

# the kernel's ext4 on the same image, read-only, then writing ACLs
if [[ $(id -u) == 0 && -e /dev/loop-control ]] && losetup -f >/dev/null 2>&1 &&
	mount -o loop,ro "$img" "$kmnt" 2>/dev/null; then
	check "kernel ext4: getfacl -R is the same" diff "$dir/before" <(cd "$kmnt" && getfacl -Rn . 2>/dev/null)
	umount "$kmnt"
	mount -o loop "$img" "$kmnt" || fail "kernel rw mount"
	mkdir "$kmnt/k" && setfacl -m u:4321:rwx,g:99:w "$kmnt/k" &&
		setfacl -d -m u:4321:r-x,m::rwx "$kmnt/k" && (umask 077 && echo x >"$kmnt/k/kf" && mkdir "$kmnt/k/ks")
	(cd "$kmnt" && getfacl -Rn . 2>/dev/null) >"$dir/kernel"
	umount "$kmnt"
	check "e2fsck -fn is clean after the kernel's writes" bash -c "e2fsck -fn '$img' >/dev/null 2>&1"
	"$SIMFS" mount "$img" "$mnt" || { echo "Bail out! mount after kernel"; exit 1; }
	check "ACLs the kernel wrote read back identically" diff "$dir/kernel" <(cd "$mnt" && getfacl -Rn . 2>/dev/null)
	check "the kernel's inheritance matches simfs's" bash -c "(umask 077 && touch '$mnt/k/sf' && mkdir '$mnt/k/ss') && diff <(getfacl -cn '$mnt/k/kf' 2>/dev/null) <(getfacl -cn '$mnt/k/sf' 2>/dev/null) && diff <(getfacl -cn '$mnt/k/ks' 2>/dev/null) <(getfacl -cn '$mnt/k/ss' 2>/dev/null)"
	"$SIMFS" umount "$mnt" || fail "umount"
	check "e2fsck -fn is clean at the end" bash -c "e2fsck -fn '$img' >/dev/null 2>&1"
else
	echo "# no loop device or kernel ext4 mount here: the kernel cross-check is left out"
fi
tap_done
