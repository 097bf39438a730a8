#!/usr/bin/env bash
# tests/setup-debian.sh - install everything simfs needs to build, test and
# benchmark on Debian (12 "bookworm" or later), non-interactively.  Run as
# root.  Safe to run again: apt-get skips what is already installed.
set -euo pipefail

packages=(
	# build
	meson ninja-build pkg-config gcc clang
	libfuse3-dev libglib2.0-dev libxxhash-dev libcmocka-dev libjson-glib-dev
	libisal-dev
	# run and check: fusermount3, e2fsck/mke2fs/debugfs, losetup/mount
	fuse3 e2fsprogs util-linux attr
	# the install test: groff and man render the manual pages
	groff-base man-db
	# the ACL and mmap tests: setfacl/getfacl, SQLite in WAL mode
	acl sqlite3
	# benchmarks (fs_mark for bench/mount_concurrency.sh), plots and the
	# bench scripts' report parsing; gnuplot-nox
	# has the svg and pngcairo terminals simfs bench draws with, and a font
	# for the PNGs (fonts-liberation is only a recommendation of it)
	fio dbench fsmark gnuplot-nox fonts-dejavu-core python3
	# bench/compare.sh: e2fsprogs' FUSE driver, one of the targets
	fuse2fs
	# the test that opens simfs bench's report.html in headless Chromium
	chromium
)

if [[ $(id -u) != 0 ]]; then
	echo "setup-debian.sh: run as root (apt-get install)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${packages[@]}"

# FUSE needs its device; loop devices are used by the kernel cross-check.
[[ -e /dev/fuse ]] || modprobe fuse 2>/dev/null || true
[[ -e /dev/loop-control ]] || modprobe loop 2>/dev/null || true
if [[ ! -e /dev/fuse ]]; then
	echo "setup-debian.sh: warning: /dev/fuse is missing; the integration tests will be skipped" >&2
fi
