#!/usr/bin/env bash
# tests/integration/t_mmap.sh - mmap(MAP_SHARED) on a simfs mount (the
# kernel allows it on direct_io files once INIT negotiated
# FUSE_DIRECT_IO_ALLOW_MMAP, fuse.c rule 9): bytes stored through a
# mapping are seen by read(2) on another descriptor without msync, bytes
# written by write(2) are seen through the mapping, msync'ed bytes are on
# the image after a remount; SQLite in WAL mode (its -shm index is a
# shared mapping) commits 300 one-row transactions and passes
# integrity_check before and after a remount; e2fsck -fn stays clean.
# With -o noshared_mmap, MAP_SHARED fails with ENODEV, MAP_PRIVATE still
# works, and .simfs/stats.txt says which case the mount is in.
#
#   tests/integration/t_mmap.sh BUILD/simfs
set -uo pipefail
SIMFS=${1:?usage: t_mmap.sh SIMFS}
TAG=tmmap
. "$(dirname "$0")/mount_tap.sh"
img=$dir/img
"$SIMFS" mkfs "$img" 64M >/dev/null || { echo "Bail out! mkfs"; exit 1; }
"$SIMFS" mount "$img" "$mnt" 2>"$dir/mount.err" || { echo "Bail out! mount"; exit 1; }
check "the mount says shared mappings are allowed" \
	grep -q '^shared mmap: allowed' "$mnt/.simfs/stats.txt"
check "no warning at mount" test ! -s "$dir/mount.err"

# one python process: each step prints "ok" or why not
cat >"$dir/coherence.py" <<'PY'
import mmap, os, sys
path = sys.argv[1]
size = 3 * 4096 + 100          # not a multiple of the page size
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, size)
m = mmap.mmap(fd, size, mmap.MAP_SHARED)
other = os.open(path, os.O_RDONLY)   # a second open file, same inode
def step(name, got, want):
    print(("ok" if got == want else "bad %r != %r" % (got, want)), name)
m[4096:4101] = b"hello"
m[size - 5:size] = b"tail!"
step("mapped store, read(2) without msync", os.pread(other, 5, 4096), b"hello")
step("mapped store in the last page", os.pread(other, 5, size - 5), b"tail!")
os.pwrite(fd, b"WORLD", 4096)
step("write(2), read through the mapping", m[4096:4101], b"WORLD")
os.pwrite(fd, b"x" * 8192, 0)
step("write(2) over two pages, mapping", m[0:8192], b"x" * 8192)
m[8190:8194] = b"ABCD"          # a store straddling two pages
step("straddling store, read(2)", os.pread(other, 4, 8190), b"ABCD")
m[0:6] = b"synced"
m.flush()                       # msync(MS_SYNC)
m.close()
os.close(other)
os.close(fd)
PY
python3 "$dir/coherence.py" "$mnt/shared" >"$dir/coh.out" 2>&1
while read -r res what; do
	if [[ $res == ok ]]; then ok "$what"; else fail "$res $what"; fi
done <"$dir/coh.out"
check "coherence script ran all steps" test "$(grep -c . "$dir/coh.out")" = 5

# SQLite in WAL mode: 300 single-row transactions (autocommit inserts)
sql=$mnt/w.db
check "sqlite3 switches to WAL" bash -c "[[ \$(sqlite3 '$sql' 'PRAGMA journal_mode=WAL;') == wal ]]"
sqlite3 "$sql" "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);"
for i in $(seq 300); do echo "INSERT INTO t VALUES($i, 'row $i');"; done >"$dir/ins.sql"
check "300 transactions commit" bash -c "sqlite3 '$sql' <'$dir/ins.sql'"
check "integrity_check on the mount" bash -c "[[ \$(sqlite3 '$sql' 'PRAGMA integrity_check;') == ok ]]"
check "all rows there" bash -c "[[ \$(sqlite3 '$sql' 'SELECT count(*), sum(a) FROM t;') == '300|45150' ]]"
"$SIMFS" umount "$mnt" || fail "umount"
check "e2fsck -fn is clean" bash -c "e2fsck -fn '$img' >/dev/null 2>&1"

"$SIMFS" mount "$img" "$mnt" || { echo "Bail out! remount"; exit 1; }
check "msync'ed bytes survive the remount" bash -c "[[ \$(head -c 6 '$mnt/shared') == synced ]]"
check "remount: the database is still WAL" bash -c "[[ \$(sqlite3 '$sql' 'PRAGMA journal_mode;') == wal ]]"
check "remount: integrity_check" bash -c "[[ \$(sqlite3 '$sql' 'PRAGMA integrity_check;') == ok ]]"
check "remount: all rows there" bash -c "[[ \$(sqlite3 '$sql' 'SELECT count(*) FROM t;') == 300 ]]"
"$SIMFS" umount "$mnt" || fail "umount"

# the fallback: without the negotiation the kernel refuses MAP_SHARED
"$SIMFS" mount -o noshared_mmap "$img" "$mnt" || { echo "Bail out! mount noshared_mmap"; exit 1; }
check "noshared_mmap: stats.txt says MAP_SHARED fails" \
	grep -q '^shared mmap: off (noshared_mmap); mmap(MAP_SHARED) fails with ENODEV' "$mnt/.simfs/stats.txt"
check "noshared_mmap: MAP_SHARED gives ENODEV" python3 -c "
import errno, mmap, os, sys
fd = os.open('$mnt/shared', os.O_RDWR)
try:
    mmap.mmap(fd, 4096, mmap.MAP_SHARED)
except OSError as e:
    sys.exit(e.errno != errno.ENODEV)
sys.exit(1)"
check "noshared_mmap: MAP_PRIVATE still works" python3 -c "
import mmap, os, sys
fd = os.open('$mnt/shared', os.O_RDONLY)
m = mmap.mmap(fd, 4096, mmap.MAP_PRIVATE, mmap.PROT_READ)
sys.exit(m[0:6] != b'synced')"
"$SIMFS" umount "$mnt" || fail "umount"
check "e2fsck -fn is clean at the end" bash -c "e2fsck -fn '$img' >/dev/null 2>&1"
tap_done
