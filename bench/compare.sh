#!/usr/bin/env bash
# bench/compare.sh - simfs side by side with other file systems over the
# same host directory: one table of medians and of every ratio against
# simfs's default preset.  Run on demand; not part of the test suite.
#
# Targets (all images and directories live in one temp dir under WORKDIR):
#   simfs       simfs mount, default options (alloc=blockmap, mem=256M)
#   simfs-ext4  simfs mount -o preset=ext4 (image from mkfs --preset ext4)
#   passthrough libfuse's example passthrough_ll over a directory, built
#               here from the source Debian ships in libfuse3-dev's
#               examples, -o cache=never,timeout=1.0 (direct_io like simfs)
#   fuse2fs     e2fsprogs' FUSE ext4 driver (Debian package fuse2fs) on an
#               image made by mkfs.ext4
#   ext4        the kernel's ext4 on a loop device over such an image
# Workloads, each repetition running every target in turn (interleaved), on
# a freshly made and mounted file system:
#   seq write   SIZE in 1 MiB writes, fsync included (bench/fsbench)
#   seq read    the same file after unmount, drop_caches and mount (cold)
#   rand write  fio, 4 KiB random buffered writes to a FIO_SIZE file for
#               FIO_TIME s, end_fsync
#   meta 1 dir  create (empty), stat, unlink of NFILES files in one dir
#   meta 100    the same with NFILES/100 files in each of 100 dirs, one
#               dir after the other (ops/s over the summed times)
#   dbench      dbench 4 clients, DBENCH_TIME s (MB/s as dbench says)
#   peak RSS    the FUSE daemon's VmHWM (/proc/PID/status) over the
#               repetition (both of its mounts); none for kernel ext4
# The result is a markdown table on stdout: the default preset's median,
# and for every other target its median and the median and range
# (min-max) of its per-repetition ratio to the default preset.
#
# usage: bench/compare.sh [-B BUILDDIR] [-d WORKDIR] [-s SIZE] [-r REPS]
#                         [-f FIO_SIZE] [-T FIO_TIME] [-n NFILES]
#                         [-D DBENCH_TIME] [-t TARGETS] [-h]
#   -B BUILDDIR  meson build dir with simfs and bench/fsbench (default
#                ./build; built when missing)
#   -d WORKDIR   host directory for everything (default $TMPDIR or /tmp)
#   -s SIZE      sequential file size, M or G suffix (default 1G)
#   -r REPS      repetitions (default 3)
#   -f FIO_SIZE  fio file size (default 256M)
#   -T FIO_TIME  fio run time, seconds (default 10)
#   -n NFILES    metadata files (default 10000; a multiple of 100)
#   -D SECONDS   dbench run time (default 10)
#   -t TARGETS   comma-separated subset of the targets above (default all;
#                simfs is always run: it is the base of every ratio)
# Needs root (FUSE, loop devices, drop_caches), fio, dbench, fuse2fs,
# e2fsprogs, python3 (tests/setup-debian.sh installs them).  Every mount,
# daemon and loop device is removed on every exit path.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$root/build
WORK=${TMPDIR:-/tmp}
SIZE=1G
REPS=3
FIO_SIZE=256M
FIO_TIME=10
NFILES=10000
DB_TIME=10
TARGETS=simfs,simfs-ext4,passthrough,fuse2fs,ext4
DBLOAD=/usr/share/dbench/client.txt

. "$root/bench/lib.sh"

parse_opts B=BUILD d=WORK s=SIZE r=REPS f=FIO_SIZE T=FIO_TIME n=NFILES D=DB_TIME t=TARGETS -- "$@"
[[ ${#ARGS[@]} -eq 0 ]] || usage 2 >&2

shopt -s extglob
to_mib() { # 1G -> 1024, 256M -> 256
	case $1 in
	[1-9]*([0-9])[Mm]) echo "${1%?}" ;;
	[1-9]*([0-9])[Gg]) echo $((${1%?} * 1024)) ;;
	*) return 1 ;;
	esac
}
SIZE_MIB=$(to_mib "$SIZE") || die "-s: a size such as 256M or 1G, not '$SIZE'"
FIO_MIB=$(to_mib "$FIO_SIZE") || die "-f: a size such as 256M, not '$FIO_SIZE'"
posint() { [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1: a positive whole number, not '$2'"; }
posint -r "$REPS"
posint -T "$FIO_TIME"
posint -n "$NFILES"
posint -D "$DB_TIME"
((NFILES % 100 == 0)) || die "-n: a multiple of 100, not $NFILES"
[[ -d $WORK ]] || die "-d: $WORK is not a directory"

declare -A want=()
IFS=, read -ra tl <<<"$TARGETS"
for t in "${tl[@]}"; do
	case $t in
	simfs | simfs-ext4 | passthrough | fuse2fs | ext4) want[$t]=1 ;;
	*) die "-t: unknown target '$t' (simfs, simfs-ext4, passthrough, fuse2fs, ext4)" ;;
	esac
done
want[simfs]=1
order=()
for t in simfs simfs-ext4 passthrough fuse2fs ext4; do
	[[ -n ${want[$t]:-} ]] && order+=("$t")
done

[[ $(id -u) == 0 ]] || die "run as root (FUSE mounts, loop devices, drop_caches)"
need() { command -v "$1" >/dev/null || die "$1 not found (tests/setup-debian.sh installs it)"; }
need fio
need dbench
need python3
need mkfs.ext4
[[ -f $DBLOAD ]] || die "$DBLOAD not found (apt-get install dbench)"
[[ -n ${want[fuse2fs]:-} ]] && need fuse2fs
[[ -n ${want[ext4]:-} ]] && need losetup

build_missing

tmp=$(mktemp -d "$WORK/simfs-compare.XXXXXX")
declare -A mnt_kind=() # mountpoint -> fuse | kernel
declare -A daemon=()   # target -> PID of its FUSE daemon
loopdev=""

cleanup() {
	local m p
	set +e
	for m in "${!mnt_kind[@]}"; do
		mountpoint -q "$m" || continue
		if [[ ${mnt_kind[$m]} == kernel ]]; then
			umount "$m" || umount -l "$m"
		else
			fusermount3 -u "$m" || fusermount3 -u -z "$m"
		fi
	done
	for p in "${daemon[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	[[ -n $loopdev ]] && losetup -d "$loopdev"
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

log() { echo "compare.sh: $*" >&2; }

# ---- passthrough_ll, built from the example source libfuse3-dev ships --
if [[ -n ${want[passthrough]:-} ]]; then
	. "$root/bench/passthrough_ll.sh"
	build_passthrough_ll "$tmp" || die "passthrough_ll cannot be built"
fi

# passthrough_ll keeps an O_PATH descriptor per inode the kernel holds
ulimit -Hn $((NFILES + 4096)) 2>/dev/null || true
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
fdmax=$(ulimit -n)
if [[ -n ${want[passthrough]:-} && $fdmax != unlimited ]] && ((fdmax < NFILES + 1024)); then
	die "-n $NFILES: passthrough_ll needs an open-file limit above NFILES + 1024 (it is $fdmax)"
fi

drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

wait_mount() { # MOUNTPOINT PID
	local i
	for i in $(seq 200); do
		mountpoint -q "$1" && return 0
		kill -0 "$2" 2>/dev/null || die "the daemon for $1 exited: $(cat "$tmp/daemon.err")"
		sleep 0.05
	done
	die "$1: the mount did not appear"
}

img_mib=$((SIZE_MIB + FIO_MIB + 1024))

# make_fs TARGET: a fresh file system for one repetition
make_fs() {
	local t=$1
	rm -rf "$tmp/img.$t" "$tmp/data.$t"
	case $t in
	simfs) "$SIMFS" mkfs "$tmp/img.$t" "${img_mib}M" >/dev/null ;;
	simfs-ext4) "$SIMFS" mkfs --preset ext4 "$tmp/img.$t" "${img_mib}M" >/dev/null ;;
	passthrough) mkdir -p "$tmp/data.$t" ;;
	# fuse2fs does not write a journal (it warns and runs without)
	fuse2fs) mkfs.ext4 -q -F -O ^has_journal "$tmp/img.$t" "${img_mib}M" >/dev/null ;;
	ext4) mkfs.ext4 -q -F "$tmp/img.$t" "${img_mib}M" >/dev/null ;;
	esac
	mkdir -p "$tmp/mnt.$t"
}

# mount_fs TARGET
mount_fs() {
	local t=$1 m=$tmp/mnt.$1
	case $t in
	simfs) "$SIMFS" mount -f "$tmp/img.$t" "$m" 2>"$tmp/daemon.err" & ;;
	simfs-ext4) "$SIMFS" mount -f -o preset=ext4 "$tmp/img.$t" "$m" 2>"$tmp/daemon.err" & ;;
	passthrough)
		"$tmp/passthrough_ll" -f -o "source=$tmp/data.$t,cache=never,timeout=1.0" \
			"$m" 2>"$tmp/daemon.err" &
		;;
	fuse2fs) fuse2fs -f "$tmp/img.$t" "$m" 2>"$tmp/daemon.err" & ;;
	ext4)
		loopdev=$(losetup -f --show "$tmp/img.$t")
		mount -t ext4 "$loopdev" "$m"
		mnt_kind[$m]=kernel
		return 0
		;;
	esac
	daemon[$t]=$!
	mnt_kind[$m]=fuse
	wait_mount "$m" "${daemon[$t]}"
}

hwm=0 # the largest VmHWM of this repetition's daemons, KiB
umount_fs() {
	local t=$1 m=$tmp/mnt.$1 h p
	sync
	if [[ $t == ext4 ]]; then
		umount "$m"
		unset "mnt_kind[$m]"
		losetup -d "$loopdev"
		loopdev=""
		return 0
	fi
	p=${daemon[$t]}
	h=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$p/status")
	((h > hwm)) && hwm=$h
	if [[ $t == simfs* ]]; then
		"$SIMFS" umount "$m"
	else
		fusermount3 -u "$m"
	fi
	unset "mnt_kind[$m]"
	wait "$p" || true
	unset "daemon[$t]"
}

get() { sed -n "s/^$1=//p" <<<"$2"; }
res=$tmp/results # lines: REP TARGET KEY VALUE
put() { # TARGET KEY VALUE
	if [[ -z $3 ]]; then
		log "[$rep/$REPS] $1: no $2 figure (see the output above)"
		return 0
	fi
	echo "$rep $1 $2 $3" >>"$res"
}

run_target() {
	local t=$1 m=$tmp/mnt.$1 out i c s u

	hwm=0
	make_fs "$t"
	mount_fs "$t"
	log "[$rep/$REPS] $t: sequential write of $SIZE_MIB MiB"
	out=$("$FSBENCH" seqwrite "$m/big" "$SIZE_MIB" 1024)
	put "$t" seqwrite "$(get mibps "$out")"
	umount_fs "$t"
	drop_caches
	mount_fs "$t"
	log "[$rep/$REPS] $t: cold sequential read"
	out=$("$FSBENCH" seqread "$m/big" 1024)
	put "$t" seqread "$(get mibps "$out")"
	rm -f "$m/big"
	sync

	log "[$rep/$REPS] $t: fio 4 KiB random writes, $FIO_MIB MiB, $FIO_TIME s"
	out=$(fio --name=randwrite --filename="$m/fio" --rw=randwrite --bs=4k \
		--size="${FIO_MIB}M" --runtime="$FIO_TIME" --time_based \
		--ioengine=psync --end_fsync=1 --output-format=json)
	put "$t" randwrite "$(python3 -c 'import json,sys; print("%.0f" % json.load(sys.stdin)["jobs"][0]["write"]["iops"])' <<<"$out")"
	rm -f "$m/fio"
	sync

	log "[$rep/$REPS] $t: create/stat/unlink of $NFILES files in one dir"
	out=$("$FSBENCH" meta "$m/meta" "$NFILES" 0)
	put "$t" create1 "$(get create_ops "$out")"
	put "$t" stat1 "$(get stat_ops "$out")"
	put "$t" unlink1 "$(get unlink_ops "$out")"
	rm -rf "$m/meta"
	sync

	log "[$rep/$REPS] $t: the same in 100 dirs"
	c=0 s=0 u=0
	for ((i = 0; i < 100; i++)); do
		out=$("$FSBENCH" meta "$m/meta$i" $((NFILES / 100)) 0)
		c=$(awk -v a="$c" -v b="$(get create_s "$out")" 'BEGIN { print a + b }')
		s=$(awk -v a="$s" -v b="$(get stat_s "$out")" 'BEGIN { print a + b }')
		u=$(awk -v a="$u" -v b="$(get unlink_s "$out")" 'BEGIN { print a + b }')
	done
	for i in create:$c stat:$s unlink:$u; do
		put "$t" "${i%%:*}100" "$(awk -v n="$NFILES" -v s="${i#*:}" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')"
	done
	for ((i = 0; i < 100; i++)); do rm -rf "$m/meta$i"; done
	sync

	log "[$rep/$REPS] $t: dbench 4 clients, $DB_TIME s"
	out=$(cd "$m" && dbench -c "$DBLOAD" -D "$m" -t "$DB_TIME" 4 2>&1) ||
		log "[$rep/$REPS] $t: dbench failed: $(tail -3 <<<"$out")"
	put "$t" dbench "$(sed -n 's/^Throughput \([0-9.]*\) MB\/sec.*/\1/p' <<<"$out" | tail -1)"
	rm -rf "$m/clients"

	umount_fs "$t"
	[[ $t == ext4 ]] || put "$t" rss "$(awk -v k="$hwm" 'BEGIN { printf "%.1f", k / 1024 }')"
	rm -rf "$tmp/img.$t" "$tmp/data.$t"
}

: >"$res"
log "$REPS repetitions of: ${order[*]}; work dir $WORK ($(findmnt -no FSTYPE -T "$WORK"))"
for ((rep = 1; rep <= REPS; rep++)); do
	for t in "${order[@]}"; do
		run_target "$t"
	done
done

echo "bench/compare.sh -s $SIZE -r $REPS -f $FIO_SIZE -T $FIO_TIME -n $NFILES -D $DB_TIME" \
	"(work dir on $(findmnt -no FSTYPE -T "$WORK"), $(date -u +%Y-%m-%d), $(nproc) CPUs)"
echo
python3 - "$res" "${order[@]}" <<'EOF'
import statistics, sys
res, targets = sys.argv[1], sys.argv[2:]
v = {}  # (target, key) -> {rep: value}
for line in open(res):
    rep, t, k, x = line.split()
    v.setdefault((t, k), {})[rep] = float(x)
rows = [("seqwrite", "seq write 1 MiB (MiB/s)"),
        ("seqread", "cold seq read 1 MiB (MiB/s)"),
        ("randwrite", "fio 4 KiB rand write (IOPS)"),
        ("create1", "create, 1 dir (ops/s)"),
        ("stat1", "stat, 1 dir (ops/s)"),
        ("unlink1", "unlink, 1 dir (ops/s)"),
        ("create100", "create, 100 dirs (ops/s)"),
        ("stat100", "stat, 100 dirs (ops/s)"),
        ("unlink100", "unlink, 100 dirs (ops/s)"),
        ("dbench", "dbench 4 clients (MB/s)"),
        ("rss", "daemon peak RSS (MiB)")]
def fmt(x):
    return "%.1f" % x if x < 1000 else "%.0f" % x
print("| workload | " + " | ".join(targets) + " |")
print("|---|" + "---|" * len(targets))
for k, name in rows:
    cells = []
    base = v.get((targets[0], k), {})
    for t in targets:
        d = v.get((t, k))
        if not d:
            cells.append("-")
            continue
        cell = fmt(statistics.median(d.values()))
        if t != targets[0]:
            r = [d[rep] / base[rep] for rep in d if base.get(rep)]
            if r:
                cell += " (%.2fx, %.2f-%.2f)" % (statistics.median(r),
                                                 min(r), max(r))
        cells.append(cell)
    print("| %s | %s |" % (name, " | ".join(cells)))
print()
print("Medians of %d repetitions; in parentheses the median and range of the"
      " per-repetition ratio to %s." % (len({r for d in v.values() for r in d}),
                                        targets[0]))
print()
print("Every value, repetition by repetition:")
print()
print("```")
for k, _ in rows:
    line = "%-10s" % k
    for t in targets:
        d = v.get((t, k), {})
        line += " | %s: %s" % (t, " ".join(fmt(d[r]) for r in sorted(d)))
    print(line)
print("```")
EOF
