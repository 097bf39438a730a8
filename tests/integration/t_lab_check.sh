#!/usr/bin/env bash
# tests/integration/t_lab_check.sh - `simfs lab check` grades as it says and
# `simfs lab` refuses bad input: a correct file (made from --answers) ->
# every question right, exit 0; the same file in other spellings ("N."
# and "N answer", upper case, commas, comments) -> the same; a partly
# correct one -> "partly (k of n)", "wrong", "missing", exit 1, the
# expected answers only with --show-answers; malformed files (junk line,
# unknown and duplicate question numbers, no file) -> exit 2 naming the
# line; bad lab, seed, level and options -> exit 2 with a message.
#
#   tests/integration/t_lab_check.sh BUILD/simfs [LAB]
set -uo pipefail
SIMFS=${1:?usage: t_lab_check.sh SIMFS [LAB]}
LAB=${2:-alloc}
dir=$(mktemp -d "${TMPDIR:-/tmp}/simfs-tlabchk.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
. "$(dirname "$0")/tap.sh"
S=(--seed 7 --level 2)

"$SIMFS" lab "$LAB" "${S[@]}" --answers >"$dir/sheet" || fail "--answers"
# "N<TAB>partial<TAB>answer" per question
awk '/^ *[0-9]+\. / { q = $1; sub(/\.$/, "", q) }
     /^     answer: / { a = $0; sub(/^     answer: /, "", a); p = 0
		       if (sub(/   \(credit per item\)$/, "", a)) p = 1
		       print q "\t" p "\t" a }' "$dir/sheet" >"$dir/tab"
nq=$(wc -l <"$dir/tab")
awk -F'\t' '{ print $1 ": " $3 }' "$dir/tab" >"$dir/right.txt"

grade() { # grade WANT_RC FILE [OPTS...] -> output in $dir/out
	local want=$1 file=$2
	shift 2
	"$SIMFS" lab check "$LAB" "${S[@]}" "$@" "$file" >"$dir/out" 2>&1
	local rc=$?
	[[ $rc == "$want" ]] || { sed 's/^/#   /' "$dir/out"; return 1; }
}

if grade 0 "$dir/right.txt" && [[ $(grep -c ' right$' "$dir/out") == "$nq" ]]; then
	ok "the answers of --answers: $nq of $nq right, exit 0"
else
	fail "the answers of --answers do not grade right"
fi

# other spellings of the same answers
{
	echo "# my answers"
	echo
	awk -F'\t' '{ a = toupper($3); gsub(/ /, ",  ", a)
		      if (NR % 2) print $1 ". " a "   # sure"; else print "  " $1 "  " a }' "$dir/tab"
} >"$dir/spelled.txt"
if grade 0 "$dir/spelled.txt"; then
	ok "'N.' and 'N answer', case, commas, blanks, comments: all right"
else
	fail "other spellings of right answers are not right"
fi

# partly right: a partial question's last item changed, a plain question
# made wrong, another left out
pq=$(awk -F'\t' '$2 == 1 && split($3, t, " ") >= 2 { print $1; exit }' "$dir/tab")
wq=$(awk -F'\t' -v p="$pq" '$1 != p { print $1; exit }' "$dir/tab")
mq=$(awk -F'\t' -v p="$pq" -v w="$wq" '$1 != p && $1 != w { print $1; exit }' "$dir/tab")
if [[ -z $pq || -z $wq || -z $mq ]]; then
	fail "lab $LAB ${S[*]}: needs a partial question of 2+ items and 3 questions"
else
	awk -F'\t' -v p="$pq" -v w="$wq" -v m="$mq" '
		$1 == m { next }
		$1 == w { print $1 ": not-this"; next }
		$1 == p { k = split($3, t, " "); t[k] = t[k] "x"; a = t[1]
			  for (i = 2; i <= k; i++) a = a " " t[i]
			  print $1 ": " a; next }
		{ print $1 ": " $3 }' "$dir/tab" >"$dir/part.txt"
	k=$(awk -F'\t' -v p="$pq" '$1 == p { print split($3, t, " ") }' "$dir/tab")
	if grade 1 "$dir/part.txt" &&
		grep -q "^ *$pq  partly ($((k - 1)) of $k)$" "$dir/out" &&
		grep -q "^ *$wq  wrong$" "$dir/out" &&
		grep -q "^ *$mq  missing$" "$dir/out" &&
		! grep -q "expected:" "$dir/out"; then
		ok "partly right: partly ($((k - 1)) of $k), wrong, missing; exit 1"
	else
		fail "partly right file graded wrongly"
	fi
	want=$(awk -F'\t' -v w="$wq" '$1 == w { print $3 }' "$dir/tab")
	if grade 1 "$dir/part.txt" --show-answers &&
		grep -qxF "      expected: $want" "$dir/out"; then
		ok "--show-answers shows the expected answer of a wrong one"
	else
		fail "--show-answers does not show '$want'"
	fi
fi

malformed() { # malformed PATTERN CONTENT
	printf '%b' "$2" >"$dir/bad.txt"
	"$SIMFS" lab check "$LAB" "${S[@]}" "$dir/bad.txt" >"$dir/out" 2>"$dir/err"
	local rc=$?
	if [[ $rc == 2 ]] && grep -qF -- "$1" "$dir/err"; then
		ok "malformed -> 2: $1"
	else
		fail "malformed '$2' -> $rc: $(cat "$dir/err")"
	fi
}
malformed "bad.txt:2: expected 'N: answer', got 'hello'" "1: x\nhello\n"
malformed "bad.txt:3: expected 'N: answer' (a question number" "# c\n\n2x: y\n"
malformed "bad.txt:1: no question 0" "0: x\n"
malformed "bad.txt:2: no question $((nq + 1)) (this sheet has 1 to $nq)" "1: a\n$((nq + 1)): b\n"
malformed "bad.txt:3: a second answer to question 1" "1: a\n2: b\n1. c\n"
malformed "no question 99999999999999999999" "99999999999999999999: a\n"

usage() { # usage PATTERN ARGS...
	local pat=$1
	shift
	"$SIMFS" lab "$@" >"$dir/out" 2>"$dir/err"
	local rc=$?
	if [[ $rc == 2 ]] && grep -qF -- "$pat" "$dir/err"; then
		ok "lab $* -> 2: $pat"
	else
		fail "lab $* -> $rc: $(cat "$dir/err")"
	fi
}
usage "cannot read $dir/none.txt" check "$LAB" "$dir/none.txt"
usage "unknown lab 'nosuch' (labs: " nosuch
usage "unknown lab 'nosuch'" check nosuch "$dir/right.txt"
usage "bad seed 'x1'" "$LAB" --seed x1
usage "bad seed '-1'" "$LAB" --seed -1
usage "bad level '0'" "$LAB" --level 0
usage "bad level 100 for lab $LAB" "$LAB" --level 100
usage "bad level 'two'" "$LAB" --level two
usage "unknown option '--bogus'" "$LAB" --bogus
usage "option '--seed' needs a value" "$LAB" --seed
usage "no answer file" check "$LAB"
usage "too many arguments" check "$LAB" a b
usage "unexpected 'extra'" "$LAB" extra
usage "--image goes with --mount" "$LAB" --image x.img
usage "exclude each other" "$LAB" --answers --script
usage "--show-answers goes with simfs lab check" "$LAB" --show-answers
usage "no lab named" 
usage "--mount /nonexistent/dir: not a directory" "$LAB" --mount /nonexistent/dir

# the listing and the help
if "$SIMFS" lab list >"$dir/list" && grep -q "^$LAB  *[0-9][0-9]* levels  " "$dir/list"; then
	ok "lab list: $LAB, its levels, a summary"
else
	fail "lab list"
fi
if "$SIMFS" lab "$LAB" --help >"$dir/help" && grep -q "^levels:" "$dir/help" &&
	grep -q "^  3  " "$dir/help"; then
	ok "lab $LAB --help: what it teaches, its levels"
else
	fail "lab $LAB --help"
fi
# without --answers the sheet gives nothing away
"$SIMFS" lab "$LAB" "${S[@]}" >"$dir/q"
if ! grep -q "answer:" "$dir/q" && grep -q "simfs lab check $LAB --seed 7 --level 2 FILE" "$dir/q"; then
	ok "the questions alone, and how to grade them"
else
	fail "the sheet without --answers"
fi
tap_done
