#!/usr/bin/env bash
# tests/integration/t_tmpfile.sh - O_TMPFILE on a simfs mount (FUSE_TMPFILE
# answered by the daemon, fuse.c rule 12): a nameless file linked with
# linkat(AT_EMPTY_PATH) keeps its bytes across a remount; one never
# linked is freed at close; the errnos and link counts are those of a
# kernel ext4 loop mount (t_tmpfile.py); a tmpfile open when the daemon
# is killed is on the orphan list (e2fsck clears it from there), and the
# next mount frees it: e2fsck -fn clean.  With trace= O_TMPFILE gives
# EOPNOTSUPP.
#
#   tests/integration/t_tmpfile.sh BUILD/simfs
set -uo pipefail
SIMFS=${1:?usage: t_tmpfile.sh SIMFS}
TAG=ttmpf
. "$(dirname "$0")/mount_tap.sh"
here=$(dirname "$0")
ext=$dir/ext
mkdir -p "$ext"
pid=
trap '[[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null; mountpoint -q "$ext" && umount "$ext"; cleanup' EXIT INT TERM
fsck_clean() { e2fsck -fn "$1" >/dev/null 2>&1; }
free_inodes() { dumpe2fs -h "$1" 2>/dev/null | sed -n 's/^Free inodes: *//p'; }

img=$dir/img
"$SIMFS" mkfs --preset ext4 "$img" 64M >/dev/null || { echo "Bail out! mkfs"; exit 1; }
before=$(free_inodes "$img")
"$SIMFS" mount -o preset=ext4 "$img" "$mnt" || { echo "Bail out! mount"; exit 1; }
got=$( (umask 022; python3 "$here/t_tmpfile.py" "$mnt") 2>&1)
echo "$got" | sed 's/^/# simfs: /'
check "a tmpfile has no link" grep -qx 'nlink 0' <<<"$got"
check "linkat(AT_EMPTY_PATH) gives it one" grep -qx 'after link nlink 1' <<<"$got"
check "its mode is the one asked for, less the umask" grep -qx 'mode 0o100640' <<<"$got"
check "O_TMPFILE without write access: EINVAL" grep -qx 'rdonly EINVAL' <<<"$got"
check "O_TMPFILE on a file: ENOTDIR" grep -qx 'onfile ENOTDIR' <<<"$got"
check "an O_EXCL tmpfile cannot be linked: ENOENT" grep -qx 'excl_link ENOENT' <<<"$got"
check "the linked file's bytes" test "$(cat "$mnt/named" 2>&1)" = tmpdata
"$SIMFS" umount "$mnt" || fail "umount"
check "e2fsck -fn clean" fsck_clean "$img"
# named, plus p if /proc/self/fd linking worked
want=$((before - 1 - $(grep -c 'proc_link ok' <<<"$got")))
check "the unlinked tmpfiles were freed ($want inodes free)" test "$(free_inodes "$img")" = "$want"
"$SIMFS" mount -o preset=ext4 "$img" "$mnt" || { echo "Bail out! remount"; exit 1; }
check "after a remount: the linked tmpfile's bytes" test "$(cat "$mnt/named" 2>&1)" = tmpdata
"$SIMFS" umount "$mnt"

truncate -s 64M "$dir/ext.img"
if mkfs.ext4 -q -F "$dir/ext.img" && mount -o loop "$dir/ext.img" "$ext" 2>/dev/null; then
	want=$( (umask 022; python3 "$here/t_tmpfile.py" "$ext") 2>&1)
	umount "$ext"
	echo "$want" | sed 's/^/# ext4: /'
	check "every step as on a kernel ext4 mount" test "$got" = "$want"
else
	echo "# no loop mount: comparison with kernel ext4 skipped"
fi

# with trace= the request is left to libfuse: EOPNOTSUPP, as documented
"$SIMFS" mount -o "preset=ext4,trace=$dir/t.trace" "$img" "$mnt" || { echo "Bail out! mount trace"; exit 1; }
check "trace=: O_TMPFILE gives EOPNOTSUPP" python3 -c "
import errno, os, sys
try:
    os.open(sys.argv[1], os.O_TMPFILE | os.O_RDWR)
except OSError as e:
    sys.exit(e.errno != errno.EOPNOTSUPP)
sys.exit(1)" "$mnt"
"$SIMFS" umount "$mnt"

# a tmpfile open when the daemon dies: on the orphan list after fsync
"$SIMFS" mount -f -o preset=ext4,commit=600 "$img" "$mnt" &
pid=$!
for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
python3 - "$mnt" >"$dir/crash.out" 2>&1 <<'PY' &
import os, sys, time
fd = os.open(sys.argv[1], os.O_TMPFILE | os.O_RDWR)
os.write(fd, b"y" * 65536)
os.fsync(fd)
print(os.fstat(fd).st_ino, flush=True)
time.sleep(60)
PY
holder=$!
for _ in $(seq 1 100); do [[ -s $dir/crash.out ]] && break; sleep 0.1; done
ino=$(head -1 "$dir/crash.out")
kill -KILL "$pid"
wait "$pid" 2>/dev/null
pid=
kill -KILL "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
umount -l "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null
check "the holder saw its tmpfile's inode ($ino)" test -n "$ino" -a "$ino" -gt 0 2>/dev/null
cp "$img" "$dir/e2.img"
e2fsck -fy "$dir/e2.img" >"$dir/e2.out" 2>&1
check "e2fsck finds it on the orphan list" grep -q "Clearing orphaned inode $ino " "$dir/e2.out"
"$SIMFS" mount -o preset=ext4 "$img" "$mnt" || { echo "Bail out! mount after kill"; exit 1; }
check "the mount after the kill keeps the linked file" test "$(cat "$mnt/named" 2>&1)" = tmpdata
"$SIMFS" umount "$mnt"
check "the next mount freed it: e2fsck -fn clean" fsck_clean "$img"
check "its inode is free again" bash -c "debugfs -R 'testi <$ino>' '$img' 2>/dev/null | grep -q 'not in use'"
tap_done
