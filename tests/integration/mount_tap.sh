# tests/integration/mount_tap.sh - sourced by the shell tests that mount
# one simfs image: TAP helpers (ok, fail, check, tap_done) and a private
# temp dir $dir with a mount point $mnt, unmounted and removed on every
# exit path.  Before sourcing: SIMFS (the binary) and TAG (a word for the
# temp dir's name).  Exits 77 (skip) without /dev/fuse.
[[ -r /dev/fuse && -w /dev/fuse ]] || { echo "1..0 # SKIP no /dev/fuse"; exit 77; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/simfs-$TAG.XXXXXX")
mnt=$dir/mnt
mkdir -p "$mnt"
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
tap_done() { echo "1..$n"; [[ $failed == 0 ]]; }
