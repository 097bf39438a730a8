#!/usr/bin/env bash
# tests/integration/t_fileattr.sh - file attributes (lsattr, chattr:
# FS_IOC_GETFLAGS / FS_IOC_SETFLAGS) through a mount.  lsattr shows the
# extents flag; chattr +i makes a file refuse writes, appends, truncation,
# unlink, rename, chmod, touch, links, fallocate and extended attributes
# with EPERM, and a
# directory new names; chattr +a lets a file take appends only and a
# directory new names only; clearing the flags gives everything back;
# another user (the owner) may not set i or a (CAP_LINUX_IMMUTABLE) but
# may set d; e cannot be cleared (no migration in simfs); A keeps a
# read from moving atime; S makes each write a journal commit, D each
# change to a directory (the stats' fsync-reason commits count them).  After umount the flags are in i_flags
# on the image (debugfs) and e2fsck -fn is clean.
#
#   tests/integration/t_fileattr.sh BUILD/simfs
set -uo pipefail
SIMFS=${1:?usage: t_fileattr.sh SIMFS}
TAG=tattr
. "$(dirname "$0")/mount_tap.sh"
command -v lsattr >/dev/null && command -v chattr >/dev/null ||
	{ echo "Bail out! lsattr/chattr (e2fsprogs) missing"; exit 1; }

img=$dir/img
"$SIMFS" mkfs --preset ext4 "$img" 64M >/dev/null || { echo "Bail out! mkfs"; exit 1; }
"$SIMFS" mount -o preset=ext4,allow_other "$img" "$mnt" || { echo "Bail out! mount"; exit 1; }
f=$mnt/f
echo hello >"$f"
mkdir "$mnt/d"
flags() { lsattr -d "$1" 2>/dev/null | cut -d' ' -f1; }
denied() { # denied DESCRIPTION CMD...: CMD fails with "Operation not permitted"
	local what=$1 out
	shift
	out=$("$@" 2>&1) && { fail "$what (it succeeded)"; return; }
	if [[ $out == *"Operation not permitted"* ]]; then ok "$what"; else fail "$what: $out"; fi
}

check "lsattr shows the extents flag" bash -c "[[ \$(lsattr '$f' | cut -d' ' -f1) == *e* ]]"
check "lsattr -d works on a directory" bash -c "[[ \$(lsattr -d '$mnt/d' | cut -d' ' -f1) == *e* ]]"

check "chattr +i" chattr +i "$f"
check "lsattr shows i" bash -c "[[ \$(lsattr '$f' | cut -d' ' -f1) == *i* ]]"
denied "+i: write" bash -c "echo x >'$f'"
denied "+i: append" bash -c "echo x >>'$f'"
denied "+i: truncate" truncate -s 0 "$f"
denied "+i: unlink" rm -f "$f"
denied "+i: rename" mv "$f" "$mnt/g"
denied "+i: chmod" chmod 600 "$f"
denied "+i: touch" touch "$f"
denied "+i: link" ln "$f" "$mnt/f2"
denied "+i: fallocate" fallocate -l 8192 "$f"
denied "+i: setfattr" setfattr -n user.k -v v "$f"
check "+i: still readable" bash -c "[[ \$(cat '$f') == hello ]]"
check "chattr -i" chattr -i "$f"
check "-i: writable again" bash -c "echo again >'$f'"

check "chattr +a" chattr +a "$f"
check "+a: append works" bash -c "echo more >>'$f'"
denied "+a: overwrite" bash -c "echo x >'$f'"
denied "+a: truncate" truncate -s 1 "$f"
denied "+a: unlink" rm -f "$f"
denied "+a: rename" mv "$f" "$mnt/g"
denied "+a: chmod" chmod 600 "$f"
denied "+a: punch a hole" fallocate -p -o 0 -l 4096 "$f"
check "+a: the appended bytes are there" bash -c "[[ \$(cat '$f') == \$'again\nmore' ]]"
check "chattr -a" chattr -a "$f"

check "chattr +i on a directory" chattr +i "$mnt/d"
denied "+i directory: no new name" touch "$mnt/d/x"
check "chattr -i, then +a on a directory" bash -c "chattr -i '$mnt/d' && touch '$mnt/d/x' && chattr +a '$mnt/d'"
check "+a directory: a new name is fine" touch "$mnt/d/y"
denied "+a directory: no removal" rm -f "$mnt/d/x"
check "chattr -a on the directory, then rm works" bash -c "chattr -a '$mnt/d' && rm '$mnt/d/x'"

out=$(chattr -e "$f" 2>&1)
check "chattr -e is refused (EOPNOTSUPP: no migration to a block map)" \
	bash -c "[[ '$out' == *'Operation not supported'* ]]"
check "the file keeps e" bash -c "[[ \$(lsattr '$f' | cut -d' ' -f1) == *e* ]]"

if command -v setpriv >/dev/null; then
	chmod 755 "$dir"
	u=$mnt/u
	echo mine >"$u" && chown 65534:65534 "$u"
	as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	denied "the owner, not root, cannot set i" as_nobody chattr +i "$u"
	denied "nor a" as_nobody chattr +a "$u"
	check "but may set d (no dump)" as_nobody chattr +d "$u"
	check "lsattr shows d" bash -c "[[ \$(lsattr '$u' | cut -d' ' -f1) == *d* ]]"
else
	fail "setpriv missing: the unprivileged checks did not run"
fi

# A: a read does not move atime.  relatime would move it for both files
# here (atime older than mtime).
echo a >"$mnt/na" && echo a >"$mnt/ya"
touch -a -d 2001-01-01 "$mnt/na" "$mnt/ya"
chattr +A "$mnt/na"
cat "$mnt/na" "$mnt/ya" >/dev/null

# S: every write is synchronous; with the journal each is a commit for
# fsync.  Three writes to an S file, none to a plain one.
fsyncs() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["journal"]["commits"]["fsync"])' "$mnt/.simfs/stats"; }
echo s >"$mnt/s" && chattr +S "$mnt/s"
echo p >"$mnt/p"
c0=$(fsyncs)
for k in 1 2 3; do echo "$k" >>"$mnt/s"; done
c1=$(fsyncs)
for k in 1 2 3; do echo "$k" >>"$mnt/p"; done
c2=$(fsyncs)
check "S: three writes, three fsync commits ($c0 -> $c1)" test "$((c1 - c0))" -ge 3
check "a plain file's writes commit nothing ($c1 -> $c2)" test "$c2" = "$c1"
# D: each change to the directory is a commit too
mkdir "$mnt/sd" && chattr +D "$mnt/sd"
c3=$(fsyncs)
touch "$mnt/sd/x" && mv "$mnt/sd/x" "$mnt/sd/y" && rm "$mnt/sd/y"
c4=$(fsyncs)
touch "$mnt/d/plain"
c5=$(fsyncs)
check "D: create, rename, unlink in it: three commits ($c3 -> $c4)" test "$((c4 - c3))" -ge 3
check "a plain directory's create commits nothing ($c4 -> $c5)" test "$c5" = "$c4"
check "lsattr shows S and A" bash -c "[[ \$(lsattr '$mnt/s' | cut -d' ' -f1) == *S* && \$(lsattr '$mnt/na' | cut -d' ' -f1) == *A* ]]"
chattr +i "$f"

"$SIMFS" umount "$mnt" || fail "umount"
e2fsck -fn "$img" >"$dir/fsck" 2>&1
check "e2fsck -fn clean" test $? = 0
ifl() { debugfs -R "stat $1" "$img" 2>/dev/null | sed -n 's/.*Flags: \(0x[0-9a-f]*\).*/\1/p'; }
check "i_flags on the image: f has i and e ($(ifl /f))" test "$(($(ifl /f) & 0x80010))" = $((0x80010))
check "s has S ($(ifl /s)), na has A ($(ifl /na))" \
	bash -c "(( ($(ifl /s) & 0x8) && ($(ifl /na) & 0x80) ))"
atime() { debugfs -R "stat $1" "$img" 2>/dev/null | sed -n 's/^ *atime: *0x\([0-9a-f]*\).*/\1/p'; }
check "A: the read left atime in 2001 ($(atime /na))" test "$((0x$(atime /na)))" -lt 1000000000
check "without A it moved ($(atime /ya))" test "$((0x$(atime /ya)))" -gt 1000000000
tap_done
