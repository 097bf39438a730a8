#!/usr/bin/env bash
# tests/integration/t_install.sh - `meson install --destdir` into a private
# temp dir (removed on every exit path), then: every expected file is there
# and nothing else of note (no headers, no .pc); every manual page renders
# without a warning; every option of `simfs CMD --help` is on simfs-CMD(1);
# every preset and device model is on simfs-options(7); the installed bash
# completion completes commands, options, knobs and preset names.
#
#   t_install.sh SIMFS MESON BUILD_DIR SOURCE_DIR BINDIR MANDIR DOCDIR \
#                COMPLETIONS_DIR
# (BINDIR ... COMPLETIONS_DIR absolute, as installed, without the destdir)
set -u
if [[ $# != 8 ]]; then
	echo "usage: t_install.sh SIMFS MESON BUILD SRC BINDIR MANDIR DOCDIR COMPLETIONS" >&2
	exit 2
fi
SIMFS=$1 MESON=$2 BUILD=$3 SRC=$4 BINDIR=$5 MANDIR=$6 DOCDIR=$7 COMPDIR=$8

dir=$(mktemp -d "${TMPDIR:-/tmp}/simfs-install.XXXXXX")
cleanup() { rm -rf "$dir"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
. "$(dirname "$0")/tap.sh"

dest=$dir/dest
if "$MESON" install -C "$BUILD" --no-rebuild --quiet --destdir "$dest" \
	>"$dir/install.log" 2>&1; then
	ok "meson install --destdir"
else
	fail "meson install --destdir"
	sed 's/^/# /' "$dir/install.log"
fi

# ---- the generator refuses what it does not know
"$SIMFS" help --man simfs-nosuch >/dev/null 2>"$dir/err"
check "simfs help --man simfs-nosuch: exit 2, a message" \
	test $? = 2 -a -s "$dir/err"

# ---- what goes where
check "the binary in $BINDIR" test -x "$dest$BINDIR/simfs"
pages=$("$SIMFS" help --man-list)
check "simfs help --man-list names 14 pages" test "$(wc -l <<<"$pages")" = 14
for p in $pages; do
	check "man page $p" test -s "$dest$MANDIR/man${p##*.}/$p"
done
# the other way round: no page installed that the program does not know
extra=$(cd "$dest$MANDIR" && find . -type f | sed 's|.*/||' | sort |
	comm -23 - <(sort <<<"$pages"))
check "no other pages installed ($extra)" test -z "$extra"
check "the completion in $COMPDIR" test -s "$dest$COMPDIR/simfs"
check "README.md in $DOCDIR" cmp -s "$SRC/README.md" "$dest$DOCDIR/README.md"
for f in "$SRC"/doc/*.md; do
	check "doc/${f##*/} in $DOCDIR/doc" cmp -s "$f" "$dest$DOCDIR/doc/${f##*/}"
done
check "traces/README.md (doc links point there)" \
	test -s "$dest$DOCDIR/traces/README.md"
others=$(find "$dest" \( -name '*.h' -o -name '*.pc' -o -name '*.a' \) -print)
check "no headers, .pc or libraries ($others)" test -z "$others"

# ---- every page renders without warnings
for p in $pages; do
	f=$dest$MANDIR/man${p##*.}/$p
	out=$(groff -man -ww -z "$f" 2>&1)
	check "groff -man -ww -z $p: no warnings${out:+ ($out)}" test -z "$out"
	out=$(MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
	check "man --warnings -l $p: no warnings${out:+ ($out)}" test -z "$out"
	title=$(sed -n 's/^\.TH \([^ ]*\) \([0-9]\) .*/\1.\2/p' "$f")
	check "$p: .TH $title" test "$title" = "$(tr a-z A-Z <<<"${p%.*}").${p##*.}"
done
check "man -M finds simfs(1) as installed" \
	test "$(man -M "$dest$MANDIR" -w simfs 2>/dev/null)" = "$dest$MANDIR/man1/simfs.1"

# roff source without its escapes: what a reader sees
plain() { sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\&//g' -e 's/,\\:/,/g' "$1"; }

# ---- every option of `simfs CMD --help` is on simfs-CMD(1)
cmds=$("$SIMFS" --help | sed -n '/^commands:/,/^$/s/^  \([a-z]*\) .*/\1/p')
check "simfs --help lists the commands" test "$(wc -w <<<"$cmds")" -ge 10
for c in $cmds; do
	[[ $c == help ]] && continue
	f=$dest$MANDIR/man1/simfs-$c.1
	plain "$f" >"$dir/page"
	"$SIMFS" "$c" --help >"$dir/help"
	missing=
	for o in $(grep -oE -- '(^|[][ |,(])--?[A-Za-z][-A-Za-z0-9]*' "$dir/help" |
		sed 's/^[][ |,(]//' | sort -u); do
		grep -qF -- "$o" "$dir/page" || missing+=" $o"
	done
	check "simfs-$c(1) has every option of simfs $c --help${missing:+ (missing:$missing)}" \
		test -z "$missing"
	# and the words of the help text (headings change case)
	missing=
	while read -r w; do
		grep -qiF -- "$w" "$dir/page" || missing+=" $w"
	done < <(tr -s ' \t' '\n\n' <"$dir/help" | grep -E '^[A-Za-z]{4,}[.,:;]?$' |
		sed 's/[.,:;]$//' | sort -u)
	check "simfs-$c(1) has every word of its --help${missing:+ (missing:$missing)}" \
		test -z "$missing"
done

# ---- every preset, device model and scheduler is on simfs-options(7)
plain "$dest$MANDIR/man7/simfs-options.7" >"$dir/options"
presets=$("$SIMFS" mount --list-presets | sed -n 's/^  \([a-z0-9-]\{1,\}\) .*/\1/p')
check "--list-presets names presets" test "$(wc -w <<<"$presets")" -ge 5
missing=
for p in $presets; do
	grep -qx -- "$p" "$dir/options" || missing+=" $p"
done
check "simfs-options(7) has every preset${missing:+ (missing:$missing)}" test -z "$missing"
# the device models and presets: the listing up to its schedulers
models=$("$SIMFS" mount --list-devices | sed '/^I\/O schedulers/,$d' |
	sed -n 's/^  \([a-z0-9-]\{1,\}\) .*/\1/p')
scheds=$("$SIMFS" mount --list-devices | sed '1,/^I\/O schedulers/d' |
	sed -n 's/^  \([a-z0-9-]\{1,\}\) .*/\1/p')
check "--list-devices names models and schedulers" \
	test "$(wc -w <<<"$models")" -ge 4 -a "$(wc -w <<<"$scheds")" -ge 3
missing=
for m in $models $scheds; do
	grep -qxE -- "$m|\\.SS \"$m\"" "$dir/options" || missing+=" $m"
done
check "simfs-options(7) has every model of --list-devices${missing:+ (missing:$missing)}" \
	test -z "$missing"
knobs=$("$SIMFS" mount --list-devices | sed -n 's/^    \([a-z_0-9]\{1,\}\) .*/\1/p' | sort -u)
missing=
for k in $knobs; do
	grep -q "^$k=VALUE$" "$dir/options" || missing+=" $k"
done
check "simfs-options(7) has every model knob of --list-devices${missing:+ (missing:$missing)}" \
	test -z "$missing"

# ---- the completion, sourced as bash-completion would
# complete WORD...: the candidates for the last word, one a line
complete_words() {
	bash -c 'source "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_simfs; printf "%s\n" "${COMPREPLY[@]}"' \
		_ "$dest$COMPDIR/simfs" "$@"
}
got=$(complete_words simfs '' | sort | tr '\n' ' ')
want=$( (printf '%s\n' $cmds --help --version) | sort | tr '\n' ' ')
check "simfs <TAB>: the commands ($got)" test "$got" = "$want"
check "simfs mou<TAB>: mount" test "$(complete_words simfs mou)" = mount
check "simfs help um<TAB>: umount" test "$(complete_words simfs help um)" = umount
got=$(complete_words simfs mount --list-p)
check "simfs mount --list-p<TAB>: --list-presets ($got)" test "$got" = --list-presets
got=$(complete_words simfs umount --t)
check "simfs umount --t<TAB>: --timeout ($got)" test "$got" = --timeout
got=$(complete_words simfs mkfs -- | tr '\n' ' ')
check "simfs mkfs --<TAB>: its long options ($got)" test "$got" = "--seed --preset --help "
for form in joined split; do
	if [[ $form == joined ]]; then
		got=$(complete_words simfs mount -o preset= | sed 's/^preset=//' | sort)
	else # COMP_WORDBREAKS has '=': bash hands over "preset" "=" ""
		got=$(complete_words simfs mount -o preset = '' | sort)
	fi
	check "simfs mount -o preset=<TAB> ($form): every preset" \
		test "$got" = "$(sort <<<"$presets")"
done
got=$(complete_words simfs mount -o preset = ext4 | tr '\n' ' ')
check "simfs mount -o preset=ext4<TAB>: ext4 ext4-nojournal ($got)" \
	test "$got" = "ext4 ext4-nojournal "
got=$(complete_words simfs run -o mem=1G,preset=ext3-j)
check "simfs run -o mem=1G,preset=ext3-j<TAB> ($got)" test "$got" = "mem=1G,preset=ext3-journal"
got=$(complete_words simfs mount -o device=hdd,rp)
check "simfs mount -o device=hdd,rp<TAB>: the model's knob ($got)" test "$got" = "device=hdd,rpm="
got=$(complete_words simfs mount -o commi)
check "simfs mount -o commi<TAB>: commit= ($got)" test "$got" = "commit="
got=$(complete_words simfs mount -o device= | sed 's/^device=//' | sort | tr '\n' ' ')
want=$( (echo none; printf '%s\n' $models) | sort -u | tr '\n' ' ')
check "simfs mount -o device=<TAB>: none and every model and preset ($got)" test "$got" = "$want"
got=$(complete_words simfs plot '' | tr '\n' ' ')
want=$("$SIMFS" plot --help | sed -n 's/^\(usage:\)\{0,1\} *simfs plot \([a-z]*\) .*/\2/p' | tr '\n' ' ')
check "simfs plot <TAB>: its actions, as its usage names them ($got)" \
	test "$got" = "$want" -a -n "$want"
got=$(complete_words simfs plot -o '')
check "simfs plot -o <TAB>: a file, not a knob" test "$got" != "alloc="

tap_done
