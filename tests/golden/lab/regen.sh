#!/usr/bin/env bash
# tests/golden/lab/regen.sh - rewrite the golden sheets of `simfs lab`
# (NAME-L.txt: seed 1, level L, with the answers) for every lab and level
# `simfs lab list` names.  Run it when a model or a lab changes on
# purpose, read `git diff tests/golden/lab` and commit what you meant.
#
#   tests/golden/lab/regen.sh BUILD/simfs [NAME...]
set -euo pipefail
SIMFS=${1:?usage: regen.sh SIMFS [NAME...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
"$SIMFS" lab list | while read -r name levels _; do
	if [[ $# -gt 0 && " $* " != *" $name "* ]]; then
		continue
	fi
	for ((L = 1; L <= levels; L++)); do
		"$SIMFS" lab "$name" --seed 1 --level "$L" --answers \
			>"$here/$name-$L.txt"
		echo "wrote $here/$name-$L.txt"
	done
done
