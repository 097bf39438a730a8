#!/usr/bin/env bash
# tests/integration/t_groupcommit.sh - group commit on a live mount: four
# processes each create and fsync 4 KiB files at once on an ext4 mount
# over the emulated 2009 disk (device=hdd-2009,clock=emulate), so every
# commit's I/O takes modelled milliseconds of wall time.  An fsync that
# arrives while a commit is in flight waits for it and then commits what
# is left, so the journal makes fewer fsync commits than there were
# fsyncs (jbd2 batches about two per commit here).  The check is only
# "fewer", not a ratio: on a loaded host the writers overlap less, but
# four writers that each wait ~10 ms per fsync still meet.  e2fsck -fn
# clean afterwards.
#
#   tests/integration/t_groupcommit.sh BUILD/simfs
set -uo pipefail
SIMFS=${1:?usage: t_groupcommit.sh SIMFS}
TAG=tgcommit
. "$(dirname "$0")/mount_tap.sh"

img=$dir/img
"$SIMFS" mkfs --preset ext4 "$img" 256M >/dev/null || { echo "Bail out! mkfs"; exit 1; }
"$SIMFS" mount -o "preset=ext4,device=hdd-2009,clock=emulate,stats=$dir/stats.json" \
	"$img" "$mnt" || { echo "Bail out! mount"; exit 1; }
for w in 0 1 2 3; do
	mkdir "$mnt/d$w"
	python3 - "$mnt/d$w" <<'PY' &
import os, sys
d = sys.argv[1]
for i in range(40):
    fd = os.open(os.path.join(d, "f%d" % i), os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, b"x" * 4096)
    os.fsync(fd)
    os.close(fd)
PY
done
wait
"$SIMFS" umount "$mnt" || fail "umount"
read -r fsyncs commits < <(python3 - "$dir/stats.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(d["ops"]["by_type"]["fsync"], d["journal"]["commits"]["fsync"])
PY
)
echo "# $fsyncs fsyncs, $commits fsync commits"
check "160 fsyncs counted" test "$fsyncs" = 160
check "at least one fsync commit" test "$commits" -ge 1
check "fewer fsync commits than fsyncs (group commit)" test "$commits" -lt "$fsyncs"
check "e2fsck -fn clean" sh -c "e2fsck -fn \"\$1\" >/dev/null 2>&1" sh "$img"
tap_done
