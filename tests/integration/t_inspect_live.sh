#!/usr/bin/env bash
# tests/integration/t_inspect_live.sh - `simfs inspect` on an ext4 image
# that is mounted, so its journal still needs recovery: the summary and a
# file's view work (exit 0), show what the journal's committed
# transactions hold (a file written and synced through the mount), name
# the mount's models, and leave the image's bytes unchanged; after the
# unmount the same file reads back the same.
#
#   tests/integration/t_inspect_live.sh BUILD/simfs
set -uo pipefail
SIMFS=${1:?usage: t_inspect_live.sh SIMFS}
TAG=tinsp
. "$(dirname "$0")/mount_tap.sh"

"$SIMFS" mkfs --preset ext4 "$dir/img" 128M >/dev/null || { echo "Bail out! mkfs"; exit 1; }
"$SIMFS" mount -o preset=ext4 "$dir/img" "$mnt" || { echo "Bail out! mount"; exit 1; }
mkdir "$mnt/d" && printf 'hello, journal\n' >"$mnt/d/note" && "$SIMFS" sync "$mnt"
sum0=$(md5sum <"$dir/img")

"$SIMFS" inspect "$dir/img" summary >"$dir/sum" 2>"$dir/sum.err"
check "inspect summary of a mounted ext4 image exits 0" test $? = 0
check "it says the journal was replayed in memory" grep -q "replayed in memory" "$dir/sum.err"
check "it names the mount's models" grep -q "models: .*alloc=mballoc.*data=ordered" "$dir/sum"
check "it reports the image's extents feature" grep -q "extents feature is set" "$dir/sum"
"$SIMFS" inspect "$dir/img" file /d/note >"$dir/file" 2>/dev/null
check "inspect file finds a file the journal holds" grep -q "size: *15 bytes" "$dir/file"
check "the image's bytes are unchanged" test "$(md5sum <"$dir/img")" = "$sum0"

"$SIMFS" umount "$mnt" || fail "umount"
"$SIMFS" inspect "$dir/img" summary >"$dir/sum2" 2>"$dir/sum2.err"
check "after the unmount: exit 0, nothing to replay" bash -c "! grep -q 'replayed' '$dir/sum2.err'"
check "after the unmount: models not recorded in the image" grep -q "not recorded in the image" "$dir/sum2"
"$SIMFS" inspect "$dir/img" file /d/note >"$dir/file2" 2>/dev/null
check "after the unmount: the same file" grep -q "size: *15 bytes" "$dir/file2"
e2fsck -fn "$dir/img" >"$dir/fsck" 2>&1
check "e2fsck -fn clean" test $? = 0

tap_done
