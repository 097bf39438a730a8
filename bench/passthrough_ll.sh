# bench/passthrough_ll.sh - sourced by the benchmarks that compare simfs
# with libfuse's example passthrough_ll: build_passthrough_ll DIR compiles
# it from the example source Debian's libfuse3-dev ships (plain or
# gzipped) into DIR/passthrough_ll, or returns 1 with a message on stderr
# when the source is missing.
build_passthrough_ll() {
	local dir=$1 ex=/usr/share/doc/libfuse3-dev/examples f
	mkdir -p "$dir/ptsrc"
	for f in passthrough_ll.c passthrough_helpers.h; do
		if [[ -f $ex/$f ]]; then
			cp "$ex/$f" "$dir/ptsrc/"
		elif [[ -f $ex/$f.gz ]]; then
			gzip -dc "$ex/$f.gz" >"$dir/ptsrc/$f"
		else
			echo "$ex/$f not found (apt-get install libfuse3-dev)" >&2
			return 1
		fi
	done
	# shellcheck disable=SC2046
	cc -O2 -Wall -o "$dir/passthrough_ll" "$dir/ptsrc/passthrough_ll.c" \
		$(pkg-config --cflags --libs fuse3)
}
