#!/usr/bin/env bash
# bench/demo.sh - a short tour of simfs: build if needed, mkfs, mount,
# untar a generated source-like tree and write a 64 MiB file, umount,
# check with e2fsck -fn, mount again and compare every byte, then print a
# summary and `simfs inspect IMAGE summary`.  Then a short experiment,
# bench/experiments/demo.ini run by `simfs bench` in virtual time: tar xf +
# sync of a kernel-like tree on the ext2, ext3, ext3-journal and ext4
# presets over a modelled 2009 disk and CPU, printed as one table (time,
# how much slower than the fastest, bytes written, journal bytes, commits)
# with the winner and by how much; the HTML report stays in OUTDIR.
#
# The output is the same on every run and every machine: the image is made
# with a fixed seed and time stamp, mounted with clock=virtual, and paths
# are printed relative to the temp dir.  With -t it also prints how long
# the untar and the 64 MiB write took on this machine's wall clock, on
# lines that begin with "[host]" (they differ from run to run).
#
# usage: bench/demo.sh [-B BUILDDIR] [-o OUTDIR] [-k] [-t]
#        (-k keeps the temp dir; OUTDIR default /tmp/simfs-demo-bench;
#         -t adds the [host] wall-clock lines)
# Run as root (FUSE).  Exits non-zero if anything does not check out.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$root/build}
KEEP=0
HOST_TIMES=0
OUT=${TMPDIR:-/tmp}/simfs-demo-bench
. "$root/bench/lib.sh"
parse_opts B=BUILD o=OUT k=KEEP=1 t=HOST_TIMES=1 -- "$@"
BUILD=$(realpath -m "$BUILD") # the script works in its temp dir
OUT=$(realpath -m "$OUT")
SIMFS=$BUILD/simfs
FSBENCH=$BUILD/bench/fsbench

step() { printf '\n== %s\n' "$*"; }
# a wall-clock figure of this machine: printed only with -t
host_line() { [[ $HOST_TIMES == 0 ]] || echo "[host] $*"; }

if [[ ! -x $SIMFS || ! -x $FSBENCH ]]; then
	step "building into $BUILD"
	[[ -f $BUILD/build.ninja ]] || meson setup "$BUILD" "$root"
	meson compile -C "$BUILD"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/simfs-demo.XXXXXX")
cd "$tmp" # what is printed names demo.img and mnt, not the temp dir
img=demo.img
mnt=mnt
mkdir -p "$mnt"
# a fixed UUID, hash seed and time stamp (2009-01-01): the same image bytes
seed=42
epoch=1230768000
# virtual time on the mount: the image's time stamps move only with the
# modelled device, so inspect prints the same times on every run
mopts=clock=virtual
cleanup() {
	set +e
	if mountpoint -q "$mnt"; then
		"$SIMFS" umount "$mnt" || fusermount3 -u -z "$mnt"
	fi
	cd /
	if [[ $KEEP == 1 ]]; then
		echo "kept $tmp"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# e2fsck -fn prints some problems and still exits 0: read its output.
fsck_verdict() {
	local out rc=0
	out=$(e2fsck -fn "$1" 2>&1) || rc=$?
	if [[ $rc == 0 ]] && ! grep -qvE '^(e2fsck [0-9].*|Pass [1-5]: .*|.*: [0-9]+/[0-9]+ files \([0-9.]+% non-contiguous\), [0-9]+/[0-9]+ blocks|)$' <<<"$out"; then
		echo clean
	else
		echo "NOT clean (exit $rc)"
		echo "$out" >&2
	fi
}

step "SOURCE_DATE_EPOCH=$epoch simfs mkfs --seed $seed $img 512M"
SOURCE_DATE_EPOCH=$epoch "$SIMFS" mkfs --seed "$seed" "$img" 512M

step "a source-like tree (deterministic) packed as a tarball"
tree_info=$("$FSBENCH" mktree "$tmp/src" 42 150 2500 65536)
echo "$tree_info"
tar -C "$tmp" -cf "$tmp/tree.tar" src
"$FSBENCH" seqwrite "$tmp/big.host" 64 1024 >/dev/null

step "simfs mount -o $mopts $img $mnt"
"$SIMFS" mount -o "$mopts" "$img" "$mnt"
findmnt -n -o FSTYPE "$mnt" || true

step "untar into the mount, write a 64 MiB file"
t0=$(date +%s.%N)
tar -C "$mnt" -xf "$tmp/tree.tar"
t1=$(date +%s.%N)
untar_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
host_line "untar: ${untar_s} s (wall clock of this machine)"
big=$("$FSBENCH" seqwrite "$mnt/big.bin" 64 1024)
big_mibps=$(sed -n 's/^mibps=//p' <<<"$big")
host_line "64 MiB write + fsync: $big_mibps MiB/s (wall clock of this machine)"
df -h --output=size,used,avail,pcent "$mnt"

step "simfs umount $mnt"
"$SIMFS" umount "$mnt"

step "e2fsck -fn $img"
verdict1=$(fsck_verdict "$img")
echo "$verdict1"

step "mount again and compare every byte with the originals"
"$SIMFS" mount -o "$mopts" "$img" "$mnt"
same=identical
diff -r "$tmp/src" "$mnt/src" >/dev/null || same="DIFFERENT (tree)"
cmp -s "$tmp/big.host" "$mnt/big.bin" || same="DIFFERENT (big.bin)"
echo "contents after remount: $same"
files=$(find "$mnt" -type f | wc -l)
dirs=$(find "$mnt" -type d | wc -l)
bytes=$(du -sb --apparent-size "$mnt" | cut -f1)
"$SIMFS" umount "$mnt"
verdict2=$(fsck_verdict "$img")

step "simfs inspect $img summary"
"$SIMFS" inspect "$img" summary

step "summary"
printf '%-26s %s\n' \
	"files" "$files" \
	"directories" "$dirs" \
	"bytes (apparent)" "$bytes" \
	"e2fsck -fn after use" "$verdict1" \
	"contents after remount" "$same" \
	"e2fsck -fn at the end" "$verdict2"
if [[ $HOST_TIMES == 1 ]]; then
	printf '[host] %-26s %s\n' \
		"untar time (wall clock)" "${untar_s} s" \
		"64 MiB write (wall clock)" "$big_mibps MiB/s"
fi
[[ $verdict1 == clean && $verdict2 == clean && $same == identical ]]

# The experiment: bench/experiments/demo.ini, run by `simfs bench` in
# virtual time (deterministic: the same table on every machine); the table
# below is drawn from its cells' results.csv and stats.json.
XP=$root/bench/experiments/demo.ini
step "experiment: $(sed -n '/^title = /{s///p;q}' "$XP")"
if ! "$SIMFS" bench --help >/dev/null 2>&1; then
	echo "$SIMFS has no 'bench' command: rebuild (meson compile -C $BUILD)" >&2
	exit 1
fi
mkdir -p "$OUT"
rm -rf -- "$OUT/cells" "$OUT/results.csv" "$OUT/report.html"
how="simfs bench $XP -j 2 --report -o $OUT"
"$SIMFS" bench "$XP" -j 2 --report -o "$OUT" >"$OUT/bench.log" 2>&1 ||
	{ cat "$OUT/bench.log" >&2; exit 1; }
python3 - "$OUT" <<'PY'
import csv, json, os, sys
out = sys.argv[1]
what = {"ext2": "no journal, block-by-block placement",
        "ext3": "ordered journal, ext2's placement",
        "ext3-journal": "data=journal: data written twice",
        "ext4": "extents, mballoc, delayed allocation"}
rows = []
for name in ["ext2", "ext3", "ext3-journal", "ext4"]:
    d = os.path.join(out, "cells", name + ".untar.r0")
    m = {(r["phase"], r["metric"]): float(r["value"])
         for r in csv.DictReader(open(os.path.join(d, "results.csv")))}
    st = json.load(open(os.path.join(d, "stats.json")))
    sub = st["device"]["submitted"]
    jw = sub["by_category"].get("journal", {}).get("write_bytes", 0)
    rows.append((name, m[("untar+sync", "real_s")], m[("untar", "real_s")],
                 sub["write"]["bytes"] / 1e6, jw / 1e6,
                 int(m.get(("all", "commits"), 0))))
best = min(rows, key=lambda r: r[1])
worst = max(rows, key=lambda r: r[1])
print("time = tar xf of a kernel-like tree (17078 files, 185 MiB), then sync,")
print("on a modelled 2009 machine: 7200 rpm SATA disk (hdd-2009), Core 2")
print("CPU (core2-2009), 256 MB cache; times are modelled in virtual time,")
print("not measured: the same on every machine.\n")
print("%-13s %-37s %8s %7s %8s %8s %7s" % ("preset", "design", "virt. s",
      "x best", "write MB", "jrnl MB", "commits"))
for r in rows:
    print("%-13s %-37s %8.1f %6.2fx %8.0f %8.0f %7d" % (r[0], what[r[0]],
          r[1], r[1] / best[1], r[3], r[4], r[5]))
others = sorted((r for r in rows if r is not best), key=lambda r: r[1])
print("\nfastest: %s, %.1f s (virtual); the others took %s as long." % (best[0],
      best[1], ", ".join("%s %.2fx" % (r[0], r[1] / best[1]) for r in others)))
print("slowest: %s, %.1f s virtual (%s)." % (worst[0], worst[1], what[worst[0]]))
PY
echo
echo "ran: $how"
if [[ -f $OUT/report.html ]]; then
	echo "HTML report (tables, plots, each cell's configuration and stats): $OUT/report.html"
fi
echo "per-cell results and stats: $OUT/cells/"
