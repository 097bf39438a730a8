#!/usr/bin/env bash
# tests/integration/t_lab_mount.sh - a lab's --mount part agrees with its
# answers: `simfs lab NAME --mount` makes and mounts the image, the
# commands of --script run on the real FUSE mount, and what the mount and
# the unmounted image then show (stat, debugfs, simfs inspect) is what the
# answers and the figure of `--answers` say.  The image is e2fsck-clean.
#
#   tests/integration/t_lab_mount.sh BUILD/simfs NAME LEVEL [SEED]
set -uo pipefail
SIMFS=${1:?usage: t_lab_mount.sh SIMFS NAME LEVEL [SEED]}
LAB=${2:?usage: t_lab_mount.sh SIMFS NAME LEVEL [SEED]}
LEVEL=${3:?usage: t_lab_mount.sh SIMFS NAME LEVEL [SEED]}
SEED=${4:-1}
TAG=tlabmnt
source "$(dirname "$0")/mount_tap.sh"
img=$dir/lab.img
S=(--seed "$SEED" --level "$LEVEL")

"$SIMFS" lab "$LAB" "${S[@]}" --answers >"$dir/sheet" || fail "--answers"
"$SIMFS" lab "$LAB" "${S[@]}" --script >"$dir/script" || fail "--script"
# the figure: the lines after "Figure", two columns of indent removed
sed -n '/^Figure$/,$p' "$dir/sheet" | sed '1,2d; s/^  //' >"$dir/figure"

if "$SIMFS" lab "$LAB" "${S[@]}" --mount "$mnt" --image "$img" >"$dir/mount.out" 2>&1 &&
	mountpoint -q "$mnt"; then
	ok "--mount: $img mounted at $mnt"
else
	fail "--mount"
	sed 's/^/#   /' "$dir/mount.out"
	tap_done
	exit 1
fi
grep -q "answer:" "$dir/mount.out" && fail "--mount prints no answers"
"$SIMFS" lab "$LAB" "${S[@]}" --mount "$mnt" --image "$img" >/dev/null 2>"$dir/err"
rc=$?
check "--mount again: exit 2, the image exists" \
	test "$rc" = 2 -a -n "$(grep "exists" "$dir/err")"
if (cd "$mnt" && sh -e "$dir/script") >"$dir/run.out" 2>&1; then
	ok "the script ran on the mount ($(wc -l <"$dir/script") commands)"
else
	fail "the script failed: $(cat "$dir/run.out")"
fi

case $LAB in
inode)
	# link counts, as stat sees them on the mount
	links=$(sed -n 's/^link counts: //p' "$dir/figure")
	for kv in $links; do
		p=${kv%=*}
		want=${kv#*=}
		got=$(stat -c %h "$mnt$p")
		check "stat -c %h $p: $got (the answer: $want)" test "$got" = "$want"
	done
	;;
esac

"$SIMFS" umount "$mnt" >/dev/null 2>&1 || fail "simfs umount"
fsck_clean() { e2fsck -fn "$1" >"$dir/fsck" 2>&1 || { sed 's/^/#   /' "$dir/fsck"; return 1; }; }
check "image e2fsck-clean" fsck_clean "$img"

case $LAB in
inode)
	if [[ $LEVEL -le 2 ]]; then
		# the root's records: "inode rec_len name" from the figure and
		# from debugfs ls (which prints "inode (rec_len) name")
		awk '/^ +offset +inode/ { on = 1; next } on && NF == 5 { print $2, $3, $5 }
		     on && NF != 5 { on = 0 }' "$dir/figure" >"$dir/want"
		debugfs -R "ls /" "$img" 2>/dev/null |
			awk '{ for (i = 1; i <= NF; i++) print $i }' |
			paste -d' ' - - - | sed 's/(\([0-9]*\))/\1/' >"$dir/got"
		if [[ -s $dir/want ]] && cmp -s "$dir/want" "$dir/got"; then
			ok "debugfs ls /: $(wc -l <"$dir/got") records as the answers say"
		else
			fail "debugfs ls / differs from the figure"
			diff "$dir/want" "$dir/got" | sed 's/^/#   /'
		fi
	else
		# the first table of the figure: the mounted policy's groups
		awk '/^ +group +free blocks/ { t++; next } t == 1 && NF == 4 { print $1, $2, $3, $4 }
		     t == 1 && NF != 4 { t++ }' "$dir/figure" >"$dir/want"
		"$SIMFS" inspect "$img" groups | awk 'NR > 1 { print $1, $(NF-5), $(NF-4), $(NF-3) }' \
			>"$dir/got"
		if [[ -s $dir/want ]] && cmp -s "$dir/want" "$dir/got"; then
			ok "inspect groups: free blocks, inodes, dirs per group as the answers say"
		else
			fail "inspect groups differs from the figure"
			diff "$dir/want" "$dir/got" | sed 's/^/#   /'
		fi
	fi
	;;
alloc)
	# each file's runs in the figure's first map (the mounted
	# allocator's) against simfs inspect IMG extents
	awk '/^$/ { exit } /^  \/[a-e]  data / { print }' "$dir/figure" >"$dir/files"
	check "the figure names the files" test -s "$dir/files"
	while read -r path _ runs; do
		want=${runs%%  mapping*}
		[[ $runs == *"  mapping "* ]] && wmeta=${runs##*  mapping } || wmeta=
		"$SIMFS" inspect "$img" extents "$path" >"$dir/ext" 2>&1
		got=$(awk '$1 ~ /^[0-9]+$/ && $3 ~ /\.\./ { split($3, r, /\.\./)
			     printf "%s%s", sep, (r[1] == r[2] ? r[1] : r[1] "-" r[2]); sep = " " }' "$dir/ext")
		gmeta=$(awk '$1 == "meta" { split($4, r, /\.\./)
			     printf "%s%s", sep, (r[1] == r[2] ? r[1] : r[1] "-" r[2]); sep = " " }' "$dir/ext")
		check "inspect extents $path: data $got (the answer: $want)" test "$got" = "$want"
		check "inspect extents $path: mapping '$gmeta' (the answer: '$wmeta')" \
			test "$gmeta" = "$wmeta"
	done <"$dir/files"
	;;
esac
tap_done
