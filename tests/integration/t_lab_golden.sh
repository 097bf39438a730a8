#!/usr/bin/env bash
# tests/integration/t_lab_golden.sh - one lab's sheets are stable and its
# own answers grade as right: for every level, `simfs lab NAME --seed 1
# --level L --answers` equals tests/golden/lab/NAME-L.txt byte for byte and
# is the same twice; the answer file made from that output (never written
# by hand) passes `simfs lab check` with every question right.
#
#   tests/integration/t_lab_golden.sh BUILD/simfs NAME
# After a model changes on purpose: tests/golden/lab/regen.sh BUILD/simfs
set -uo pipefail
SIMFS=${1:?usage: t_lab_golden.sh SIMFS NAME}
LAB=${2:?usage: t_lab_golden.sh SIMFS NAME}
GOLDEN=$(cd "$(dirname "$0")/../golden/lab" && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/simfs-tlab.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
. "$(dirname "$0")/tap.sh"

# an answer file from the --answers output: "N: answer" per question
answers_of() {
	awk '/^ *[0-9]+\. / { q = $1; sub(/\.$/, "", q) }
	     /^     answer: / { a = $0; sub(/^     answer: /, "", a)
			       sub(/   \(credit per item\)$/, "", a)
			       print q ": " a }' "$1"
}

levels=$("$SIMFS" lab list | awk -v l="$LAB" '$1 == l { print $2 }')
if [[ -z $levels ]]; then
	fail "simfs lab list names $LAB"
	echo "1..$n"
	exit 1
fi
for ((L = 1; L <= levels; L++)); do
	want=$GOLDEN/$LAB-$L.txt
	for k in 1 2; do
		"$SIMFS" lab "$LAB" --seed 1 --level "$L" --answers \
			>"$dir/out$k" 2>"$dir/err$k"
		echo $? >"$dir/rc$k"
	done
	if [[ $(cat "$dir/rc1") != 0 ]]; then
		fail "$LAB level $L: exit $(cat "$dir/rc1"): $(cat "$dir/err1")"
		continue
	fi
	if cmp -s "$dir/out1" "$dir/out2"; then
		ok "$LAB level $L: the same sheet twice"
	else
		fail "$LAB level $L: two runs differ"
	fi
	if [[ ! -f $want ]]; then
		fail "$LAB level $L: no golden file $want (regen.sh)"
	elif cmp -s "$want" "$dir/out1"; then
		ok "$LAB level $L: equals $(basename "$want")"
	else
		fail "$LAB level $L: differs from $(basename "$want")"
		diff -u "$want" "$dir/out1" | head -40 | sed 's/^/#   /'
	fi
	answers_of "$dir/out1" >"$dir/ans"
	nq=$(grep -c '^ *[0-9]*\. ' "$dir/out1")
	if [[ $(wc -l <"$dir/ans") -ge 3 && $(wc -l <"$dir/ans") == "$nq" ]]; then
		ok "$LAB level $L: $nq questions, each with an answer"
	else
		fail "$LAB level $L: $nq questions, $(wc -l <"$dir/ans") answers"
	fi
	"$SIMFS" lab check "$LAB" --seed 1 --level "$L" "$dir/ans" >"$dir/chk" 2>&1
	rc=$?
	if [[ $rc == 0 ]] && [[ $(grep -c ' right$' "$dir/chk") == "$nq" ]]; then
		ok "$LAB level $L: its own answers grade right (exit 0)"
	else
		fail "$LAB level $L: check of its own answers -> $rc"
		sed 's/^/#   /' "$dir/chk"
	fi
done
tap_done
