#!/usr/bin/env bash
# tests/integration/t_acl_sgid.sh - setfacl and the set-group-ID bit, as
# the kernel's ext4 does it (posix_acl_update_mode, called from
# ext4_set_acl): an access ACL set by the owner who is not in the file's
# group and lacks CAP_FSETID takes S_ISGID off; set by a member of the
# group, or by root, it stays.  The same steps run on a simfs mount and on
# a kernel ext4 loop mount; each mode afterwards must be the same.  On
# simfs the kernel's FUSE_SETXATTR_ACL_KILL_SGID reaches the daemon
# through the FUSE_SETXATTR_EXT negotiation (simfs/fuse.c, rule 13).
#
#   tests/integration/t_acl_sgid.sh BUILD/simfs
set -uo pipefail
SIMFS=$(realpath "${1:?usage: t_acl_sgid.sh SIMFS}")
TAG=taclsgid
. "$(dirname "$0")/mount_tap.sh"
kmnt=$dir/kmnt
mkdir -p "$kmnt"
trap 'mountpoint -q "$kmnt" && umount "$kmnt"; cleanup' EXIT INT TERM
for t in setfacl setpriv mkfs.ext4; do
	command -v $t >/dev/null || { echo "Bail out! $t missing (tests/setup-debian.sh)"; exit 1; }
done
[[ $(id -u) == 0 ]] || { echo "1..0 # SKIP needs root (setpriv to other users)"; exit 77; }

# steps DIR: prints one "name mode" line per case
steps() {
	local d=$1 who
	mkdir "$d/t" && chmod 777 "$d/t"
	# owner 1234, group 5678, mode 2775 (set-group-ID on a file)
	for who in outsider member root outsider-default; do
		touch "$d/t/$who" && chown 1234:5678 "$d/t/$who" && chmod 2775 "$d/t/$who"
	done
	setpriv --reuid=1234 --regid=1234 --clear-groups setfacl -m u:65534:r "$d/t/outsider"
	setpriv --reuid=1234 --regid=5678 --clear-groups setfacl -m u:65534:r "$d/t/member"
	setfacl -m u:65534:r "$d/t/root"
	# an ACL the mode says all of (not stored, only the mode changes)
	setpriv --reuid=1234 --regid=1234 --clear-groups setfacl -m g::r-x "$d/t/outsider-default"
	for who in outsider member root outsider-default; do
		echo "$who $(stat -c %a "$d/t/$who")"
	done
}

img=$dir/img
chmod 755 "$dir" # the other users walk into both mounts
"$SIMFS" mkfs "$img" 64M >/dev/null || { echo "Bail out! mkfs"; exit 1; }
"$SIMFS" mount -o allow_other "$img" "$mnt" || { echo "Bail out! mount"; exit 1; }
chmod 755 "$mnt"
steps "$mnt" >"$dir/simfs.out" 2>"$dir/simfs.err"
cat "$dir/simfs.out" | sed 's/^/# simfs: /'
check "setfacl by the owner outside the group clears set-group-ID (0775)" \
	grep -qx 'outsider 775' "$dir/simfs.out"
check "setfacl by a member of the group keeps it" grep -qx 'member 2775' "$dir/simfs.out"
check "setfacl by root keeps it" grep -qx 'root 2775' "$dir/simfs.out"
check "no setfacl failed" test ! -s "$dir/simfs.err" || sed 's/^/# /' "$dir/simfs.err"
"$SIMFS" umount "$mnt" || fail "umount"
check "e2fsck -fn is clean" bash -c "e2fsck -fn '$img' >/dev/null 2>&1"

if losetup -f >/dev/null 2>&1 && truncate -s 64M "$dir/ext.img" &&
	mkfs.ext4 -qF "$dir/ext.img" &&
	mount -o loop "$dir/ext.img" "$kmnt" 2>/dev/null; then
	steps "$kmnt" >"$dir/kernel.out" 2>&1
	umount "$kmnt"
	sed 's/^/# kernel ext4: /' "$dir/kernel.out"
	check "every mode as on the kernel's ext4" diff "$dir/kernel.out" "$dir/simfs.out"
else
	echo "# no loop device: the kernel ext4 comparison is left out"
fi
tap_done
