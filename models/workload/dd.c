/*
 * dd.c - the `dd` workload: `dd if=/dev/zero of=FILE bs=BS count=N` with
 * the usual finishing touches, for `simfs run` (workload.h).
 *
 *   dd,size=64M,bs=1M[,fsync|fdatasync][,sync][,direct][,read][,file=NAME]
 *
 * One client.  Phase "write": open(O_WRONLY|O_CREAT|O_TRUNC [|O_DIRECT]),
 * ceil(size/bs) writes of bs bytes at increasing offsets (the last one
 * short when bs does not divide size), then fsync or fdatasync (conv=fsync,
 * conv=fdatasync), close, then sync(2) (`dd ...; sync`).  All of it is in
 * the timed phase, as with conv=fsync: the figure measures the disk, not
 * the page cache, whenever one of the three is asked for.  With `read`, a
 * phase "read" opens the file again and reads it back with bs-sized reads
 * (`dd if=FILE of=/dev/null bs=BS`, iflag=direct with `direct`).
 *
 * The generator is a step machine (enum dd_step): no per-record state, so
 * size/bs may be large.  The report prints GNU dd's three lines per phase,
 * from the phase's bytes and elapsed time (end_ns - start_ns).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>

#include <glib.h>

#include "workload.h"

#define DD_SECTOR 512u		 /* O_DIRECT alignment we demand */
#define DD_MAX_BS (1ull << 30)	 /* GNU dd's buffer is bs bytes */
#define DD_MAX_SIZE (1ull << 50) /* 1 PiB: bounds size/bs */

enum dd_step {
	DD_OPEN_W = 0,
	DD_WRITE,
	DD_FSYNC,
	DD_CLOSE_W,
	DD_SYNC,
	DD_OPEN_R,
	DD_READ,
	DD_CLOSE_R,
	DD_DONE,
};

struct dd_state {
	uint64_t size_bytes; /* what the file gets */
	uint64_t bs_bytes;   /* bytes per record */
	bool fsync;	     /* conv=fsync */
	bool fdatasync;	     /* conv=fdatasync */
	bool sync;	     /* `; sync` */
	bool direct;	     /* oflag=direct (iflag=direct on read) */
	bool read;	     /* read the file back */
	char *file;	     /* relative to the run root */
	enum dd_step step;   /* what next() returns next */
	uint64_t off;	     /* next record's offset */
};

enum {
	P_SIZE = 0,
	P_BS,
	P_FSYNC,
	P_FDATASYNC,
	P_SYNC,
	P_DIRECT,
	P_READ,
	P_FILE,
};

static const struct sfs_wl_param dd_params[] = {
    [P_SIZE] = {"size", SFS_WLP_SIZE, "64M",
		"bytes to write (bs * count in dd's terms)"},
    [P_BS] = {"bs", SFS_WLP_SIZE, "1M", "bytes per read/write (dd bs=)"},
    [P_FSYNC] = {"fsync", SFS_WLP_BOOL, "no",
		 "fsync before close, inside the timing (conv=fsync)"},
    [P_FDATASYNC] = {"fdatasync", SFS_WLP_BOOL, "no",
		     "fdatasync before close, timed (conv=fdatasync)"},
    [P_SYNC] = {"sync", SFS_WLP_BOOL, "no",
		"sync(2) after dd, inside the timing (dd ...; sync)"},
    [P_DIRECT] = {"direct", SFS_WLP_BOOL, "no",
		  "O_DIRECT (oflag=direct, and iflag=direct for read)"},
    [P_READ] = {"read", SFS_WLP_BOOL, "no",
		"then read the file back (dd if=FILE of=/dev/null)"},
    [P_FILE] = {"file", SFS_WLP_STRING, "ddfile",
		"output file, relative to the run root (dd of=)"},
    {.name = NULL},
};

/* A relative path without "." / ".." components or empty parts. */
static bool dd_path_ok(const char *p)
{
	if (!p || !*p || *p == '/' || strlen(p) > 4095)
		return false;
	for (const char *s = p; *s;) {
		const char *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);

		if (n == 0 || (n == 1 && s[0] == '.') ||
		    (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		s += n + (e ? 1 : 0);
		if (e && !*s)
			return false;
	}
	return true;
}

static int dd_init(const struct sfs_wl_value *v, void **st_out, char **err)
{
	struct dd_state *st;

	*st_out = NULL;
	if (v[P_SIZE].u == 0 || v[P_SIZE].u > DD_MAX_SIZE) {
		*err = g_strdup_printf("size must be 1 byte .. 1P (got %s)",
				       v[P_SIZE].s);
		return -EINVAL;
	}
	if (v[P_BS].u == 0 || v[P_BS].u > DD_MAX_BS) {
		*err = g_strdup_printf("bs must be 1 byte .. 1G (got %s)",
				       v[P_BS].s);
		return -EINVAL;
	}
	if (v[P_FSYNC].u && v[P_FDATASYNC].u) {
		*err = g_strdup("fsync and fdatasync together: pick one "
				"(conv=fsync or conv=fdatasync)");
		return -EINVAL;
	}
	if (v[P_DIRECT].u &&
	    (v[P_BS].u % DD_SECTOR || v[P_SIZE].u % DD_SECTOR)) {
		*err = g_strdup_printf("direct needs bs and size in whole "
				       "%u-byte sectors (bs=%s size=%s)",
				       DD_SECTOR, v[P_BS].s, v[P_SIZE].s);
		return -EINVAL;
	}
	if (!dd_path_ok(v[P_FILE].s)) {
		*err = g_strdup_printf("file '%s': need a relative path "
				       "without '.' or '..' parts",
				       v[P_FILE].s);
		return -EINVAL;
	}
	st = g_new0(struct dd_state, 1);
	st->size_bytes = v[P_SIZE].u;
	st->bs_bytes = v[P_BS].u;
	st->fsync = v[P_FSYNC].u;
	st->fdatasync = v[P_FDATASYNC].u;
	st->sync = v[P_SYNC].u;
	st->direct = v[P_DIRECT].u;
	st->read = v[P_READ].u;
	st->file = g_strdup(v[P_FILE].s);
	st->step = DD_OPEN_W;
	*st_out = st;
	return 0;
}

/* Whether step s produces an op with these options. */
static bool dd_step_on(const struct dd_state *st, enum dd_step s)
{
	switch (s) {
	case DD_FSYNC:
		return st->fsync || st->fdatasync;
	case DD_SYNC:
		return st->sync;
	case DD_OPEN_R:
	case DD_READ:
	case DD_CLOSE_R:
		return st->read;
	default:
		return true;
	}
}

static int dd_next(void *vst, unsigned c, sfs_ns_t now, struct sfs_wop *out,
		   char **err)
{
	struct dd_state *st = vst;
	uint32_t dflag = st->direct ? O_DIRECT : 0;

	(void)c, (void)now, (void)err;
	while (st->step < DD_DONE && !dd_step_on(st, st->step))
		st->step++;
	out->fd = 0;
	out->expect = 0;
	switch (st->step) {
	case DD_OPEN_W:
		out->type = SFS_WOP_OPEN;
		out->path = st->file;
		out->flags = O_WRONLY | O_CREAT | O_TRUNC | dflag;
		out->mode = 0644;
		out->phase = "write";
		st->off = 0;
		st->step = DD_WRITE;
		return 1;
	case DD_WRITE:
	case DD_READ:
		out->type = st->step == DD_WRITE ? SFS_WOP_WRITE : SFS_WOP_READ;
		out->off = st->off;
		out->len = MIN(st->bs_bytes, st->size_bytes - st->off);
		st->off += out->len;
		if (st->off >= st->size_bytes)
			st->step++;
		return 1;
	case DD_FSYNC:
		out->type = SFS_WOP_FSYNC;
		out->flags = st->fdatasync ? SFS_WOP_DATASYNC : 0;
		out->label = st->fdatasync ? "fdatasync" : NULL;
		st->step = DD_CLOSE_W;
		return 1;
	case DD_CLOSE_W:
	case DD_CLOSE_R:
		out->type = SFS_WOP_CLOSE;
		st->step++;
		return 1;
	case DD_SYNC:
		out->type = SFS_WOP_SYNC;
		st->step = DD_OPEN_R;
		return 1;
	case DD_OPEN_R:
		out->type = SFS_WOP_OPEN;
		out->path = st->file;
		out->flags = O_RDONLY | dflag;
		out->phase = "read";
		st->off = 0;
		st->step = DD_READ;
		return 1;
	case DD_DONE:
	default:
		return 0;
	}
}

/*
 * n in GNU dd's human-readable style (human_autoscale, round to nearest,
 * a space before the unit): "67 MB", "1.1 GB", "64 MiB"; base 1000 or
 * 1024.  Returns false when n is below the base (no prefix would show).
 */
static bool dd_human(double n, unsigned base, char *buf, size_t len)
{
	static const char pfx[] = "kMGTPE";
	int e = -1;

	if (n < base) {
		snprintf(buf, len, "%.0f B", n);
		return false;
	}
	while (n >= base && e < 5) {
		n /= base;
		e++;
	}
	char p = base == 1024 && pfx[e] == 'k' ? 'K' : pfx[e];
	if (n < 9.95)
		snprintf(buf, len, "%.1f %c%sB", n, p, base == 1024 ? "i" : "");
	else
		snprintf(buf, len, "%.0f %c%sB", n, p, base == 1024 ? "i" : "");
	return true;
}

/* GNU dd's three lines for one phase that moved bytes in elapsed time. */
static void dd_print(FILE *out, uint64_t bs, uint64_t bytes, sfs_ns_t ns)
{
	double s = (double)ns / 1e9;
	char si[32], iec[32], rate[40];
	uint64_t full = bytes / bs, part = bytes % bs ? 1 : 0;

	fprintf(out, "%" PRIu64 "+%" PRIu64 " records in\n", full, part);
	fprintf(out, "%" PRIu64 "+%" PRIu64 " records out\n", full, part);
	if (s > 0) {
		dd_human((double)bytes / s, 1000, rate, sizeof(rate));
		g_strlcat(rate, "/s", sizeof(rate));
	} else {
		g_strlcpy(rate, "Infinity B/s", sizeof(rate));
	}
	bool has_si = dd_human((double)bytes, 1000, si, sizeof(si));
	bool has_iec = dd_human((double)bytes, 1024, iec, sizeof(iec));
	if (!has_si)
		fprintf(out, "%" PRIu64 " byte%s copied, %g s, %s\n", bytes,
			bytes == 1 ? "" : "s", s, rate);
	else if (!has_iec)
		fprintf(out, "%" PRIu64 " bytes (%s) copied, %g s, %s\n", bytes,
			si, s, rate);
	else
		fprintf(out, "%" PRIu64 " bytes (%s, %s) copied, %g s, %s\n",
			bytes, si, iec, s, rate);
}

static void dd_report(void *vst, const struct sfs_wl_result *r, FILE *out)
{
	struct dd_state *st = vst;
	const struct sfs_wl_phase *w = sfs_wl_result_phase(r, "write");
	const struct sfs_wl_phase *rd = sfs_wl_result_phase(r, "read");
	char bs[32];

	if (st->bs_bytes % (1 << 20) == 0)
		snprintf(bs, sizeof(bs), "%" PRIu64 "M", st->bs_bytes >> 20);
	else if (st->bs_bytes % 1024 == 0)
		snprintf(bs, sizeof(bs), "%" PRIu64 "K", st->bs_bytes >> 10);
	else
		snprintf(bs, sizeof(bs), "%" PRIu64, st->bs_bytes);
	if (w) {
		fprintf(
		    out,
		    "$ dd if=/dev/zero of=%s bs=%s count=%" PRIu64 "%s%s%s%s\n",
		    st->file, bs,
		    (st->size_bytes + st->bs_bytes - 1) / st->bs_bytes,
		    st->size_bytes % st->bs_bytes ? " iflag=count_bytes" : "",
		    st->fsync	    ? " conv=fsync"
		    : st->fdatasync ? " conv=fdatasync"
				    : "",
		    st->direct ? " oflag=direct" : "",
		    st->sync ? "; sync" : "");
		dd_print(out, st->bs_bytes, w->bytes_written,
			 w->end_ns - w->start_ns);
	}
	if (rd) {
		fprintf(out, "$ dd if=%s of=/dev/null bs=%s%s\n", st->file, bs,
			st->direct ? " iflag=direct" : "");
		dd_print(out, st->bs_bytes, rd->bytes_read,
			 rd->end_ns - rd->start_ns);
	}
	if (!w && !rd)
		fprintf(out, "dd: no phase ran\n");
	sfs_wl_report_failures(out, "dd", r);
}

/*
 * The rate of dd_print's last line as a metric, per phase ("write",
 * "read"): rate_mb_s, bytes / second / 10^6 (dd prints it scaled to kB/s,
 * MB/s or GB/s; this is the same number in MB/s).  Not "mb_s": the runner
 * already writes a phase's mb_s.  A phase of no time gives no row (dd
 * prints "Infinity B/s").
 */
static void dd_metrics(void *vst, const struct sfs_wl_result *r,
		       sfs_wl_emit_fn *emit, void *ctx)
{
	static const char *const names[] = {"write", "read"};

	(void)vst;
	for (unsigned i = 0; i < G_N_ELEMENTS(names); i++) {
		const struct sfs_wl_phase *ph =
		    sfs_wl_result_phase(r, names[i]);
		if (!ph || ph->end_ns <= ph->start_ns)
			continue;
		double s = (double)(ph->end_ns - ph->start_ns) / 1e9;
		uint64_t bytes = i == 0 ? ph->bytes_written : ph->bytes_read;
		emit(ctx, names[i], "rate_mb_s", (double)bytes / s / 1e6,
		     "MB/s");
	}
}

static void dd_fini(void *vst)
{
	struct dd_state *st = vst;

	g_free(st->file);
	g_free(st);
}

const struct sfs_workload_ops sfs_wl_dd_ops = {
    .name = "dd",
    .help = "dd if=/dev/zero of=FILE bs=BS: one sequential file, "
	    "optionally synced and read back",
    .doc = "One client writes one file sequentially in bs-sized records "
	   "(dd if=/dev/zero of=FILE bs=BS count=SIZE/BS), then with fsync "
	   "or fdatasync flushes it before close (conv=fsync, "
	   "conv=fdatasync) and with sync calls sync(2) after close (dd; "
	   "sync); the flush is inside the timed 'write' phase, so the rate "
	   "is the disk's, not the page cache's. direct opens with O_DIRECT "
	   "(oflag=direct). read adds a 'read' phase that reads the file "
	   "back (dd if=FILE of=/dev/null, iflag=direct with direct). The "
	   "report prints GNU dd's records in/out and 'bytes (MB, MiB) "
	   "copied, s, MB/s' lines from the phase's bytes and elapsed time. "
	   "Differences from GNU dd: no read from /dev/zero is modelled "
	   "(the runner supplies the bytes), the file is opened with "
	   "O_TRUNC instead of ftruncate()d, a size that bs does not divide "
	   "ends in one short record (as iflag=count_bytes), and direct "
	   "needs sector multiples instead of dropping O_DIRECT for a last "
	   "partial record.",
    .params = dd_params,
    .init = dd_init,
    .clients = sfs_wl_one_client,
    .next = dd_next,
    .report = dd_report,
    .metrics = dd_metrics,
    .fini = dd_fini,
};
