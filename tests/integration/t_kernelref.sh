#!/usr/bin/env bash
# tests/integration/t_kernelref.sh - the kernel reference
# (doc/kernel-reference.md): the simfs side's rows from a stats JSON, then,
# where root and loop devices exist, one small cell per kind of kernel
# system (ext2; ext3 ordered, writeback, journal; ext4 with and without
# delalloc; ext4 without a journal): an 8 MiB dd with fsync on a loop-mounted
# image.  Checks: results.csv has the dev_* rows, dev_bytes_written is at
# least the 8 MiB written, journaled systems count jbd2 transactions and
# the others none, and no loop device or mount is left behind.  Through
# `simfs bench FILE --reference kernel` when simfs bench has it, through
# the test-only t_kernelref_main (sfs_kref_cell) in any case.
#
#   tests/integration/t_kernelref.sh BUILD/simfs BUILD/tests/integration/t_kernelref_main
set -uo pipefail
SIMFS=${1:?usage: t_kernelref.sh SIMFS T_KERNELREF_MAIN}
MAIN=${2:?usage: t_kernelref.sh SIMFS T_KERNELREF_MAIN}
SIMFS=$(realpath "$SIMFS")
MAIN=$(realpath "$MAIN")
PATH=$PATH:/usr/sbin:/sbin
dir=$(mktemp -d "${TMPDIR:-/tmp}/simfs-tkref.XXXXXX")
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	# a failed check must not leave a mount or a loop device behind either
	local m d
	for m in $(findmnt -rn -o TARGET 2>/dev/null | grep -F "$dir" | sort -r); do
		umount -l "$m" 2>/dev/null
	done
	for d in $(losetup -a 2>/dev/null | grep -F "$dir" | cut -d: -f1); do
		losetup -d "$d" 2>/dev/null
	done
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM
. "$(dirname "$0")/tap.sh"
metric() { # metric CSV NAME: its value in phase "all"
	awk -F, -v m="$2" '$2 == "all" && $3 == m { print $4 }' "$1"
}
finish() {
	echo "1..$n"
	echo "$((n - failed)) passed, $failed failed"
	[[ $failed == 0 ]]
	exit
}

# the simfs side: the same row names from a simfs cell's stats JSON
"$SIMFS" run -q -o "preset=ext3,stats=$dir/s.json" --size 128M \
	-w dd,size=8M,fsync >"$dir/s.out" 2>&1
check "simfs run for the simfs rows: exit 0" test $? = 0
"$MAIN" simfs-rows "$dir/s.json" dd >"$dir/s.rows" 2>"$dir/s.err"
check "simfs rows: exit 0 $(cat "$dir/s.err")" test $? = 0
for m in dev_bytes_written dev_bytes_read dev_write_requests \
	dev_read_requests dev_flushes jbd2_transactions; do
	check "simfs rows: $m" grep -q "^dd,all,$m," "$dir/s.rows"
done
v=$(metric "$dir/s.rows" dev_bytes_written)
check "simfs rows: dev_bytes_written ${v:-?} >= 8 MiB" \
	test "${v%.*}" -ge 8388608
v=$(metric "$dir/s.rows" jbd2_transactions)
check "simfs rows: ext3 committed (${v:-?} transactions)" test "${v:-0}" -ge 1
"$MAIN" simfs-rows "$dir/nosuch.json" dd >/dev/null 2>&1
check "simfs rows: a missing file is refused" test $? = 1
echo '{"not": "stats"}' >"$dir/bad.json"
"$MAIN" simfs-rows "$dir/bad.json" dd >/dev/null 2>&1
check "simfs rows: a JSON that is not simfs stats is refused" test $? = 1

# the kernel side needs root and loop devices
if [[ $(id -u) != 0 ]]; then
	echo "SKIP: the kernel reference needs root (losetup, mount)"
	[[ $failed == 0 ]] && exit 77
	finish
fi
if [[ ! -e /dev/loop-control ]] || ! losetup -f >/dev/null 2>&1; then
	echo "SKIP: no free loop device (/dev/loop-control; modprobe loop)"
	[[ $failed == 0 ]] && exit 77
	finish
fi

# shellcheck disable=SC2317 # called through check
left_behind() { # nothing of ours mounted or attached
	! findmnt -rn -o TARGET | grep -qF "$dir" &&
		! losetup -a | grep -qF "$dir"
}

# kernels since 5.5 count flushes (fields 16-17 of the stat file)
flush_fields=0
for st in /sys/block/loop*/stat; do
	[[ $(wc -w <"$st") -ge 17 ]] && flush_fields=1
	break
done

# kernel_cell NAME OPTIONS JOURNALED [JOURNAL-SIZE]
kernel_cell() {
	local name=$1 opts=$2 journaled=$3 js=${4:-} cd="$dir/cells/$1"
	local csv="$cd/kernel/results.csv" v m

	mkdir -p "$cd"
	"$MAIN" cell "$SIMFS" "$cd" "$opts" dd,size=8M,bs=64K,fsync 128M ${js:+"$js"} \
		>"$cd/main.out" 2>&1
	local rc=$?
	if [[ $rc == 77 ]]; then
		fail "$name: skipped by sfs_kref_cell: $(cat "$cd/main.out")"
		return
	fi
	check "$name: sfs_kref_cell -> 0 $(tail -1 "$cd/main.out")" test "$rc" = 0
	check "$name: no mount or loop device left" left_behind
	check "$name: the image is removed" test ! -e "$cd/kernel/image.img"
	[[ $rc == 0 ]] || return
	for m in dev_bytes_written dev_bytes_read dev_write_requests \
		dev_read_requests jbd2_transactions; do
		check "$name: row $m" grep -q "^dd,all,$m," "$csv"
	done
	if [[ $flush_fields == 1 ]]; then
		check "$name: row dev_flushes (the kernel counts flushes)" \
			grep -q "^dd,all,dev_flushes," "$csv"
	fi
	v=$(metric "$csv" dev_bytes_written)
	check "$name: dev_bytes_written ${v:-?} >= 8 MiB" \
		test "${v%.*}" -ge 8388608
	v=$(metric "$csv" dev_write_requests)
	check "$name: dev_write_requests ${v:-?} > 0" test "${v:-0}" -gt 0
	v=$(metric "$csv" jbd2_transactions)
	if [[ $journaled == 1 ]]; then
		check "$name: jbd2 committed (${v:-?})" test "${v:-0}" -ge 1
	else
		check "$name: no journal, no transactions (${v:-?})" \
			test "${v:-x}" = 0
	fi
	check "$name: setup.txt names the mount" grep -q "^mount: -t " \
		"$cd/kernel/setup.txt"
	check "$name: the run's output kept" grep -q "records out" \
		"$cd/kernel/stdout.txt"
}

kernel_cell ext2 preset=ext2 0
kernel_cell ext3 preset=ext3,commit=1 1 8M
kernel_cell ext3-writeback preset=ext3-writeback 1
kernel_cell ext3-journal preset=ext3-journal 1
kernel_cell ext4 preset=ext4,noatime 1
kernel_cell ext4-nodelalloc preset=ext4,nodelalloc 1
kernel_cell ext4-nojournal preset=ext4-nojournal 0
grep -q "data=journal" "$dir/cells/ext3-journal/kernel/setup.txt" 2>/dev/null
check "ext3-journal: mounted data=journal" test $? = 0
grep -q -- "-O ^has_journal" "$dir/cells/ext4-nojournal/kernel/setup.txt" 2>/dev/null
check "ext4-nojournal: mke2fs -O ^has_journal" test $? = 0
grep -q "size=8" "$dir/cells/ext3/kernel/setup.txt" 2>/dev/null
check "ext3: the cell's journal size (-J size=8)" test $? = 0

# a mount that fails: a clear error, nothing left behind
mkdir -p "$dir/cells/bad"
"$MAIN" cell "$SIMFS" "$dir/cells/bad" preset=ext3-journal,delalloc \
	dd,size=1M 128M >"$dir/bad.out" 2>&1
rc=$?
check "data=journal with delalloc: refused (exit $rc)" test "$rc" = 1
check "data=journal with delalloc: says mount failed" \
	grep -q "mount failed" "$dir/bad.out"
check "data=journal with delalloc: nothing left" left_behind
check "data=journal with delalloc: the image is removed" \
	test ! -e "$dir/cells/bad/kernel/image.img"

# the run cannot start (after the mount): a clear error, nothing left
mkdir -p "$dir/cells/norun"
"$MAIN" cell "$dir/no-such-simfs" "$dir/cells/norun" preset=ext4 \
	dd,size=1M 128M >"$dir/norun.out" 2>&1
rc=$?
check "no simfs to run: refused (exit $rc)" test "$rc" = 1
check "no simfs to run: says so" grep -q "cannot run" "$dir/norun.out"
check "no simfs to run: nothing left" left_behind
check "no simfs to run: the image is removed" \
	test ! -e "$dir/cells/norun/kernel/image.img"

# the same through simfs bench, once it has --reference
if "$SIMFS" bench --help 2>&1 | grep -q -- "--reference"; then
	mkdir -p "$dir/bench"
	cat >"$dir/bench/kref.ini" <<-'EOF'
		[global]
		name = kref
		size = 128M
		[system ext4]
		options = preset=ext4
		[workload dd]
		spec = dd,size=8M,bs=64K,fsync
	EOF
	(cd "$dir/bench" && "$SIMFS" bench kref.ini --reference kernel) \
		>"$dir/bench.out" 2>&1
	rc=$?
	check "simfs bench --reference kernel: exit 0 ($rc)" test "$rc" = 0
	csv=$(find "$dir/bench" -path '*/kernel/results.csv' | head -1)
	check "simfs bench --reference kernel: a kernel results.csv" \
		test -n "$csv"
	v=$([[ -n $csv ]] && metric "$csv" dev_bytes_written)
	check "simfs bench --reference kernel: dev_bytes_written ${v:-?} >= 8 MiB" \
		test "${v%.*}" -ge 8388608 2>/dev/null
	check "simfs bench --reference kernel: nothing left" left_behind
else
	echo "# simfs bench has no --reference yet: sfs_kref_cell tested alone"
fi

finish
