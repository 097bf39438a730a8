#!/usr/bin/env bash
# tests/integration/t_mount8.sh - simfs through mount(8), as an fstab line
# uses it: `mount -t fuse.simfs IMG MNT -o preset=...,nofail,x-...`, the
# fstab form (`mount -T FSTAB MNT`) and the old "simfs#IMG" form of type
# fuse.  Each case writes a file, unmounts with plain umount(8), waits for
# the daemon to release the image (flock, as simfs umount does: the
# kernel's umount does not wait for the write-back), then checks that the
# image is marked clean, e2fsck -fn is clean and the file reads back.
#
# mount(8) clears PATH before running its helper, so mount.fuse3's
# `/bin/sh -c 'simfs ...'` finds simfs only in the shell's default path
# (/usr/local/sbin first).  The test runs in a private mount namespace
# (unshare -m) where a temporary folder holding a `simfs` symlink to the
# build's binary is bind-mounted over /usr/local/sbin; nothing outside the
# namespace sees it.  SKIP (77) without mount.fuse3 (package fuse3), and
# where mounting is impossible anyway (not root, no /dev/fuse, no unshare).
#
#   tests/integration/t_mount8.sh BUILD/simfs
set -uo pipefail
. "$(dirname "$0")/tap.sh"
tap_tscale
PATH=$PATH:/usr/sbin:/sbin
if [[ ${1:-} == --inner ]]; then
	inner=1
	shift
fi
SIMFS=${1:?usage: t_mount8.sh SIMFS}
SIMFS=$(realpath "$SIMFS")

if [[ -z ${inner:-} ]]; then
	if ! command -v mount.fuse3 >/dev/null && [[ ! -x /sbin/mount.fuse ]]; then
		echo "SKIP: mount.fuse3 is missing (install fuse3)"
		exit 77
	fi
	if [[ $(id -u) != 0 || ! -c /dev/fuse ]] || ! command -v unshare >/dev/null; then
		echo "SKIP: needs root, /dev/fuse and unshare(1) to run mount(8)"
		exit 77
	fi
	exec unshare -m --propagation private "$BASH" "$0" --inner "$SIMFS"
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/simfs-tmount8.XXXXXX")
mnt=$dir/mnt
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	if mountpoint -q "$mnt"; then
		umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
		flock -x -w $((60 * tscale)) "$dir/img" true 2>/dev/null
	fi
	mountpoint -q /usr/local/sbin && umount /usr/local/sbin 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM

mkdir -p "$mnt" "$dir/bin"
ln -s "$SIMFS" "$dir/bin/simfs"
if ! mount --bind "$dir/bin" /usr/local/sbin; then
	echo "SKIP: cannot bind-mount over /usr/local/sbin in a mount namespace"
	exit 77
fi

# one_case NAME MOUNT-COMMAND...: mount, write, umount, wait, check
one_case() {
	local name=$1 text="written through $1"
	shift
	rm -f "$dir/img"
	if ! "$SIMFS" mkfs -j "$dir/img" 32M >"$dir/mkfs.out" 2>&1; then
		fail "$name: mkfs: $(cat "$dir/mkfs.out")"
		return
	fi
	if ! "$@" >"$dir/mount.out" 2>&1; then
		fail "$name: $* failed: $(cat "$dir/mount.out")"
		return
	fi
	if findmnt -n -o FSTYPE "$mnt" | grep -qx fuse.simfs; then
		ok "$name: mounted as fuse.simfs"
	else
		fail "$name: $mnt is not a fuse.simfs mount: $(findmnt -n "$mnt")"
	fi
	echo "$text" >"$mnt/hello" && mkdir "$mnt/d" && cp "$SIMFS" "$mnt/d/bin"
	if ! umount "$mnt"; then
		fail "$name: umount failed"
		return
	fi
	# the kernel's umount returns before the daemon's write-back ends
	if flock -x -w $((120 * tscale)) "$dir/img" true; then
		ok "$name: the daemon released the image"
	else
		fail "$name: the daemon still holds the image after $((120 * tscale)) s"
		return
	fi
	if dumpe2fs -h "$dir/img" 2>/dev/null | grep -q '^Filesystem state: *clean$'; then
		ok "$name: the image is marked clean"
	else
		fail "$name: not marked clean: $(dumpe2fs -h "$dir/img" 2>&1 | grep -i state)"
	fi
	if e2fsck -fn "$dir/img" >"$dir/fsck.out" 2>&1; then
		ok "$name: e2fsck -fn clean"
	else
		fail "$name: e2fsck: $(cat "$dir/fsck.out")"
	fi
	if [[ $(debugfs -R "cat /hello" "$dir/img" 2>/dev/null) == "$text" ]] &&
		debugfs -R "dump /d/bin $dir/bin.back" "$dir/img" >/dev/null 2>&1 &&
		cmp -s "$SIMFS" "$dir/bin.back"; then
		ok "$name: the data reads back"
	else
		fail "$name: the data did not read back"
	fi
	rm -f "$dir/bin.back"
}

# what mount(8) and fstab pass to every helper: nothing for simfs, and no
# reason to refuse the mount
generic=noauto,nofail,_netdev,x-systemd.automount,defaults,norelatime,relatime,nodiratime,diratime,dev,suid

one_case "mount -t fuse.simfs" \
	mount -t fuse.simfs "$dir/img" "$mnt" -o "preset=ext4,$generic"
printf '%s %s fuse.simfs preset=ext3,commit=1,%s 0 0\n' "$dir/img" "$mnt" \
	"$generic" >"$dir/fstab"
one_case "an fstab line" mount -T "$dir/fstab" "$mnt"
one_case "simfs#IMAGE" mount -t fuse "simfs#$dir/img" "$mnt" -o preset=ext4

# the generic options also work on simfs mount itself
one_case "simfs mount -o generic" \
	"$SIMFS" mount -o "preset=ext4,$generic" "$dir/img" "$mnt"

tap_done
