#!/usr/bin/env bash
# tests/integration/t_report.sh - the HTML report of `simfs bench` as a
# browser shows it.  A small experiment (ext2 and ext3, fs_mark swept over
# threads, two tables) runs through real `simfs run` cells and the renderer
# (`simfs bench FILE --report`; where the bench command is not built, the
# t_report_render helper makes the same folder), then headless Chromium
# opens report.html: the DOM it builds has the tables with their rows and a
# picture per plotted table, nothing is fetched from outside, and a
# screenshot of the page is a non-empty PNG.  The Markdown tables and the
# plots are checked too.
#
#   tests/integration/t_report.sh BUILD/simfs BUILD/tests/integration/t_report_render
#
# Chromium is required: where it is not installed the test fails and says
# so (tests/setup-debian.sh installs Debian's chromium package).
set -uo pipefail
. "$(dirname "$0")/tap.sh"
tap_tscale
SIMFS=${1:?usage: t_report.sh SIMFS T_REPORT_RENDER}
RENDER=${2:?usage: t_report.sh SIMFS T_REPORT_RENDER}
dir=$(mktemp -d "${TMPDIR:-/tmp}/simfs-treport.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM

chrome=
for c in chromium chromium-browser google-chrome; do
	if command -v "$c" >/dev/null 2>&1; then
		chrome=$c
		break
	fi
done
if [[ -z $chrome ]]; then
	echo "not ok 1 - chromium is not installed: the report test needs it" \
		"(Debian: apt-get install chromium, or run tests/setup-debian.sh)"
	exit 1
fi

# the experiment t_report_render builds by hand, as a file
cat >"$dir/report.ini" <<'EOF'
[global]
name = report-test
title = Report test: ext2 against ext3
size = 256M
device = hdd-2009
cpu = core2-2009
seed = 1

[system ext2]
options = preset=ext2

[system ext3]
options = preset=ext3

[workload fsmark]
spec = fsmark,files=20
sweep = threads=1,2,4

[table files]
title = fs_mark: operations per second by threads
workload = fsmark
phase = iteration 1
metric = ops_s
rows = threads
columns = system
plot = lines

[table commits]
title = fs_mark: journal commits
workload = fsmark
phase = all
metric = commits
rows = system
columns = threads
plot = bars
EOF
out=$dir/out
if "$SIMFS" bench --help >/dev/null 2>&1; then
	how="simfs bench --report"
	render() { "$SIMFS" bench "$dir/report.ini" -j 2 -o "$out" --report; }
else
	how="t_report_render (simfs bench is not built)"
	render() { "$RENDER" "$SIMFS" "$out"; }
fi
if ! render >"$dir/render.out" 2>"$dir/render.err"; then
	cat "$dir/render.err"
	echo "not ok 1 - rendering the experiment with $how failed"
	exit 1
fi
ok "rendered with $how: $(grep -c . "$out/results.csv") results rows"
check "the tables were printed" grep -q '^| threads | ext2 (ops/s) | ext3 (ops/s) |$' "$dir/render.out"
check "tables/files.md has a row per thread count" \
	test "$(grep -cE '^\| [124] \| [0-9.]+ \| [0-9.]+ \|$' "$out/tables/files.md")" = 3
check "tables/files.md names the modelled hardware" \
	grep -q 'Modelled hardware: device hdd-2009, CPU core2-2009.' "$out/tables/files.md"
for p in files commits; do
	check "plots/$p.svg is an SVG" grep -q '<svg' "$out/plots/$p.svg"
	check "plots/$p.png is a PNG" \
		test "$(head -c 8 "$out/plots/$p.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a
done

# headless Chromium: no network, a private profile
browse() { # browse OUTFILE ARGS...
	local o=$1
	shift
	timeout $((120 * tscale)) "$chrome" --headless --no-sandbox --disable-gpu \
		--disable-dev-shm-usage --no-first-run --no-default-browser-check \
		--user-data-dir="$dir/profile" --window-size=1200,2400 \
		"$@" "file://$out/report.html" >"$o" 2>"$dir/chrome.err"
}
if ! browse "$dir/dom.html" --dump-dom || ! grep -q '</html>' "$dir/dom.html"; then
	fail "chromium --dump-dom: $(tail -3 "$dir/chrome.err")"
else
	ok "chromium --dump-dom"
	tables=$(grep -o '<table class="results">' "$dir/dom.html" | wc -l)
	check "the DOM has both result tables ($tables)" test "$tables" = 2
	# files table: 3 thread rows; commits table: 2 system rows (+ header rows)
	rows=$(sed -n '/<section class="table" id="table-files">/,/<\/section>/p' "$dir/dom.html" |
		grep -o '<tr><th>[124]</th>' | wc -l)
	check "the files table has 3 rows in the DOM ($rows)" test "$rows" = 3
	rows=$(sed -n '/<section class="table" id="table-commits">/,/<\/section>/p' "$dir/dom.html" |
		grep -oE '<tr><th>ext[23]</th>' | wc -l)
	check "the commits table has 2 rows in the DOM ($rows)" test "$rows" = 2
	svgs=$(grep -oE '<svg|<img[^>]*src="data:image/png' "$dir/dom.html" | wc -l)
	check "the DOM has a picture per plot ($svgs)" test "$svgs" = 2
	cells=$(grep -o '<details class="cell"' "$dir/dom.html" | wc -l)
	check "the DOM has the 6 cells ($cells)" test "$cells" = 6
	check "the cells show journal commits by reason" \
		grep -q '<th>journal commits: fsync</th>' "$dir/dom.html"
	check "the cells show died-dirty bytes" grep -q '<th>died-dirty bytes</th>' "$dir/dom.html"
	check "nothing external: no script, no http(s) src or href" \
		bash -c "! grep -qE '<script|(src|href)=\"https?:' '$out/report.html'"
fi
rm -f "$dir/shot.png"
(cd "$dir" && browse "$dir/shot.out" --screenshot="$dir/shot.png" --hide-scrollbars)
if [[ -s $dir/shot.png ]] &&
	[[ $(head -c 8 "$dir/shot.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]]; then
	ok "chromium --screenshot: a PNG of $(stat -c %s "$dir/shot.png") bytes"
	# a rendered page is not blank: far more than an empty PNG's bytes
	check "the screenshot is not blank" test "$(stat -c %s "$dir/shot.png")" -gt 20000
else
	fail "chromium --screenshot: no PNG ($(tail -3 "$dir/chrome.err"))"
fi

tap_done
