#!/usr/bin/env bash
# tests/crash/t_crash_cli.sh - the progress line of `simfs crash`.  With
# stderr not a terminal nothing is added; --progress forces it onto a file
# (one line per percent, ending at total with the violation count);
# on a terminal (script(1) gives it one) the line is rewritten in place and
# erased before the table; --quiet, --no-progress and --trace keep it off.
# In every case stdout is byte for byte what it is without progress.
# No mount: runs anywhere.  Usage: t_crash_cli.sh SIMFS
set -u
SIMFS=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/simfs-crashcli.XXXXXX")
trap 'rm -rf "$dir"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
fail() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
show() { tr '\r\033' '|~' <"$1" | head -c 600; }

command -v script >/dev/null || { echo "Bail out! script(1) (bsdutils) is missing"; exit 1; }
img=$dir/img
truncate -s 16M "$img" && "$SIMFS" mkfs "$img" >/dev/null ||
	{ echo "Bail out! simfs mkfs $img failed"; exit 1; }

sweep=(crash --workload rename --points sample:8 --jobs 2)

# the reference: stderr a file, no progress asked for
"$SIMFS" "${sweep[@]}" "$img" >"$dir/ref" 2>"$dir/ref.err"
rc=$?
if [[ $rc == 0 && ! -s $dir/ref.err ]] && grep -q "8 points, 0 violations" "$dir/ref"; then
	ok "not a terminal: exit 0, stderr empty, 8 points in the summary"
else
	fail "not a terminal: exit $rc, stderr '$(show "$dir/ref.err")'"
fi

# forced onto a file
"$SIMFS" "${sweep[@]}" --progress "$img" >"$dir/out" 2>"$dir/err"
rc=$?
if [[ $rc == 0 ]] && cmp -s "$dir/ref" "$dir/out"; then
	ok "--progress: stdout unchanged"
else
	fail "--progress: exit $rc, stdout differs"
fi
if [[ $(head -n1 "$dir/err") == "simfs crash: 0/8 checks done (0%), 0 violations so far" &&
	$(tail -n1 "$dir/err") == "simfs crash: 8/8 checks done (100%), 0 violations so far" ]] &&
	! grep -qv "^simfs crash: [0-9]/8 checks done" "$dir/err"; then
	ok "--progress: 0/8 .. 8/8 on stderr, nothing else"
else
	fail "--progress: stderr '$(show "$dir/err")'"
fi

# violations counted as they come: data=none held to ordered's promise
"$SIMFS" crash --workload unlink --promise ordered --progress "$img" \
	>"$dir/vout" 2>"$dir/verr"
rc=$?
nv=$(sed -n 's/.* points, \([0-9]*\) violations.*/\1/p' "$dir/vout")
last=$(tail -n1 "$dir/verr")
if [[ $rc == 1 && -n $nv && $nv != 0 &&
	$last =~ ^simfs\ crash:\ ([0-9]+)/([0-9]+)\ checks\ done\ \(100%\),\ $nv\ violations?\ so\ far$ &&
	${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]]; then
	ok "--progress counts the violations ($nv, as the summary)"
else
	fail "violations: exit $rc, summary '$nv', last progress line '$last'"
fi

# on a terminal: stdout and stderr both go to script's pty.  Strip the
# progress updates, the erase and the pty's CR before LF: the rest is the
# reference.
tty_run() { # tty_run OUT ARGS...: run simfs on a terminal
	local out=$1
	shift
	script -qec "$(printf '%q ' "$SIMFS" "$@")" /dev/null >"$out" 2>&1
}
strip_tty() {
	perl -0pe 's/\rsimfs crash: \d+\/\d+ checks done[^\e]*\e\[K//g;
		s/\r\e\[K//g; s/\r\n/\n/g' "$1"
}
tty_run "$dir/tty" "${sweep[@]}" "$img"
rc=$?
if [[ $rc == 0 ]] && grep -q $'\rsimfs crash: [1-7]/8 checks done ([0-9]*%), 0 violations so far\033\[K' "$dir/tty"; then
	ok "terminal: the progress line is shown, rewritten in place"
else
	fail "terminal: exit $rc, output '$(show "$dir/tty")'"
fi
if strip_tty "$dir/tty" | cmp -s - "$dir/ref"; then
	ok "terminal: without the progress line, the output is the reference"
else
	fail "terminal: the rest differs: '$(strip_tty "$dir/tty" | diff - "$dir/ref" | head -c 600)'"
fi
if grep -q $'\r\033\[K  point op at the cut' "$dir/tty"; then
	ok "terminal: the line is erased before the table"
else
	fail "terminal: no erase before the table: '$(show "$dir/tty")'"
fi

# kept off on a terminal: --quiet, --no-progress, --trace
for opt in --quiet --no-progress --trace; do
	args=("${sweep[@]}" "$opt")
	[[ $opt == --trace ]] && args=(crash --workload rename --points sample:2 --trace)
	tty_run "$dir/off" "${args[@]}" "$img"
	rc=$?
	"$SIMFS" "${args[@]}" "$img" >"$dir/offref" 2>&1
	if [[ $rc == 0 ]] && ! grep -q "checks done" "$dir/off" &&
		tr -d '\r' <"$dir/off" | cmp -s - "$dir/offref"; then
		ok "terminal, $opt: no progress line, output as without a terminal"
	else
		fail "terminal, $opt: exit $rc, output '$(show "$dir/off")'"
	fi
done

echo "1..$n"
[[ $failed == 0 ]]
