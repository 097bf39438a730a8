/*
 * test_workloads.c - the dd, untar, iozone and tiobench generators alone.
 *
 * Each case builds a workload with sfs_workload_new, pulls every client's
 * ops to the end with a fake clock (pull(): round robin, one microsecond
 * per op, barriers held until every live client reached one, as the
 * runners do) and checks the ops against the parameters: counts, offsets,
 * bytes, flags, phases and their order.  The same pull fills a struct
 * sfs_wl_result, so the reports are checked as text.  untar runs on small
 * archives made here with GNU tar in a private temp dir (gnu and pax
 * formats; long names, symlinks, hard links) and compares the bytes
 * written with the files; bad specs and malformed archives must give a
 * clear one-line error.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "testsupport.h"
#include "workload.h"

#define KiB 1024ULL
#define MiB (1024ULL * 1024ULL)
#define STEP_NS 1000ULL

/* One op as pulled, with copies of its strings and data. */
struct top {
	enum sfs_wop_type type;
	int fd;
	uint64_t off, len;
	uint32_t flags, mode;
	int expect;
	char *path, *path2, *phase;
	GBytes *data;
};

struct pulled {
	unsigned clients;
	GArray **ops; /* per client, struct top */
	struct sfs_wl_result res;
};

static void top_clear(gpointer p)
{
	struct top *t = p;

	g_free(t->path);
	g_free(t->path2);
	g_free(t->phase);
	if (t->data)
		g_bytes_unref(t->data);
}

/* The one-line error of a spec that must be refused. */
static char *refused(const char *spec)
{
	struct sfs_workload *w = NULL;
	char *err = NULL;
	int rc = sfs_workload_new(spec, &w, &err);

	assert_int_equal(rc, -EINVAL);
	assert_null(w);
	assert_non_null(err);
	assert_null(strchr(err, '\n'));
	return err;
}

static void assert_refused(const char *spec, const char *needle)
{
	char *err = refused(spec);

	if (!strstr(err, needle))
		print_error("%s: '%s' lacks '%s'\n", spec, err, needle);
	assert_non_null(strstr(err, needle));
	g_free(err);
}

/* Pull every client to the end; barriers wait for all live clients. */
static struct pulled *pull(struct sfs_workload *w)
{
	struct pulled *p = g_new0(struct pulled, 1);
	unsigned n = sfs_workload_clients(w);
	bool *done = g_new0(bool, n), *waiting = g_new0(bool, n);
	/* indices: the phases array moves as phases are added */
	long *ph = g_new(long, n);

	for (unsigned c = 0; c < n; c++)
		ph[c] = -1;
	sfs_ns_t now = 0;
	unsigned live = n;

	p->clients = n;
	p->ops = g_new0(GArray *, n);
	sfs_wl_result_init(&p->res, n);
	for (unsigned c = 0; c < n; c++) {
		p->ops[c] = g_array_new(FALSE, TRUE, sizeof(struct top));
		g_array_set_clear_func(p->ops[c], top_clear);
	}
	while (live) {
		unsigned nwait = 0;
		for (unsigned c = 0; c < n; c++) {
			if (done[c] || waiting[c])
				continue;
			struct sfs_wop op;

			if (sfs_test_next(w, c, now, &op) == 0) {
				done[c] = true;
				live--;
				continue;
			}
			struct top t = {op.type,
					op.fd,
					op.off,
					op.len,
					op.flags,
					op.mode,
					op.expect,
					g_strdup(op.path),
					g_strdup(op.path2),
					g_strdup(op.phase),
					NULL};
			if (op.data)
				t.data = g_bytes_new(op.data, op.len);
			g_array_append_val(p->ops[c], t);
			if (op.phase)
				ph[c] =
				    sfs_wl_result_enter(&p->res, op.phase, now) -
				    p->res.phases;
			if (ph[c] < 0)
				ph[c] = sfs_wl_result_enter(&p->res, "-", now) -
					p->res.phases;
			uint64_t bytes =
			    op.type == SFS_WOP_READ || op.type == SFS_WOP_WRITE
				? op.len
				: 0;
			sfs_wl_result_op(&p->res, &p->res.phases[ph[c]], c, &op,
					 0, bytes, now, now + STEP_NS);
			sfs_workload_done(w, c, &op, 0);
			now += STEP_NS;
			if (op.type == SFS_WOP_BARRIER)
				waiting[c] = true;
		}
		for (unsigned c = 0; c < n; c++)
			nwait += waiting[c];
		if (nwait == live)
			for (unsigned c = 0; c < n; c++)
				waiting[c] = false;
	}
	g_free(done);
	g_free(waiting);
	g_free(ph);
	return p;
}

static void pulled_free(struct pulled *p)
{
	for (unsigned c = 0; c < p->clients; c++)
		g_array_free(p->ops[c], TRUE);
	g_free(p->ops);
	sfs_wl_result_free(&p->res);
	g_free(p);
}

static struct top *op_at(struct pulled *p, unsigned c, unsigned i)
{
	assert_true(i < p->ops[c]->len);
	return &g_array_index(p->ops[c], struct top, i);
}

static unsigned count(struct pulled *p, unsigned c, enum sfs_wop_type t,
		      const char *phase)
{
	unsigned n = 0;
	const char *cur = NULL;

	for (unsigned i = 0; i < p->ops[c]->len; i++) {
		struct top *o = op_at(p, c, i);
		if (o->phase)
			cur = o->phase;
		if (o->type == t && (!phase || (cur && !strcmp(cur, phase))))
			n++;
	}
	return n;
}

/* The report as text. */
static char *report(struct sfs_workload *w, const struct sfs_wl_result *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	sfs_workload_report(w, r, f);
	fclose(f);
	return buf;
}

static void assert_has(const char *text, const char *needle)
{
	if (!strstr(text, needle))
		print_error("report lacks '%s':\n%s\n", needle, text);
	assert_non_null(strstr(text, needle));
}

/* ---- common ---- */

static void test_workloads_bad_specs(void **state)
{
	(void)state;
	assert_refused("dd,foo=1", "unknown parameter 'foo'");
	assert_refused("dd,bs=abc", "bad value 'abc' for bs");
	assert_refused("iozone,threads=x", "bad value 'x' for threads");
	assert_refused("tiobench,direct=maybe", "bad value 'maybe'");
	assert_refused("untar,nosuch", "unknown parameter 'nosuch'");
	assert_refused("iozone,threads=0", "threads must be 1..1024");
	assert_refused("iozone,threads=1025", "threads must be 1..1024");
	assert_refused("tiobench,threads=5000", "threads must be 1..1024");
	assert_refused("dd,size=0", "size must be");
	assert_refused("iozone,size=0", "size must be");
	assert_refused("tiobench,size=0", "size must be");
}

/* ---- dd ---- */

static void test_workloads_dd_writes_then_fsync(void **state)
{
	(void)state;
	struct sfs_workload *w =
	    sfs_test_workload("dd,size=8M,bs=1M,fsync,file=out/x");
	struct pulled *p = pull(w);

	assert_int_equal(p->clients, 1);
	assert_int_equal(p->ops[0]->len, 1 + 8 + 1 + 1);
	struct top *o = op_at(p, 0, 0);
	assert_int_equal(o->type, SFS_WOP_OPEN);
	assert_string_equal(o->path, "out/x");
	assert_string_equal(o->phase, "write");
	assert_true(o->flags & O_CREAT);
	assert_false(o->flags & O_DIRECT);
	for (unsigned i = 0; i < 8; i++) {
		o = op_at(p, 0, 1 + i);
		assert_int_equal(o->type, SFS_WOP_WRITE);
		assert_int_equal(o->off, i * MiB);
		assert_int_equal(o->len, MiB);
		assert_int_equal(o->expect, 0);
	}
	assert_int_equal(op_at(p, 0, 9)->type, SFS_WOP_FSYNC);
	assert_int_equal(op_at(p, 0, 9)->flags, 0);
	assert_int_equal(op_at(p, 0, 10)->type, SFS_WOP_CLOSE);

	/* 11 ops of 1 us each: 8 MiB in 11 us */
	char *text = report(w, &p->res);
	assert_has(text, "8+0 records in\n8+0 records out\n");
	assert_has(text, "8388608 bytes (8.4 MB, 8.0 MiB) copied, 1.1e-05 s, "
			 "763 GB/s");
	assert_has(text, "conv=fsync");
	free(text);
	pulled_free(p);
	sfs_workload_free(w);
}

static void test_workloads_dd_sync_direct_read_partial(void **state)
{
	(void)state;
	struct sfs_workload *w = sfs_test_workload(
	    "dd,size=2560,bs=1024,direct,sync,read,fdatasync");
	struct pulled *p = pull(w);
	static const enum sfs_wop_type want[] = {
	    SFS_WOP_OPEN,  SFS_WOP_WRITE, SFS_WOP_WRITE, SFS_WOP_WRITE,
	    SFS_WOP_FSYNC, SFS_WOP_CLOSE, SFS_WOP_SYNC,	 SFS_WOP_OPEN,
	    SFS_WOP_READ,  SFS_WOP_READ,  SFS_WOP_READ,	 SFS_WOP_CLOSE};

	assert_int_equal(p->ops[0]->len, G_N_ELEMENTS(want));
	for (unsigned i = 0; i < G_N_ELEMENTS(want); i++)
		assert_int_equal(op_at(p, 0, i)->type, want[i]);
	assert_true(op_at(p, 0, 0)->flags & O_DIRECT);
	assert_int_equal(op_at(p, 0, 3)->len, 512); /* the short record */
	assert_int_equal(op_at(p, 0, 4)->flags, SFS_WOP_DATASYNC);
	assert_string_equal(op_at(p, 0, 7)->phase, "read");
	assert_int_equal(op_at(p, 0, 7)->flags & O_ACCMODE, O_RDONLY);
	assert_true(op_at(p, 0, 7)->flags & O_DIRECT);
	assert_int_equal(op_at(p, 0, 10)->off, 2048);
	assert_int_equal(op_at(p, 0, 10)->len, 512);
	/* the sync is timed with the write phase */
	assert_int_equal(count(p, 0, SFS_WOP_SYNC, "write"), 1);
	const struct sfs_wl_phase *ph = sfs_wl_result_phase(&p->res, "write");
	assert_non_null(ph);
	assert_int_equal(ph->bytes_written, 2560);

	char *text = report(w, &p->res);
	assert_has(text, "2+1 records in\n2+1 records out\n2560 bytes (2.6 kB, "
			 "2.5 KiB) copied");
	assert_has(text, "$ dd if=ddfile of=/dev/null bs=1K iflag=direct\n"
			 "2+1 records in");
	free(text);
	pulled_free(p);
	sfs_workload_free(w);
}

static void test_workloads_dd_refuses(void **state)
{
	(void)state;
	assert_refused("dd,fsync,fdatasync", "pick one");
	assert_refused("dd,direct,bs=1000", "sectors");
	assert_refused("dd,file=/abs", "relative path");
	assert_refused("dd,file=a/../b", "relative path");
	assert_refused("dd,bs=2G", "bs must be");
}

/* ---- iozone ---- */

static const char *const iz_order[] = {
    "write", "rewrite", "read", "reread", "randread", "randwrite", "cleanup"};

static void test_workloads_iozone_throughput_phases(void **state)
{
	(void)state;
	struct sfs_workload *w = sfs_test_workload(
	    "iozone,threads=8,size=16M,record=256K,direct,fsync,"
	    "tests=write:rewrite:read:reread:randread:randwrite");
	struct pulled *p = pull(w);
	const unsigned nrec = 64;

	assert_int_equal(p->clients, 8);
	for (unsigned c = 0; c < 8; c++) {
		char file[32];
		unsigned b = 0;

		snprintf(file, sizeof(file), "iozone.DUMMY.%u", c);
		/* each phase begins with a barrier carrying its name */
		for (unsigned i = 0; i < p->ops[c]->len; i++) {
			struct top *o = op_at(p, c, i);
			if (o->type == SFS_WOP_BARRIER) {
				assert_true(b < G_N_ELEMENTS(iz_order));
				assert_non_null(o->phase);
				assert_string_equal(o->phase, iz_order[b]);
				b++;
			} else {
				assert_null(o->phase);
				assert_string_equal(o->path, file);
			}
		}
		assert_int_equal(b, G_N_ELEMENTS(iz_order));
		assert_int_equal(op_at(p, c, 0)->type, SFS_WOP_BARRIER);
		assert_int_equal(count(p, c, SFS_WOP_WRITE, "write"), nrec);
		assert_int_equal(count(p, c, SFS_WOP_WRITE, "rewrite"), nrec);
		assert_int_equal(count(p, c, SFS_WOP_READ, "read"), nrec);
		assert_int_equal(count(p, c, SFS_WOP_READ, "reread"), nrec);
		assert_int_equal(count(p, c, SFS_WOP_READ, "randread"), nrec);
		assert_int_equal(count(p, c, SFS_WOP_WRITE, "randwrite"), nrec);
		/* -e: fsync ends the write tests only */
		assert_int_equal(count(p, c, SFS_WOP_FSYNC, "write"), 1);
		assert_int_equal(count(p, c, SFS_WOP_FSYNC, "randwrite"), 1);
		assert_int_equal(count(p, c, SFS_WOP_FSYNC, "read"), 0);
		assert_int_equal(count(p, c, SFS_WOP_OPEN, NULL), 6);
		assert_int_equal(count(p, c, SFS_WOP_UNLINK, "cleanup"), 1);
		/* the first open creates, all are O_DIRECT */
		assert_true(op_at(p, c, 1)->flags & O_CREAT);
		for (unsigned i = 0; i < p->ops[c]->len; i++)
			if (op_at(p, c, i)->type == SFS_WOP_OPEN)
				assert_true(op_at(p, c, i)->flags & O_DIRECT);
	}
	/* randread and randwrite touch every record exactly once, not in
	 * order, and differ between clients */
	uint64_t first_off[2][8];
	for (unsigned c = 0; c < 8; c++) {
		for (unsigned k = 0; k < 2; k++) {
			const char *want = k ? "randwrite" : "randread";
			enum sfs_wop_type t = k ? SFS_WOP_WRITE : SFS_WOP_READ;
			unsigned seen[64] = {0}, inorder = 0, j = 0;
			const char *cur = NULL;
			for (unsigned i = 0; i < p->ops[c]->len; i++) {
				struct top *o = op_at(p, c, i);
				if (o->phase)
					cur = o->phase;
				if (o->type != t || strcmp(cur, want))
					continue;
				assert_int_equal(o->off % (256 * KiB), 0);
				assert_int_equal(o->len, 256 * KiB);
				assert_true(o->off / (256 * KiB) < nrec);
				seen[o->off / (256 * KiB)]++;
				inorder += o->off == j * 256 * KiB;
				if (j == 0)
					first_off[k][c] = o->off;
				j++;
			}
			for (unsigned r = 0; r < nrec; r++)
				assert_int_equal(seen[r], 1);
			assert_true(inorder < nrec / 2);
		}
	}
	bool differ = false;
	for (unsigned c = 1; c < 8; c++)
		differ |= first_off[0][c] != first_off[0][0];
	assert_true(differ);

	char *text = report(w, &p->res);
	assert_has(text, "Command line used: iozone -t 8 -s 16m -r 256k -I -e");
	assert_has(text, "-i 0 -i 1 -i 2");
	assert_has(text, "Children see throughput for  8 initial writers");
	assert_has(text, "Children see throughput for  8 random writers");
	assert_has(text, "Parent sees throughput for  8 re-readers");
	assert_has(text, "Min xfer \t\t\t\t\t=   16384.00 kB");
	free(text);
	pulled_free(p);
	sfs_workload_free(w);
}

/* Offsets of client 0's randread, as one string. */
static char *iz_randread_offsets(const char *spec)
{
	struct sfs_workload *w = sfs_test_workload(spec);
	struct pulled *p = pull(w);
	GString *s = g_string_new(NULL);
	const char *cur = "";

	for (unsigned i = 0; i < p->ops[0]->len; i++) {
		struct top *o = op_at(p, 0, i);
		if (o->phase)
			cur = o->phase;
		if (!strcmp(cur, "randread") && o->type == SFS_WOP_READ)
			g_string_append_printf(s, "%" G_GUINT64_FORMAT ",",
					       o->off);
	}
	pulled_free(p);
	sfs_workload_free(w);
	return g_string_free(s, FALSE);
}

static void test_workloads_iozone_seeded_and_other_tests(void **state)
{
	(void)state;
	char *a = iz_randread_offsets(
	    "iozone,size=1M,record=4K,tests=write:randread,seed=3");
	char *b = iz_randread_offsets(
	    "iozone,size=1M,record=4K,tests=write:randread,seed=3");
	char *c = iz_randread_offsets(
	    "iozone,size=1M,record=4K,tests=write:randread,seed=4");
	assert_string_equal(a, b);
	assert_string_not_equal(a, c);
	g_free(a);
	g_free(b);
	g_free(c);

	/* backward and stride reads: each record once; keep: no unlink;
	 * without fsync no fsync; one client by default */
	struct sfs_workload *w = sfs_test_workload(
	    "iozone,size=100K,record=4K,tests=write:bkwdread:strideread,"
	    "keep");
	struct pulled *p = pull(w);
	assert_int_equal(p->clients, 1);
	assert_int_equal(count(p, 0, SFS_WOP_UNLINK, NULL), 0);
	assert_int_equal(count(p, 0, SFS_WOP_FSYNC, NULL), 0);
	unsigned seen[2][25] = {{0}};
	const char *cur = "";
	unsigned first_bk = 1000, idx = 0;
	for (unsigned i = 0; i < p->ops[0]->len; i++) {
		struct top *o = op_at(p, 0, i);
		if (o->phase)
			cur = o->phase;
		if (o->type != SFS_WOP_READ)
			continue;
		unsigned k = strcmp(cur, "bkwdread") ? 1 : 0;
		seen[k][o->off / (4 * KiB)]++;
		if (k == 0 && idx++ == 0)
			first_bk = (unsigned)(o->off / (4 * KiB));
	}
	assert_int_equal(first_bk, 24);
	for (unsigned r = 0; r < 25; r++) {
		assert_int_equal(seen[0][r], 1);
		assert_int_equal(seen[1][r], 1);
	}
	char *text = report(w, &p->res);
	assert_has(text, "-i 0 -i 3 -i 5");
	assert_has(text, "reverse readers");
	assert_has(text, "stride readers");
	free(text);
	pulled_free(p);
	sfs_workload_free(w);
}

static void test_workloads_iozone_refuses(void **state)
{
	(void)state;
	assert_refused("iozone,size=4K,record=8K", "record must be");
	assert_refused("iozone,size=10K,record=4K", "whole number of records");
	assert_refused("iozone,tests=read:write", "must begin with write");
	assert_refused("iozone,tests=write:bogus", "unknown test 'bogus'");
	assert_refused("iozone,tests=write:read:read", "twice");
	assert_refused("iozone,direct,record=1000,size=1000000", "sectors");
}

/* ---- tiobench ---- */

static void test_workloads_tiobench_phases_and_counts(void **state)
{
	(void)state;
	struct sfs_workload *w = sfs_test_workload(
	    "tiobench,threads=4,size=1M,block=4K,random=100,direct");
	struct pulled *p = pull(w);
	static const char *const order[] = {"write", "randwrite", "read",
					    "randread", "cleanup"};

	assert_int_equal(p->clients, 4);
	for (unsigned c = 0; c < 4; c++) {
		unsigned b = 0;
		for (unsigned i = 0; i < p->ops[c]->len; i++) {
			struct top *o = op_at(p, c, i);
			if (o->type == SFS_WOP_BARRIER) {
				assert_string_equal(o->phase, order[b]);
				b++;
			}
			if (o->type == SFS_WOP_READ ||
			    o->type == SFS_WOP_WRITE) {
				assert_int_equal(o->len, 4 * KiB);
				assert_int_equal(o->off % (4 * KiB), 0);
				assert_true(o->off < MiB);
			}
			if (o->type == SFS_WOP_OPEN)
				assert_true(o->flags & O_DIRECT);
		}
		assert_int_equal(b, 5);
		assert_int_equal(count(p, c, SFS_WOP_FTRUNCATE, "write"), 1);
		assert_int_equal(count(p, c, SFS_WOP_WRITE, "write"), 256);
		assert_int_equal(count(p, c, SFS_WOP_WRITE, "randwrite"), 100);
		assert_int_equal(count(p, c, SFS_WOP_READ, "read"), 256);
		assert_int_equal(count(p, c, SFS_WOP_READ, "randread"), 100);
		assert_int_equal(count(p, c, SFS_WOP_FSYNC, "write"), 1);
		assert_int_equal(count(p, c, SFS_WOP_FSYNC, "randwrite"), 1);
		assert_int_equal(count(p, c, SFS_WOP_FSYNC, "read"), 0);
		assert_int_equal(count(p, c, SFS_WOP_UNLINK, "cleanup"), 1);
	}
	const struct sfs_wl_phase *ph =
	    sfs_wl_result_phase(&p->res, "randread");
	assert_non_null(ph);
	assert_int_equal(ph->bytes_read, 4 * 100 * 4 * KiB);

	char *text = report(w, &p->res);
	assert_has(text, "Sequential Reads\n");
	assert_has(text, "Random Writes\n");
	assert_has(text,
		   "Identifier                    Size  Size  Thr   Rate");
	/* 4 MiB total, 4096-byte blocks, 4 threads */
	assert_has(text, "simfs                             4  4096   4 ");
	free(text);
	pulled_free(p);
	sfs_workload_free(w);
}

static void test_workloads_tiobench_no_random_and_refuses(void **state)
{
	(void)state;
	struct sfs_workload *w =
	    sfs_test_workload("tiobench,threads=2,size=64K,random=0");
	struct pulled *p = pull(w);

	for (unsigned c = 0; c < 2; c++) {
		assert_int_equal(count(p, c, SFS_WOP_BARRIER, NULL), 3);
		assert_int_equal(count(p, c, SFS_WOP_WRITE, NULL), 16);
		assert_int_equal(count(p, c, SFS_WOP_READ, NULL), 16);
	}
	assert_null(sfs_wl_result_phase(&p->res, "randwrite"));
	char *text = report(w, &p->res);
	assert_has(text, "Random Reads\n");
	assert_has(text, "(not run)");
	free(text);
	pulled_free(p);
	sfs_workload_free(w);

	assert_refused("tiobench,size=10K,block=4K", "whole number of blocks");
	assert_refused("tiobench,size=4K,block=8K", "block must be");
	assert_refused("tiobench,block=1000,size=1000000,direct", "sectors");
}

/* ---- untar: real archives ---- */

struct tree {
	char *dir; /* temp dir */
	char *tar; /* dir/x.tar */
	char *big; /* contents of src/a/b/big.bin */
	size_t big_len;
	char *longname; /* a member name past 100 bytes */
};

static int run(const char *cmd)
{
	int rc = system(cmd);

	if (rc)
		print_error("'%s' failed: %d\n", cmd, rc);
	return rc;
}

/* src/{a/b/big.bin,a/small.txt,a/empty,a/ln->small.txt,a/hard=big,
 * d/e/, <long>/f} tarred with format fmt. */
static void tree_make(struct tree *t, const char *fmt)
{
	GError *ge = NULL;
	char *p;

	t->dir = g_dir_make_tmp("sfs-wl-XXXXXX", &ge);
	assert_non_null(t->dir);
	p = g_build_filename(t->dir, "src/a/b", NULL);
	assert_int_equal(g_mkdir_with_parents(p, 0755), 0);
	g_free(p);
	p = g_build_filename(t->dir, "src/d/e", NULL);
	assert_int_equal(g_mkdir_with_parents(p, 0755), 0);
	g_free(p);
	t->big_len = 25000;
	t->big = g_malloc(t->big_len);
	for (size_t i = 0; i < t->big_len; i++)
		t->big[i] = (char)(i * 7 + i / 251);
	p = g_build_filename(t->dir, "src/a/b/big.bin", NULL);
	assert_true(g_file_set_contents(p, t->big, (gssize)t->big_len, NULL));
	g_free(p);
	p = g_build_filename(t->dir, "src/a/small.txt", NULL);
	assert_true(g_file_set_contents(p, "hello, tar\n", -1, NULL));
	assert_int_equal(chmod(p, 0600), 0);
	g_free(p);
	p = g_build_filename(t->dir, "src/a/empty", NULL);
	assert_true(g_file_set_contents(p, "", 0, NULL));
	g_free(p);
	t->longname = g_strnfill(120, 'n');
	p = g_build_filename(t->dir, "src", t->longname, NULL);
	assert_int_equal(g_mkdir(p, 0755), 0);
	g_free(p);
	p = g_build_filename(t->dir, "src", t->longname, "f", NULL);
	assert_true(g_file_set_contents(p, "long", -1, NULL));
	g_free(p);
	char *cmd = g_strdup_printf(
	    "cd '%s' && ln -s small.txt src/a/ln && ln src/a/b/big.bin "
	    "src/a/hard && tar --format=%s --sort=name -cf x.tar src",
	    t->dir, fmt);
	assert_int_equal(run(cmd), 0);
	g_free(cmd);
	t->tar = g_build_filename(t->dir, "x.tar", NULL);
}

static void tree_free(struct tree *t)
{
	char *cmd = g_strdup_printf("rm -rf '%s'", t->dir);

	assert_int_equal(run(cmd), 0);
	g_free(cmd);
	g_free(t->dir);
	g_free(t->tar);
	g_free(t->big);
	g_free(t->longname);
}

/* Bytes written to path, assembled from its writes. */
static GByteArray *written(struct pulled *p, const char *path)
{
	GByteArray *b = g_byte_array_new();
	bool open = false;

	for (unsigned i = 0; i < p->ops[0]->len; i++) {
		struct top *o = op_at(p, 0, i);
		if (o->type == SFS_WOP_OPEN)
			open = !strcmp(o->path, path);
		if (o->type == SFS_WOP_CLOSE)
			open = false;
		if (o->type != SFS_WOP_WRITE || !open)
			continue;
		assert_non_null(o->data);
		if (b->len < o->off + o->len)
			g_byte_array_set_size(b, (guint)(o->off + o->len));
		memcpy(b->data + o->off, g_bytes_get_data(o->data, NULL),
		       o->len);
	}
	return b;
}

/* Every op's parent directory was made before it. */
static void assert_parents_first(struct pulled *p)
{
	GHashTable *dirs =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

	for (unsigned i = 0; i < p->ops[0]->len; i++) {
		struct top *o = op_at(p, 0, i);
		const char *name =
		    o->type == SFS_WOP_SYMLINK || o->type == SFS_WOP_LINK
			? o->path2
			: o->path;
		if (!name)
			continue;
		const char *slash = strrchr(name, '/');
		if (slash) {
			char *par = g_strndup(name, (size_t)(slash - name));
			if (!g_hash_table_contains(dirs, par))
				print_error("%s before %s\n", name, par);
			assert_true(g_hash_table_contains(dirs, par));
			g_free(par);
		}
		if (o->type == SFS_WOP_MKDIR)
			g_hash_table_add(dirs, g_strdup(o->path));
	}
	g_hash_table_destroy(dirs);
}

static void untar_real_checks(const char *fmt)
{
	struct tree t;
	tree_make(&t, fmt);
	char *spec = g_strdup_printf("untar,file=%s,sync", t.tar);
	struct sfs_workload *w = sfs_test_workload(spec);
	struct pulled *p = pull(w);

	assert_int_equal(p->clients, 1);
	/* dirs: src a a/b d d/e <long> ; files: big small empty hard? no:
	 * hard is a link; f */
	assert_int_equal(count(p, 0, SFS_WOP_MKDIR, NULL), 6);
	assert_int_equal(count(p, 0, SFS_WOP_OPEN, NULL), 4);
	assert_int_equal(count(p, 0, SFS_WOP_CLOSE, NULL), 4);
	assert_int_equal(count(p, 0, SFS_WOP_SYMLINK, NULL), 1);
	assert_int_equal(count(p, 0, SFS_WOP_LINK, NULL), 1);
	assert_int_equal(count(p, 0, SFS_WOP_SYNC, "sync"), 1);
	assert_parents_first(p);
	assert_string_equal(op_at(p, 0, 0)->phase, "untar");
	assert_string_equal(op_at(p, 0, 0)->path, "src");

	for (unsigned i = 0; i < p->ops[0]->len; i++) {
		struct top *o = op_at(p, 0, i);
		assert_int_equal(o->expect, 0);
		if (o->type == SFS_WOP_WRITE)
			assert_true(o->len <= 10240);
		if (o->type == SFS_WOP_SYMLINK) {
			assert_string_equal(o->path, "small.txt");
			assert_string_equal(o->path2, "src/a/ln");
		}
		if (o->type == SFS_WOP_LINK) {
			/* sorted: a/b/big.bin comes before a/hard */
			assert_string_equal(o->path, "src/a/b/big.bin");
			assert_string_equal(o->path2, "src/a/hard");
		}
		if (o->type == SFS_WOP_OPEN && strstr(o->path, "small.txt"))
			assert_int_equal(o->mode, 0600);
	}
	GByteArray *b = written(p, "src/a/b/big.bin");
	assert_int_equal(b->len, t.big_len);
	assert_memory_equal(b->data, t.big, t.big_len);
	g_byte_array_unref(b);
	b = written(p, "src/a/small.txt");
	assert_int_equal(b->len, 11);
	assert_memory_equal(b->data, "hello, tar\n", 11);
	g_byte_array_unref(b);
	char *lf = g_strdup_printf("src/%s/f", t.longname);
	b = written(p, lf);
	assert_int_equal(b->len, 4);
	assert_memory_equal(b->data, "long", 4);
	g_byte_array_unref(b);
	g_free(lf);
	/* big.bin in record-sized pieces: 25000 bytes, > 2 writes */
	const struct sfs_wl_phase *ph = sfs_wl_result_phase(&p->res, "untar");
	assert_non_null(ph);
	assert_int_equal(ph->bytes_written, 25000 + 11 + 4);

	char *text = report(w, &p->res);
	assert_has(text, "$ time tar xf ");
	assert_has(text, "real\t0m0.000s");
	assert_has(text, "4 files, 6 directories, 1 symlinks, 1 hard links, "
			 "25015 bytes");
	assert_has(text, "$ time sync\n");
	free(text);
	pulled_free(p);
	sfs_workload_free(w);
	g_free(spec);
	tree_free(&t);
}

static void test_workloads_untar_real_gnu(void **state)
{
	(void)state;
	untar_real_checks("gnu");
}

static void test_workloads_untar_real_pax(void **state)
{
	(void)state;
	untar_real_checks("pax");
}

static void test_workloads_untar_malformed(void **state)
{
	(void)state;
	struct tree t;
	tree_make(&t, "gnu");
	gchar *buf;
	gsize len;
	assert_true(g_file_get_contents(t.tar, &buf, &len, NULL));
	char *bad = g_build_filename(t.dir, "bad.tar", NULL);
	char *spec = g_strdup_printf("untar,file=%s", bad);

	/* a header cut short: src/ at 0, the next header at 512 */
	assert_true(g_file_set_contents(bad, buf, 700, NULL));
	char *err = refused(spec);
	assert_non_null(strstr(err, "truncated tar header at byte offset 512"));
	g_free(err);

	/* data cut short: find big.bin's header, keep 1000 bytes of data */
	gsize at = 0;
	while (at + 512 <= len && !strstr(buf + at, "big.bin"))
		at += 512;
	assert_true(at + 512 <= len);
	assert_true(
	    g_file_set_contents(bad, buf, (gssize)(at + 512 + 1000), NULL));
	err = refused(spec);
	char *want = g_strdup_printf("member at byte offset %zu has 25000 "
				     "bytes of data but only 1000 follow",
				     (size_t)at);
	if (!strstr(err, want))
		print_error("%s\n", err);
	assert_non_null(strstr(err, want));
	g_free(want);
	g_free(err);

	/* a damaged header */
	buf[at + 3] ^= 0x55;
	assert_true(g_file_set_contents(bad, buf, (gssize)len, NULL));
	err = refused(spec);
	want = g_strdup_printf("bad tar header checksum at byte offset %zu",
			       (size_t)at);
	assert_non_null(strstr(err, want));
	g_free(want);
	g_free(err);

	/* compressed, missing, and mixed parameters */
	assert_true(g_file_set_contents(bad, "\x1f\x8b\x08\x00rest", 8, NULL));
	assert_refused(spec, "decompress it first");
	g_free(spec);
	spec = g_strdup_printf("untar,file=%s/none.tar", t.dir);
	assert_refused(spec, "cannot read");
	g_free(spec);
	spec = g_strdup_printf("untar,file=%s,files=10", t.tar);
	assert_refused(spec, "synthetic tree only");
	g_free(spec);
	assert_refused("untar,umask=9", "octal");
	assert_refused("untar,record=1000", "multiple of 512");
	assert_refused("untar,dirs=0", "dirs must be");
	assert_refused("untar,depth=1,dirs=3", "depth=1");

	/* an empty archive (two zero blocks) extracts nothing */
	char zero[1024] = {0};
	assert_true(g_file_set_contents(bad, zero, sizeof(zero), NULL));
	spec = g_strdup_printf("untar,file=%s", bad);
	struct sfs_workload *w = sfs_test_workload(spec);
	struct pulled *p = pull(w);
	assert_int_equal(p->ops[0]->len, 0);
	pulled_free(p);
	sfs_workload_free(w);

	g_free(spec);
	g_free(bad);
	g_free(buf);
	tree_free(&t);
}

static void test_workloads_untar_repeated_member_replaced(void **state)
{
	(void)state;
	struct tree t;
	tree_make(&t, "gnu");
	char *cmd = g_strdup_printf("cd '%s' && printf again > src/a/small.txt"
				    " && tar -rf x.tar src/a/small.txt",
				    t.dir);
	assert_int_equal(run(cmd), 0);
	g_free(cmd);
	char *spec = g_strdup_printf("untar,file=%s", t.tar);
	struct sfs_workload *w = sfs_test_workload(spec);
	struct pulled *p = pull(w);
	int opened = -1, unlinked = -1, reopened = -1;

	for (unsigned i = 0; i < p->ops[0]->len; i++) {
		struct top *o = op_at(p, 0, i);
		if (!o->path || strcmp(o->path, "src/a/small.txt"))
			continue;
		if (o->type == SFS_WOP_OPEN && opened < 0)
			opened = (int)i;
		else if (o->type == SFS_WOP_UNLINK)
			unlinked = (int)i;
		else if (o->type == SFS_WOP_OPEN)
			reopened = (int)i;
	}
	assert_true(opened >= 0 && opened < unlinked && unlinked < reopened);
	assert_int_equal(count(p, 0, SFS_WOP_UNLINK, NULL), 1);
	/* the last copy wins */
	struct top *o = op_at(p, 0, (unsigned)reopened + 1);
	assert_int_equal(o->type, SFS_WOP_WRITE);
	assert_int_equal(o->len, 5);
	assert_memory_equal(g_bytes_get_data(o->data, NULL), "again", 5);
	pulled_free(p);
	sfs_workload_free(w);
	g_free(spec);
	tree_free(&t);
}

/* Seeded damage anywhere in an archive: a clean error or a clean run. */
static void test_workloads_untar_damaged_never_crashes(void **state)
{
	(void)state;
	struct tree t;
	tree_make(&t, "pax");
	gchar *buf;
	gsize len;
	assert_true(g_file_get_contents(t.tar, &buf, &len, NULL));
	char *bad = g_build_filename(t.dir, "bad.tar", NULL);
	char *spec = g_strdup_printf("untar,file=%s", bad);
	struct sfs_wl_rng r;
	unsigned ok = 0, refused_n = 0;

	sfs_wl_rng_seed(&r, 42);
	for (unsigned round = 0; round < 150; round++) {
		char *copy = g_memdup2(buf, len);
		gsize cut = round % 3 ? len : sfs_wl_rng_below(&r, len);
		/* hit the headers mostly: their first 512 bytes' fields */
		for (unsigned k = 0; k < 1 + round % 4; k++) {
			gsize blk = sfs_wl_rng_below(&r, len / 512) * 512;
			copy[blk + sfs_wl_rng_below(&r, 512)] =
			    (char)sfs_wl_rng_next(&r);
		}
		assert_true(g_file_set_contents(bad, copy, (gssize)cut, NULL));
		struct sfs_workload *w = NULL;
		char *err = NULL;
		if (sfs_workload_new(spec, &w, &err) == 0) {
			pulled_free(pull(w));
			sfs_workload_free(w);
			ok++;
		} else {
			assert_non_null(err);
			assert_null(strchr(err, '\n'));
			refused_n++;
		}
		g_free(err);
		g_free(copy);
	}
	assert_true(ok > 0);
	assert_true(refused_n > 0);
	g_free(spec);
	g_free(bad);
	g_free(buf);
	tree_free(&t);
}

/* ---- untar: the synthetic tree ---- */

static char *untar_sig(const char *spec, struct pulled **keep)
{
	struct sfs_workload *w = sfs_test_workload(spec);
	struct pulled *p = pull(w);
	GChecksum *ck = g_checksum_new(G_CHECKSUM_SHA256);

	for (unsigned i = 0; i < p->ops[0]->len; i++) {
		struct top *o = op_at(p, 0, i);
		char line[512];
		int n = snprintf(
		    line, sizeof(line),
		    "%d %s %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %o\n",
		    o->type, o->path ? o->path : "", o->off, o->len, o->mode);
		g_checksum_update(ck, (const guchar *)line, n);
	}
	char *sig = g_strdup(g_checksum_get_string(ck));
	g_checksum_free(ck);
	sfs_workload_free(w);
	if (keep)
		*keep = p;
	else
		pulled_free(p);
	return sig;
}

static void test_workloads_untar_synthetic(void **state)
{
	(void)state;
	struct pulled *p;
	char *a = untar_sig("untar,files=500,dirs=40,depth=5,mean_size=8K,"
			    "seed=7,sync",
			    &p);
	char *b = untar_sig("untar,files=500,dirs=40,depth=5,mean_size=8K,"
			    "seed=7,sync",
			    NULL);
	char *c = untar_sig("untar,files=500,dirs=40,depth=5,mean_size=8K,"
			    "seed=8,sync",
			    NULL);
	assert_string_equal(a, b);
	assert_string_not_equal(a, c);

	assert_int_equal(count(p, 0, SFS_WOP_MKDIR, NULL), 40);
	assert_int_equal(count(p, 0, SFS_WOP_OPEN, NULL), 500);
	assert_int_equal(count(p, 0, SFS_WOP_CLOSE, NULL), 500);
	assert_int_equal(count(p, 0, SFS_WOP_SYNC, "sync"), 1);
	assert_parents_first(p);
	uint64_t pos = 0, total = 0;
	for (unsigned i = 0; i < p->ops[0]->len; i++) {
		struct top *o = op_at(p, 0, i);
		if (o->type == SFS_WOP_MKDIR) {
			unsigned depth = 1;
			for (const char *s = o->path; *s; s++)
				depth += *s == '/';
			assert_true(depth <= 5);
			assert_int_equal(o->mode, 0755);
		}
		if (o->type == SFS_WOP_OPEN)
			pos = 0;
		if (o->type == SFS_WOP_WRITE) {
			assert_null(o->data);
			assert_int_equal(o->off, pos);
			assert_true(o->len >= 1 && o->len <= 10240);
			pos += o->len;
			total += o->len;
		}
	}
	const struct sfs_wl_phase *ph = sfs_wl_result_phase(&p->res, "untar");
	assert_non_null(ph);
	assert_int_equal(ph->bytes_written, total);
	pulled_free(p);
	g_free(a);
	g_free(b);
	g_free(c);
}

static void test_workloads_untar_kernel_shape(void **state)
{
	(void)state;
	/* the default tree: linux-2.6.11's counts and size shape */
	struct sfs_workload *w = sfs_test_workload("untar");
	struct pulled *p = pull(w);
	GArray *sizes = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	uint64_t cur = 0, total = 0;
	bool open = false;

	for (unsigned i = 0; i < p->ops[0]->len; i++) {
		struct top *o = op_at(p, 0, i);
		if (o->type == SFS_WOP_OPEN) {
			open = true;
			cur = 0;
		} else if (o->type == SFS_WOP_WRITE) {
			cur += o->len;
		} else if (o->type == SFS_WOP_CLOSE && open) {
			g_array_append_val(sizes, cur);
			total += cur;
			open = false;
		}
	}
	assert_int_equal(sizes->len, 17078);
	assert_int_equal(count(p, 0, SFS_WOP_MKDIR, NULL), 1082);
	unsigned le4k = 0, le16k = 0, le64k = 0;
	for (unsigned i = 0; i < sizes->len; i++) {
		uint64_t s = g_array_index(sizes, uint64_t, i);
		le4k += s <= 4 * KiB;
		le16k += s <= 16 * KiB;
		le64k += s <= 64 * KiB;
	}
	/* 50 % <= 4 KiB, 83 % <= 16 KiB, ~97.4 % <= 64 KiB (+-4 points) */
	assert_true(le4k > 17078 * 46 / 100 && le4k < 17078 * 54 / 100);
	assert_true(le16k > 17078 * 79 / 100 && le16k < 17078 * 87 / 100);
	assert_true(le64k > 17078 * 94 / 100 && le64k < 17078 * 99 / 100);
	/* about 185 MiB in all (+-15 %) */
	assert_true(total > 157 * MiB && total < 213 * MiB);

	char *text = report(w, &p->res);
	assert_has(text, "17078 files, 1082 directories, 0 symlinks");
	free(text);
	g_array_free(sizes, TRUE);
	pulled_free(p);
	sfs_workload_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_workloads_bad_specs),
	    cmocka_unit_test(test_workloads_dd_writes_then_fsync),
	    cmocka_unit_test(test_workloads_dd_sync_direct_read_partial),
	    cmocka_unit_test(test_workloads_dd_refuses),
	    cmocka_unit_test(test_workloads_iozone_throughput_phases),
	    cmocka_unit_test(test_workloads_iozone_seeded_and_other_tests),
	    cmocka_unit_test(test_workloads_iozone_refuses),
	    cmocka_unit_test(test_workloads_tiobench_phases_and_counts),
	    cmocka_unit_test(test_workloads_tiobench_no_random_and_refuses),
	    cmocka_unit_test(test_workloads_untar_real_gnu),
	    cmocka_unit_test(test_workloads_untar_real_pax),
	    cmocka_unit_test(test_workloads_untar_malformed),
	    cmocka_unit_test(test_workloads_untar_repeated_member_replaced),
	    cmocka_unit_test(test_workloads_untar_damaged_never_crashes),
	    cmocka_unit_test(test_workloads_untar_synthetic),
	    cmocka_unit_test(test_workloads_untar_kernel_shape),
	};

	return cmocka_run_group_tests_name("workloads", tests, NULL, NULL);
}
