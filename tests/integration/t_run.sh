#!/usr/bin/env bash
# tests/integration/t_run.sh - `simfs run` as a user runs it: the same
# command twice gives the same bytes (output and stats JSON, 16 clients
# too), the image it leaves is e2fsck-clean, bad input gets a clear
# message and exit status 2, a workload that does not fit stops as the
# benchmark would (exit 1, the image still clean), concurrent fsyncs share
# commits, and --path runs the same workload on a tmpfs directory.
#
#   tests/integration/t_run.sh BUILD/simfs
set -uo pipefail
SIMFS=${1:?usage: t_run.sh SIMFS}
dir=$(mktemp -d "${TMPDIR:-/tmp}/simfs-trun.XXXXXX")
shm=
cleanup() {
	rm -rf "$dir"
	[[ -n $shm ]] && rm -rf "$shm"
}
trap cleanup EXIT INT TERM
. "$(dirname "$0")/tap.sh"
fsck_clean() { e2fsck -fn "$1" >"$dir/fsck.out" 2>&1 || { cat "$dir/fsck.out"; return 1; }; }

# usage errors: exit 2, and a message that names the problem
usage_case() { # usage_case PATTERN ARGS...
	local pat=$1
	shift
	"$SIMFS" run "$@" >"$dir/out" 2>"$dir/err"
	local rc=$?
	if [[ $rc == 2 ]] && grep -q -- "$pat" "$dir/err"; then
		ok "run $* -> 2, '$pat'"
	else
		fail "run $* -> $rc: $(cat "$dir/err")"
	fi
}
usage_case "unknown workload 'nosuch'" -w nosuch
usage_case "unknown parameter 'bogus'" -w dd,bogus=1
usage_case "bad value 'abc' for size" -w dd,size=abc
usage_case "no workload" -o device=ideal
usage_case "virtual time" -w dd -o clock=emulate
usage_case "unknown CPU model" -w dd -o cpu=pentium9
usage_case "too many arguments" -w dd a.img b.img
printf '%s\n' 'NTCreateX "\\clients\\client1" 0x1 0x2 16385 NT_STATUS_OK' \
	'BogusOp 1 2' >"$dir/bad.txt"
usage_case "bad.txt:2" --loadfile "$dir/bad.txt"
usage_case "unknown feature: 'nosuch'" -w dd --mkfs '-O dir_index,nosuch'
usage_case "bad inode size '100'" -w dd --mkfs '-I 100'
usage_case "'preset' needs a preset=" -w dd --mkfs preset

# the same command twice: the same output and the same stats, byte for byte
for k in 1 2; do
	"$SIMFS" run -o "preset=ext3,stats=$dir/s$k.json" --size 256M \
		-w dd,size=32M,bs=64K,fsync "$dir/dd$k.img" >"$dir/dd$k.out" 2>&1
	echo $? >"$dir/dd$k.rc"
done
check "dd: exit 0" grep -qx 0 "$dir/dd1.rc"
check "dd: the report as dd prints it" grep -q "records out" "$dir/dd1.out"
check "dd: same output twice" cmp -s "$dir/dd1.out" "$dir/dd2.out"
check "dd: same stats JSON twice" cmp -s "$dir/s1.json" "$dir/s2.json"
check "dd: image e2fsck-clean" fsck_clean "$dir/dd1.img"

for k in 1 2; do
	"$SIMFS" run -o "preset=ext4,device=scsi-2002,cpu=piii-1ghz,stats=$dir/d$k.json" \
		--size 512M -w dbench,clients=16,time=5,warmup=1 "$dir/db$k.img" \
		>"$dir/db$k.out" 2>&1
	echo $? >"$dir/db$k.rc"
done
check "dbench 16 clients: exit 0" grep -qx 0 "$dir/db1.rc"
check "dbench 16 clients: Throughput line" grep -q "^Throughput .* 16 clients" "$dir/db1.out"
check "dbench 16 clients: same output twice" cmp -s "$dir/db1.out" "$dir/db2.out"
check "dbench 16 clients: same stats JSON twice" cmp -s "$dir/d1.json" "$dir/d2.json"
check "dbench 16 clients: image e2fsck-clean" fsck_clean "$dir/db1.img"

# --mkfs: the fresh image has the features asked for, the preset's era's
# with "preset"; without it, none of them
features() { dumpe2fs -h "$1" 2>/dev/null | sed -n 's/^Filesystem features: *//p'; }
isize() { dumpe2fs -h "$1" 2>/dev/null | awk '/^Inode size:/ {print $3}'; }
"$SIMFS" run -q -o preset=ext2 --size 256M --mkfs '-O dir_index,flex_bg -I 128' \
	-w dd,size=4M "$dir/mk1.img" >"$dir/mk1.out" 2>&1
check "--mkfs words: dir_index and flex_bg ($(features "$dir/mk1.img"))" \
	bash -c '[[ " $1 " == *" dir_index "* && " $1 " == *" flex_bg "* ]]' _ \
	"$(features "$dir/mk1.img")"
check "--mkfs words: 128-byte inodes" test "$(isize "$dir/mk1.img")" = 128
check "--mkfs words: image e2fsck-clean" fsck_clean "$dir/mk1.img"
"$SIMFS" run -q -o preset=ext4 --size 256M --mkfs preset \
	-w dd,size=4M "$dir/mk2.img" >"$dir/mk2.out" 2>&1
f=$(features "$dir/mk2.img")
check "--mkfs preset, ext4: the 2009 features ($f)" \
	bash -c 'for x in has_journal resize_inode dir_index extent flex_bg huge_file dir_nlink extra_isize; do [[ " $1 " == *" $x "* ]] || exit 1; done' _ "$f"
check "--mkfs preset: image e2fsck-clean" fsck_clean "$dir/mk2.img"
"$SIMFS" run -q -o preset=ext2 --size 256M -w dd,size=4M "$dir/mk3.img" \
	>"$dir/mk3.out" 2>&1
check "no --mkfs: no dir_index ($(features "$dir/mk3.img"))" \
	bash -c '[[ " $1 " != *" dir_index "* ]]' _ "$(features "$dir/mk3.img")"

# a workload that does not fit: exit 1, the error as dd gives it, clean
"$SIMFS" run -q -o device=ideal --size 32M -w dd,size=100M "$dir/full.img" \
	>"$dir/full.out" 2>"$dir/full.err"
rc=$?
check "ENOSPC: exit 1 ($rc)" test "$rc" = 1
check "ENOSPC: says so" grep -q "No space left on device" "$dir/full.err"
check "ENOSPC: image e2fsck-clean" fsck_clean "$dir/full.img"

# four fs_mark threads fsyncing their own files share journal commits
"$SIMFS" run -q -o preset=ext4 --size 512M \
	-w fsmark,threads=4,files=50,size=4K,sync=1 >"$dir/fm.out" 2>&1
commits=$(awk '/^run: / {for (i = 1; i <= NF; i++) if ($(i + 1) == "commits,") print $i}' "$dir/fm.out")
check "fs_mark 4 threads: $commits commits for 200 fsyncs" \
	test "${commits:-999}" -lt 200

# --path: the same workload as system calls on a tmpfs directory
if [[ -d /dev/shm && -w /dev/shm ]]; then
	shm=$(mktemp -d /dev/shm/simfs-trun.XXXXXX)
	"$SIMFS" run --path "$shm" -w dd,size=8M,bs=64K >"$dir/p.out" 2>&1
	rc=$?
	check "--path tmpfs: exit 0 ($rc)" test "$rc" = 0
	check "--path tmpfs: the file has 8 MiB" \
		test "$(stat -c %s "$shm/ddfile" 2>/dev/null)" = 8388608
else
	fail "--path: /dev/shm is not a writable tmpfs here"
fi

echo "1..$n"
echo "$((n - failed)) passed, $failed failed"
[[ $failed == 0 ]]
