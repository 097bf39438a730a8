#!/usr/bin/env bash
# tests/integration/t_bench.sh - `simfs bench` as a user runs it, on a
# small experiment (2 systems x dd x 2 sweep points, 64 MiB images): the
# same file twice gives a byte-identical results.csv, -j 2 gives what -j 1
# gives, --list-cells run one by one with bash and then --merge gives what
# a local run gives (from one folder or from two), every cell leaves its
# results.csv, stats.json and stdout.txt and no image (unless
# --keep-images), a failed cell is named and the exit status is 1, and a
# bad file is refused with FILE:LINE and exit status 2 before anything
# runs.
#
#   tests/integration/t_bench.sh BUILD/simfs
set -uo pipefail
SIMFS=${1:?usage: t_bench.sh SIMFS}
dir=$(mktemp -d "${TMPDIR:-/tmp}/simfs-tbench.XXXXXX")
cleanup() { rm -rf "$dir"; }
trap cleanup EXIT INT TERM
. "$(dirname "$0")/tap.sh"

xp=$dir/small.ini
cat >"$xp" <<'EOF'
; two systems, one workload, two sweep points
[global]
name = small
title = dd on ext2 and ext3
size = 64M
device = hdd-2009   ; the modelled disk
seed = 3

[system ext2]
options = preset=ext2

[system ext3]
options = preset=ext3
journal_size = 4M

[workload dd]
spec = dd,size=2M,fsync
sweep = bs=16K,64K

[table speed]
metric = mb_s
EOF
ids=(ext2.dd.bs=16K.r0 ext2.dd.bs=64K.r0 ext3.dd.bs=16K.r0 ext3.dd.bs=64K.r0)

bench() { # bench OUTDIR ARGS...: run, keep the status in OUTDIR.rc
	local out=$1
	shift
	"$SIMFS" bench "$xp" -o "$out" "$@" >"$out.stdout" 2>"$out.stderr"
	echo $? >"$out.rc"
}

# a local run
bench "$dir/a"
check "bench: exit 0" grep -qx 0 "$dir/a.rc"
[[ $(cat "$dir/a.rc") == 0 ]] || cat "$dir/a.stderr"
check "bench: results.csv has the long-form header" \
	grep -qx 'experiment,table,workload,phase,system,variant,metric,value,unit' \
	<(head -1 "$dir/a/results.csv")
check "bench: a table's row" \
	grep -q '^small,speed,dd,write,ext3,bs=64K,mb_s,' "$dir/a/results.csv"
check "bench: a row no table shows" \
	grep -q '^small,,dd,all,ext2,bs=16K,dev_requests,' "$dir/a/results.csv"
check "bench: the experiment file is copied" cmp -s "$xp" "$dir/a/experiment.ini"
check "bench: plain progress lines off a terminal" \
	grep -q '^cell 4/4 done: ' "$dir/a.stderr"
cells_ok=true
for id in "${ids[@]}"; do
	for f in results.csv stats.json stdout.txt; do
		[[ -s $dir/a/cells/$id/$f ]] || { echo "# no $id/$f"; cells_ok=false; }
	done
	[[ -e $dir/a/cells/$id/image.img ]] && { echo "# $id/image.img left"; cells_ok=false; }
done
check "bench: every cell's folder, no image left" $cells_ok
rows=$(($(wc -l <"$dir/a/results.csv") - 1))
cellrows=0
for id in "${ids[@]}"; do
	cellrows=$((cellrows + $(wc -l <"$dir/a/cells/$id/results.csv") - 1))
done
check "bench: every cell's rows ($rows = $cellrows)" test "$rows" -eq "$cellrows" -a "$rows" -gt 0

# the same file again, and with -j 2
bench "$dir/b"
check "bench twice: byte-identical results.csv" cmp "$dir/a/results.csv" "$dir/b/results.csv"
bench "$dir/j2" -j 2 --keep-images
check "bench -j 2: exit 0" grep -qx 0 "$dir/j2.rc"
check "bench -j 2 = -j 1" cmp "$dir/a/results.csv" "$dir/j2/results.csv"
check "bench --keep-images: the images stay" \
	test -s "$dir/j2/cells/${ids[0]}/image.img"

# --list-cells, each cell run by bash, then --merge
"$SIMFS" bench "$xp" -o "$dir/l" --list-cells >"$dir/cells.txt" 2>"$dir/l.err"
check "list-cells: exit 0, one command per cell" \
	test $? -eq 0 -a "$(wc -l <"$dir/cells.txt")" -eq 4
check "list-cells: the absolute path of simfs" grep -q "&& '/[^']*/simfs' 'run' " "$dir/cells.txt"
[[ -e $dir/l ]] && fail "list-cells runs nothing" || ok "list-cells runs nothing"
all=0
while IFS= read -r cmd; do
	bash -c "$cmd" || all=1
done <"$dir/cells.txt"
check "list-cells: every command exits 0" test $all -eq 0
bench "$dir/l" --merge
check "merge: exit 0" grep -qx 0 "$dir/l.rc"
check "list-cells + merge = a local run" cmp "$dir/a/results.csv" "$dir/l/results.csv"
# the cells run on two "nodes", merged into a third folder
mkdir -p "$dir/n1/cells" "$dir/n2/cells"
mv "$dir/l/cells/${ids[0]}" "$dir/l/cells/${ids[1]}" "$dir/n1/cells/"
mv "$dir/l/cells/${ids[2]}" "$dir/l/cells/${ids[3]}" "$dir/n2/cells/"
bench "$dir/m" --merge "$dir/n1" "$dir/n2"
check "merge of two folders: exit 0" grep -qx 0 "$dir/m.rc"
check "merge of two folders = a local run" cmp "$dir/a/results.csv" "$dir/m/results.csv"
check "merge copies the cells' stats" test -s "$dir/m/cells/${ids[3]}/stats.json"
bench "$dir/m1" --merge "$dir/n1"
check "merge with cells missing: exit 1" grep -qx 1 "$dir/m1.rc"
check "merge with cells missing: names them" \
	grep -q "cell ${ids[2]}: no cells/" "$dir/m1.stderr"

# a cell that fails: the others still run
sed -e 's/^spec = dd,size=2M,fsync/spec = dd,bs=64K,fsync/' \
	-e 's/^sweep = bs=16K,64K/sweep = size=1M,100M/' "$xp" >"$dir/fail.ini"
"$SIMFS" bench "$dir/fail.ini" -o "$dir/f" >"$dir/f.out" 2>"$dir/f.err"
rc=$?
check "a failed cell: exit 1 ($rc)" test $rc -eq 1
check "a failed cell: named, with its output" \
	grep -q "cell ext2.dd.size=100M.r0 failed (exit 1)" "$dir/f.err"
check "a failed cell: the others ran" \
	grep -q '^small,.*,ext3,size=1M,' "$dir/f/results.csv"
check "a failed cell: none of its rows" \
	bash -c "! grep -q 'size=100M' '$dir/f/results.csv'"

# bad files: exit 2, FILE:LINE, nothing run
bad_case() { # bad_case DESCRIPTION PATTERN: on $dir/bad.ini
	"$SIMFS" bench "$dir/bad.ini" -o "$dir/badout" >"$dir/bad.out" 2>"$dir/bad.err"
	local rc=$?
	if [[ $rc == 2 ]] && grep -q -- "$2" "$dir/bad.err" && [[ ! -e $dir/badout ]]; then
		ok "bad file: $1"
	else
		fail "bad file: $1 -> $rc: $(cat "$dir/bad.err")"
	fi
}
sed 's/^journal_size = 4M/journal_sise = 4M/' "$xp" >"$dir/bad.ini"
bad_case "unknown key" "bad.ini:14: unknown key 'journal_sise' in \[system ext3\]"
sed 's/^sweep = bs=16K,64K/sweep = bs=16K,lots/' "$xp" >"$dir/bad.ini"
bad_case "bad sweep value" "bad.ini:18: sweep point bs=lots"
sed 's/^options = preset=ext2/options = preset=ext9/' "$xp" >"$dir/bad.ini"
bad_case "bad mount option" "bad.ini:10: options of \[system ext2\]"
"$SIMFS" bench "$dir/none.ini" >/dev/null 2>"$dir/none.err"
check "a missing file: exit 2" test $? -eq 2
"$SIMFS" bench --help >"$dir/help.out" 2>&1
check "bench --help: exit 0, usage" grep -q "^usage: simfs bench FILE" "$dir/help.out"

tap_done
