# bench/lib.sh - sourced by the bench scripts: the parts of their
# prologues that are the same in each.  Nothing here runs on sourcing;
# the script calls what it needs.
#   parse_opts SPEC... -- "$@"
#                       the options: each SPEC L=VAR makes -L take a value,
#                       stored in VAR; L=VAR=VALUE makes -L a flag that sets
#                       VAR to VALUE.  -h is usage 0, an unknown option or
#                       a missing value usage 2 (on stderr); the operands
#                       after the options are left in the array ARGS
#   usage [STATUS]      print the script's head comment (from line 2 to
#                       its `set -euo pipefail`) as its help, exit STATUS
#   die MESSAGE         "SCRIPT: MESSAGE" on stderr, exit 2
#   to_kib SIZE         a size as mem= takes it (512K, 64M, 1G or bytes)
#                       in KiB
#   build_missing       SIMFS and FSBENCH from $BUILD; when either is
#                       missing, set up ($root as the source) and compile
#   umount_all          unmount every mount point of the associative
#                       array mounted (mountpoint -> simfs | fuse), lazily
#                       where a plain unmount fails
#   mount_fg IMG MNT OPTS  `simfs mount -f` in the background ($pid,
#                       mounted=1, stderr in $tmp/daemon.err); wait up to
#                       10 s for the mount; exit 1 showing that stderr if
#                       the daemon dies first, return 1 on no mount
#   scratch_mount NAME  a temp dir $dir (simfs-NAME.XXXXXX under $W) with
#                       an empty mount point $mnt, unmounted and removed
#                       at exit
parse_opts() {
	local -A var=() val=()
	local letters=h opt l OPTIND=1
	while [[ $1 != -- ]]; do
		l=${1%%=*}
		var[$l]=${1#*=}
		if [[ ${var[$l]} == *=* ]]; then # a flag
			val[$l]=${var[$l]#*=}
			var[$l]=${var[$l]%%=*}
			letters+=$l
		else
			letters+=$l:
		fi
		shift
	done
	shift
	while getopts "$letters" opt; do
		case $opt in
		h) usage 0 ;;
		\?) usage 2 >&2 ;;
		*) printf -v "${var[$opt]}" '%s' "${val[$opt]-$OPTARG}" ;;
		esac
	done
	shift $((OPTIND - 1))
	ARGS=("$@")
}

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit "${1:-0}"
}

die() {
	echo "$(basename "$0"): $*" >&2
	exit 2
}

to_kib() { # 64M -> 65536
	local v=${1%[KkMmGg]} u=${1: -1}
	case $u in
	K | k) echo "$v" ;;
	M | m) echo $((v * 1024)) ;;
	G | g) echo $((v * 1024 * 1024)) ;;
	*) echo $(($1 / 1024)) ;;
	esac
}

build_missing() {
	SIMFS=$BUILD/simfs
	FSBENCH=$BUILD/bench/fsbench
	if [[ ! -x $SIMFS || ! -x $FSBENCH ]]; then
		[[ -f $BUILD/build.ninja ]] || meson setup "$BUILD" "$root" >/dev/null
		meson compile -C "$BUILD" >/dev/null
	fi
}

umount_all() {
	local m
	for m in "${!mounted[@]}"; do
		mountpoint -q "$m" || continue
		if [[ ${mounted[$m]} == simfs ]]; then
			"$SIMFS" umount "$m" || fusermount3 -u -z "$m"
		else
			fusermount3 -u "$m" || fusermount3 -u -z "$m"
		fi
	done
}

mount_fg() { # IMG MNT OPTS
	"$SIMFS" mount -f -o "$3" "$1" "$2" 2>"$tmp/daemon.err" &
	pid=$!
	mounted=1
	for _ in $(seq 100); do
		mountpoint -q "$2" && break
		kill -0 "$pid" 2>/dev/null || {
			cat "$tmp/daemon.err" >&2
			exit 1
		}
		sleep 0.1
	done
	mountpoint -q "$2"
}

scratch_mount() { # NAME
	dir=$(mktemp -d "$W/simfs-$1.XXXXXX")
	mnt=$dir/mnt
	mkdir -p "$mnt"
	trap 'mountpoint -q "$mnt" && "$SIMFS" umount "$mnt" >/dev/null 2>&1; rm -rf "$dir"' EXIT
}
