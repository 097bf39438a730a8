# tests/integration/mount_tap.sh - sourced by the shell tests that mount
# one simfs image: the TAP helpers of tap.sh (ok, fail, check, tap_done)
# and a private temp dir $dir with a mount point $mnt, unmounted and
# removed on every exit path.  Before sourcing: SIMFS (the binary) and TAG
# (a word for the temp dir's name).  Exits 77 (skip) without /dev/fuse.
[[ -r /dev/fuse && -w /dev/fuse ]] || { echo "1..0 # SKIP no /dev/fuse"; exit 77; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/simfs-$TAG.XXXXXX")
mnt=$dir/mnt
mkdir -p "$mnt"
cleanup() {
	mountpoint -q "$mnt" && { "$SIMFS" umount "$mnt" >/dev/null 2>&1 || umount -l "$mnt"; }
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
