/*
 * test_timedev.c - the timing device over a small RAM device of its own.
 *
 * Data goes through untouched, with its category.  account leaves a
 * virtual clock alone and only accumulates modelled time; emulate moves a
 * virtual clock by exactly the modelled service times (and, on a real
 * clock, takes at least that long: a lower bound only).  Batches between
 * plug and unplug are charged in scheduler order, merged; a read drains
 * them first.  The same request sequence gives the same times, bit for bit.
 * Bad specs are refused and leave the lower device alone.
 *
 * sched=cfq: writers far apart, interleaved request by request, cost about
 * what one writer costs (one seek per slice, not per request), far less
 * than with the elevator at queue depth one; a writer whose records are
 * interleaved on disk with the others' costs more than a contiguous one
 * (the elevator ranks them the other way round); a lone writer, and the
 * filesystem's own stream 0, see exactly the elevator's times; a flush
 * empties every writer's drive cache; the same requests give the same
 * times.  With sync_writes=off (CFQ before Linux 2.6.29) writes are not
 * sliced: charged exactly as by the elevator, merged across processes.
 * Deferred waits (a mount's real queue) keep an operation's dependent
 * requests in sequence, as the event-driven mode does.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include <glib.h>

#include "timedev.h"

#define KiB 1024ULL
#define MiB (1024ULL * 1024)
#define MS 1000000ULL
#define RAM_BYTES (16 * MiB)

/* ---- a tiny RAM device that logs what reaches it ---- */

struct ram {
	uint8_t *data;
	GArray *log;  /* struct sfs_io_req */
	bool fail;    /* fail every request with -EIO */
	bool *closed; /* set at close, if not NULL */
};

static int ram_note(struct sfs_bdev *bd, enum sfs_io_op op, uint64_t off,
		    uint64_t len)
{
	struct ram *r = sfs_bdev_priv(bd);
	struct sfs_io_req q = {op, sfs_bdev_req_cat(bd), off, len, 0};

	if (r->fail)
		return -EIO;
	g_array_append_val(r->log, q);
	return 0;
}

static int ram_read(struct sfs_bdev *bd, uint64_t off, void *buf, size_t len)
{
	struct ram *r = sfs_bdev_priv(bd);
	int rc = ram_note(bd, SFS_IO_READ, off, len);

	if (!rc)
		memcpy(buf, r->data + off, len);
	return rc;
}

static int ram_write(struct sfs_bdev *bd, uint64_t off, const void *buf,
		     size_t len)
{
	struct ram *r = sfs_bdev_priv(bd);
	int rc = ram_note(bd, SFS_IO_WRITE, off, len);

	if (!rc)
		memcpy(r->data + off, buf, len);
	return rc;
}

static int ram_zero(struct sfs_bdev *bd, uint64_t off, uint64_t len)
{
	struct ram *r = sfs_bdev_priv(bd);
	int rc = ram_note(bd, SFS_IO_WRITE, off, len);

	if (!rc)
		memset(r->data + off, 0, len);
	return rc;
}

static int ram_flush(struct sfs_bdev *bd)
{
	return ram_note(bd, SFS_IO_FLUSH, 0, 0);
}

static void ram_close(struct sfs_bdev *bd)
{
	struct ram *r = sfs_bdev_priv(bd);

	if (r->closed)
		*r->closed = true;
	g_free(r->data);
	g_array_free(r->log, TRUE);
	g_free(r);
}

static const struct sfs_bdev_ops ram_ops = {
    .name = "testram",
    .read = ram_read,
    .write = ram_write,
    .flush = ram_flush,
    .close = ram_close,
    .zero = ram_zero,
};

static struct sfs_bdev *ram_new(void)
{
	struct ram *r = g_new0(struct ram, 1);

	r->data = g_malloc0(RAM_BYTES);
	r->log = g_array_new(FALSE, FALSE, sizeof(struct sfs_io_req));
	return sfs_bdev_new(&ram_ops, r, RAM_BYTES);
}

/* A device that keeps nothing: room for writers 1 GiB apart. */
static int null_rw(struct sfs_bdev *bd, uint64_t off, void *buf, size_t len)
{
	return 0;
}

static int null_write(struct sfs_bdev *bd, uint64_t off, const void *buf,
		      size_t len)
{
	return 0;
}

static const struct sfs_bdev_ops null_ops = {
    .name = "testnull",
    .read = null_rw,
    .write = null_write,
};

static struct sfs_bdev *null_new(uint64_t size_bytes)
{
	return sfs_bdev_new(&null_ops, NULL, size_bytes);
}

/* ---- helpers ---- */

/* Log callback: keep every record. */
static void keep_rec(void *arg, const struct sfs_timedev_rec *rec)
{
	g_array_append_val((GArray *)arg, *rec);
}

static struct sfs_bdev *td_new(struct sfs_bdev *lower, struct sfs_clock *c,
			       const char *model, const char *sched,
			       enum sfs_timedev_mode mode, GArray *log)
{
	struct sfs_timedev_opts o = {
	    .model = model, .sched = sched, .mode = mode};
	struct sfs_bdev *bd = NULL;
	char *err = NULL;
	int rc = sfs_timedev_new(lower, c, &o, &bd, &err);

	if (rc)
		print_error("timedev %s: %s\n", model, err ? err : "?");
	assert_int_equal(rc, 0);
	if (log)
		assert_int_equal(sfs_timedev_set_log(bd, keep_rec, log), 0);
	return bd;
}

static GArray *rec_log(void)
{
	return g_array_new(FALSE, FALSE, sizeof(struct sfs_timedev_rec));
}

static struct sfs_timedev_rec *rec_at(GArray *log, guint i)
{
	return &g_array_index(log, struct sfs_timedev_rec, i);
}

static void rd(struct sfs_bdev *bd, uint64_t off, uint64_t len)
{
	static uint8_t buf[1 * MiB];

	assert_true(len <= sizeof(buf));
	assert_int_equal(sfs_bdev_read(bd, SFS_IO_DATA, off, buf, len), 0);
}

static void wr(struct sfs_bdev *bd, enum sfs_io_cat cat, uint64_t off,
	       uint64_t len)
{
	static uint8_t buf[1 * MiB];

	assert_true(len <= sizeof(buf));
	memset(buf, (int)(off / 4096), len);
	assert_int_equal(sfs_bdev_write(bd, cat, off, buf, len), 0);
}

/* ---- tests ---- */

static void test_timedev_forwards_data_and_category(void **state)
{
	struct sfs_clock *c = sfs_clock_new_virtual();
	struct sfs_bdev *ram = ram_new();
	struct ram *r = sfs_bdev_priv(ram);
	struct sfs_bdev *bd =
	    td_new(ram, c, "hdd-2009", NULL, SFS_TIMEDEV_EMULATE, NULL);
	uint8_t out[8192], in[8192];
	struct sfs_io_req *q;

	assert_int_equal(sfs_bdev_size_bytes(bd), RAM_BYTES);
	for (unsigned i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(i * 7 + 1);
	assert_int_equal(
	    sfs_bdev_write(bd, SFS_IO_INODE, 12288, out, sizeof(out)), 0);
	assert_int_equal(sfs_bdev_read(bd, SFS_IO_DIR, 12288, in, sizeof(in)),
			 0);
	assert_memory_equal(in, out, sizeof(in));
	assert_int_equal(sfs_bdev_zero(bd, SFS_IO_OTHER, 12288, 4096), 0);
	assert_int_equal(sfs_bdev_read(bd, SFS_IO_DATA, 12288, in, 4096), 0);
	for (unsigned i = 0; i < 4096; i++)
		assert_int_equal(in[i], 0);
	assert_int_equal(sfs_bdev_flush(bd), 0);
	/* the lower device saw each request once, with its category */
	assert_int_equal(r->log->len, 5);
	q = &g_array_index(r->log, struct sfs_io_req, 0);
	assert_int_equal(q[0].op, SFS_IO_WRITE);
	assert_int_equal(q[0].cat, SFS_IO_INODE);
	assert_int_equal(q[1].cat, SFS_IO_DIR);
	assert_int_equal(q[2].cat, SFS_IO_OTHER);
	assert_int_equal(q[3].cat, SFS_IO_DATA);
	assert_int_equal(q[4].op, SFS_IO_FLUSH);
	/* out of range is refused by the door, before anything happens */
	assert_int_equal(sfs_bdev_read(bd, SFS_IO_DATA, RAM_BYTES, in, 1),
			 -EINVAL);
	sfs_bdev_close(bd);
	sfs_clock_free(c);
}

static void test_timedev_account_leaves_virtual_clock(void **state)
{
	struct sfs_clock *c = sfs_clock_new_virtual();
	GArray *log = rec_log();
	struct sfs_bdev *bd =
	    td_new(ram_new(), c, "hdd-2009", NULL, SFS_TIMEDEV_ACCOUNT, log);
	struct sfs_timedev_counters k;
	sfs_ns_t sum = 0;

	for (int i = 0; i < 20; i++)
		rd(bd, (uint64_t)((i * 7919) % 4000) * 4096, 16 * KiB);
	assert_int_equal(sfs_clock_now_ns(c), 0); /* time stood still */
	assert_int_equal(sfs_timedev_counters(bd, &k), 0);
	assert_int_equal(log->len, 20);
	for (guint i = 0; i < log->len; i++) {
		struct sfs_timedev_rec *r = rec_at(log, i);

		/* requests queue back to back on the modelled device */
		assert_int_equal(r->start_ns, sum);
		assert_int_equal(r->submit_ns, 0);
		sum += r->cost.total_ns;
		assert_int_equal(r->done_ns, sum);
	}
	assert_true(sum > 20 * MS);
	assert_int_equal(k.busy_ns, sum);
	assert_int_equal(k.busy_until_ns, sum);
	sfs_bdev_close(bd);
	g_array_free(log, TRUE);
	sfs_clock_free(c);
}

static void test_timedev_emulate_moves_virtual_clock_by_service(void **state)
{
	struct sfs_clock *c = sfs_clock_new_virtual();
	GArray *log = rec_log();
	struct sfs_bdev *bd =
	    td_new(ram_new(), c, "hdd-2009", NULL, SFS_TIMEDEV_EMULATE, log);
	struct sfs_devmodel *ref;
	struct sfs_timedev_counters k;
	char *err = NULL;

	assert_int_equal(sfs_devmodel_new("hdd-2009", &ref, &err), 0);
	for (int i = 0; i < 30; i++) {
		sfs_ns_t before = sfs_clock_now_ns(c);
		uint64_t off = (uint64_t)((i * 104729) % 3000) * 4096;
		struct sfs_io_req q = {i % 3 ? SFS_IO_READ : SFS_IO_WRITE,
				       SFS_IO_DATA, off, 32 * KiB, 0};
		struct sfs_dev_cost want;

		if (q.op == SFS_IO_READ)
			rd(bd, off, 32 * KiB);
		else
			wr(bd, SFS_IO_DATA, off, 32 * KiB);
		/* the same request on a model of our own, at the same time */
		assert_int_equal(sfs_devmodel_cost(ref, &q, before, &want), 0);
		assert_int_equal(sfs_clock_now_ns(c) - before, want.total_ns);
		assert_int_equal(rec_at(log, i)->done_ns, sfs_clock_now_ns(c));
		if (i % 5 == 4) /* think time: the device idles */
			sfs_clock_advance(c, 10 * MS);
	}
	assert_int_equal(sfs_timedev_counters(bd, &k), 0);
	assert_int_equal(k.busy_ns + 6 * 10 * MS, sfs_clock_now_ns(c));
	assert_int_equal(k.queue_ns, 0);
	sfs_devmodel_free(ref);
	sfs_bdev_close(bd);
	g_array_free(log, TRUE);
	sfs_clock_free(c);
}

static void test_timedev_emulate_real_clock_takes_modelled_time(void **state)
{
	struct sfs_clock *c = sfs_clock_new_real();
	struct sfs_bdev *bd = td_new(ram_new(), c, "ssd,read_latency_us=5000",
				     NULL, SFS_TIMEDEV_EMULATE, NULL);
	struct sfs_timedev_counters k;
	sfs_ns_t t0 = sfs_clock_now_ns(c);

	for (int i = 0; i < 4; i++)
		rd(bd, (uint64_t)i * 4096, 4096);
	sfs_timedev_counters(bd, &k);
	assert_true(k.busy_ns >= 4 * 5 * MS);
	/* at least the modelled time (no upper bound: hosts vary) */
	assert_true(sfs_clock_now_ns(c) - t0 >= k.busy_ns);
	sfs_bdev_close(bd);
	sfs_clock_free(c);
}

static void test_timedev_plug_batches_writes_in_elevator_order(void **state)
{
	struct sfs_clock *c = sfs_clock_new_virtual();
	GArray *log = rec_log();
	struct sfs_bdev *bd =
	    td_new(ram_new(), c, "hdd-2009", NULL, SFS_TIMEDEV_EMULATE, log);
	struct sfs_timedev_counters k;

	assert_int_equal(sfs_timedev_plug(bd), 0);
	wr(bd, SFS_IO_DATA, 8 * MiB, 4096); /* far */
	for (int i = 7; i >= 0; i--)	    /* backwards, contiguous */
		wr(bd, SFS_IO_DATA, (uint64_t)i * 64 * KiB, 64 * KiB);
	assert_int_equal(sfs_timedev_plug(bd), 0); /* nests */
	assert_int_equal(sfs_timedev_unplug(bd), 0);
	/* queued, not charged: no time has passed */
	assert_int_equal(log->len, 0);
	assert_int_equal(sfs_clock_now_ns(c), 0);
	assert_int_equal(sfs_timedev_unplug(bd), 0);
	/* C-LOOK from offset 0: the merged run first, then the far write */
	assert_int_equal(log->len, 2);
	assert_int_equal(rec_at(log, 0)->off_bytes, 0);
	assert_int_equal(rec_at(log, 0)->len_bytes, 512 * KiB);
	assert_int_equal(rec_at(log, 0)->n_merged, 8);
	assert_int_equal(rec_at(log, 1)->off_bytes, 8 * MiB);
	sfs_timedev_counters(bd, &k);
	assert_int_equal(k.reqs[SFS_IO_WRITE], 9);
	assert_int_equal(k.dev_reqs[SFS_IO_WRITE], 2);
	assert_int_equal(k.merges, 7);
	/* emulate: unplug returned when the batch was done */
	assert_int_equal(sfs_clock_now_ns(c), k.busy_until_ns);
	assert_int_equal(sfs_timedev_unplug(bd), -EINVAL); /* not plugged */
	sfs_bdev_close(bd);
	g_array_free(log, TRUE);
	sfs_clock_free(c);
}

static void test_timedev_read_and_flush_drain_the_batch(void **state)
{
	struct sfs_clock *c = sfs_clock_new_virtual();
	GArray *log = rec_log();
	struct sfs_bdev *bd =
	    td_new(ram_new(), c, "hdd-2009", "noop", SFS_TIMEDEV_EMULATE, log);

	sfs_timedev_plug(bd);
	wr(bd, SFS_IO_DATA, 4 * MiB, 4096);
	wr(bd, SFS_IO_DATA, 1 * MiB, 4096);
	rd(bd, 2 * MiB, 4096);
	assert_int_equal(log->len, 3);
	/* noop keeps arrival order; the read comes after both writes */
	assert_int_equal(rec_at(log, 0)->off_bytes, 4 * MiB);
	assert_int_equal(rec_at(log, 1)->off_bytes, 1 * MiB);
	assert_int_equal(rec_at(log, 2)->op, SFS_IO_READ);
	assert_int_equal(sfs_clock_now_ns(c), rec_at(log, 2)->done_ns);
	wr(bd, SFS_IO_DATA, 3 * MiB, 4096);
	assert_int_equal(sfs_bdev_flush(bd), 0);
	assert_int_equal(log->len, 5);
	assert_int_equal(rec_at(log, 3)->off_bytes, 3 * MiB);
	assert_int_equal(rec_at(log, 4)->op, SFS_IO_FLUSH);
	sfs_timedev_unplug(bd);
	assert_int_equal(log->len, 5);
	sfs_bdev_close(bd);
	g_array_free(log, TRUE);
	sfs_clock_free(c);
}

/* One seeded run: requests, batches, think time.  Fills log. */
static sfs_ns_t run_workload(GArray *log, const char *sched)
{
	struct sfs_clock *c = sfs_clock_new_virtual();
	struct sfs_bdev *bd =
	    td_new(ram_new(), c, "hdd-2009", sched, SFS_TIMEDEV_EMULATE, log);
	GRand *rnd = g_rand_new_with_seed(4242);
	sfs_ns_t end;

	for (int i = 0; i < 300; i++) {
		uint64_t off = (uint64_t)g_rand_int_range(rnd, 0, 3900) * 4096;
		uint64_t len = (uint64_t)g_rand_int_range(rnd, 1, 17) * 4096;

		switch (g_rand_int_range(rnd, 0, 6)) {
		case 0:
			rd(bd, off, len);
			break;
		case 1:
			sfs_bdev_flush(bd);
			break;
		case 2:
			sfs_timedev_plug(bd);
			for (int j = 0; j < 8; j++)
				wr(bd, SFS_IO_JOURNAL, off + j * len, len);
			sfs_timedev_unplug(bd);
			break;
		case 3:
			sfs_clock_advance(c,
					  g_rand_int_range(rnd, 0, 30000000));
			break;
		default:
			wr(bd, SFS_IO_DATA, off, len);
			break;
		}
	}
	end = sfs_clock_now_ns(c);
	g_rand_free(rnd);
	sfs_bdev_close(bd);
	sfs_clock_free(c);
	return end;
}

static void test_timedev_same_sequence_same_times(void **state)
{
	GArray *a = rec_log(), *b = rec_log();
	sfs_ns_t ta = run_workload(a, NULL), tb = run_workload(b, NULL);

	assert_true(ta > 0);
	assert_int_equal(ta, tb);
	assert_int_equal(a->len, b->len);
	assert_memory_equal(a->data, b->data,
			    a->len * sizeof(struct sfs_timedev_rec));
	g_array_free(a, TRUE);
	g_array_free(b, TRUE);
}

static void test_timedev_counters_by_op_and_category(void **state)
{
	struct sfs_clock *c = sfs_clock_new_virtual();
	struct sfs_bdev *bd =
	    td_new(ram_new(), c, "hdd-2009", NULL, SFS_TIMEDEV_ACCOUNT, NULL);
	struct sfs_timedev_counters k;

	wr(bd, SFS_IO_INODE, 0, 4096);
	wr(bd, SFS_IO_INODE, 8192, 4096);
	wr(bd, SFS_IO_JOURNAL, 1 * MiB, 16 * KiB);
	rd(bd, 5 * MiB, 8192);
	rd(bd, 5 * MiB + 8192, 8192); /* read-ahead hit */
	sfs_bdev_flush(bd);
	sfs_timedev_counters(bd, &k);
	assert_int_equal(k.reqs[SFS_IO_WRITE], 3);
	assert_int_equal(k.bytes[SFS_IO_WRITE], 24 * KiB);
	assert_int_equal(k.cat_reqs[SFS_IO_WRITE][SFS_IO_INODE], 2);
	assert_int_equal(k.cat_bytes[SFS_IO_WRITE][SFS_IO_JOURNAL], 16 * KiB);
	assert_int_equal(k.reqs[SFS_IO_READ], 2);
	assert_int_equal(k.reqs[SFS_IO_FLUSH], 1);
	assert_int_equal(k.dev_reqs[SFS_IO_READ], 2);
	assert_true(k.cache_hits >= 4); /* three cached writes + the hit */
	assert_true(k.seeks >= 2);
	assert_true(k.seek_bytes >= 5 * MiB);
	assert_int_equal(k.busy_ns, k.overhead_ns + k.seek_ns + k.rotation_ns +
					k.transfer_ns);
	sfs_bdev_close(bd);
	sfs_clock_free(c);
}

static void test_timedev_bad_specs_leave_lower_alone(void **state)
{
	struct sfs_clock *c = sfs_clock_new_virtual();
	struct sfs_bdev *ram = ram_new();
	const char *bad[][3] = {
	    {"floppy", NULL, "hdd-2009"},
	    {"hdd,rpm=fast", NULL, "rpm"},
	    {"hdd-2009", "bfq", "elevator"},
	    {"hdd,capacity=1M,zones=1,heads=1", NULL, "capacity"}, /* < ram */
	};
	struct sfs_timedev_opts o = {.mode = SFS_TIMEDEV_ACCOUNT};
	enum sfs_timedev_mode mode;
	bool closed = false;

	((struct ram *)sfs_bdev_priv(ram))->closed = &closed;
	for (unsigned i = 0; i < G_N_ELEMENTS(bad); i++) {
		struct sfs_bdev *bd = NULL;
		char *err = NULL;

		o.model = bad[i][0];
		o.sched = bad[i][1];
		assert_int_equal(sfs_timedev_new(ram, c, &o, &bd, &err),
				 -EINVAL);
		assert_null(bd);
		assert_non_null(err);
		if (!strstr(err, bad[i][2]))
			fail_msg("'%s': '%s' lacks '%s'", bad[i][0], err,
				 bad[i][2]);
		g_free(err);
	}
	assert_false(closed);
	assert_int_equal(sfs_timedev_mode_parse("emulate", &mode), 0);
	assert_int_equal(mode, SFS_TIMEDEV_EMULATE);
	assert_int_equal(sfs_timedev_mode_parse("fast", &mode), -EINVAL);
	/* the verbs refuse a device that is not a timing device */
	assert_int_equal(sfs_timedev_plug(ram), -EINVAL);
	assert_null(sfs_timedev_model(ram));
	sfs_bdev_close(ram);
	assert_true(closed);
	sfs_clock_free(c);
}

static void test_timedev_failed_request_not_charged(void **state)
{
	struct sfs_clock *c = sfs_clock_new_virtual();
	struct sfs_bdev *ram = ram_new();
	struct sfs_bdev *bd =
	    td_new(ram, c, "hdd-2009", NULL, SFS_TIMEDEV_EMULATE, NULL);
	struct sfs_timedev_counters k;
	uint8_t buf[4096];

	((struct ram *)sfs_bdev_priv(ram))->fail = true;
	assert_int_equal(sfs_bdev_read(bd, SFS_IO_DATA, 0, buf, 4096), -EIO);
	assert_int_equal(sfs_bdev_flush(bd), -EIO);
	sfs_timedev_counters(bd, &k);
	assert_int_equal(k.reqs[SFS_IO_READ] + k.reqs[SFS_IO_FLUSH], 0);
	assert_int_equal(k.busy_ns, 0);
	assert_int_equal(sfs_clock_now_ns(c), 0);
	sfs_bdev_close(bd);
	sfs_clock_free(c);
}

static void test_timedev_close_charges_a_plugged_batch(void **state)
{
	struct sfs_clock *c = sfs_clock_new_virtual();
	GArray *log = rec_log();
	struct sfs_bdev *bd =
	    td_new(ram_new(), c, "ssd", NULL, SFS_TIMEDEV_ACCOUNT, log);
	const struct sfs_devmodel *m = sfs_timedev_model(bd);

	assert_non_null(m);
	assert_string_equal(sfs_devmodel_name(m), "ssd");
	sfs_timedev_plug(bd);
	wr(bd, SFS_IO_DATA, 0, 4096);
	assert_int_equal(log->len, 0);
	sfs_bdev_close(bd);
	assert_int_equal(log->len, 1);
	g_array_free(log, TRUE);
	sfs_clock_free(c);
}

/* ---- sched=cfq: per-process slices ---- */

#define NULL_BYTES (16ULL * 1024 * MiB)
#define REC (256 * KiB)

enum layout {
	LAYOUT_APART,	   /* writer i at i GiB, its records contiguous */
	LAYOUT_INTERLEAVED /* record k of writer i at (k * n + i) * REC */
};

/*
 * n writers, stream ids 1..n, each writing nrec 256 KiB records, taken
 * round robin (as the engine's lock hands them out), on a virtual clock
 * in emulate mode.  Returns the modelled time; fills log if not NULL.
 */
static sfs_ns_t run_writers(const char *sched, unsigned n, unsigned nrec,
			    enum layout lay, GArray *log,
			    struct sfs_timedev_counters *k)
{
	struct sfs_clock *c = sfs_clock_new_virtual();
	struct sfs_bdev *bd = td_new(null_new(NULL_BYTES), c, "hdd-2009", sched,
				     SFS_TIMEDEV_EMULATE, log);
	sfs_ns_t end;

	for (unsigned r = 0; r < nrec; r++)
		for (unsigned i = 0; i < n; i++) {
			uint64_t off = lay == LAYOUT_APART
					   ? i * 1024 * MiB + r * REC
					   : ((uint64_t)r * n + i) * REC;

			sfs_io_set_stream(i + 1);
			wr(bd, SFS_IO_DATA, off, REC);
		}
	sfs_io_set_stream(0);
	/* until every byte is on the media: no drive cache flatters it */
	assert_int_equal(sfs_bdev_flush(bd), 0);
	end = sfs_clock_now_ns(c);
	if (k)
		sfs_timedev_counters(bd, k);
	sfs_bdev_close(bd);
	sfs_clock_free(c);
	return end;
}

static double mbps(unsigned n, unsigned nrec, sfs_ns_t ns)
{
	return (double)n * nrec * REC / ((double)ns / 1e9) / 1e6;
}

static void test_timedev_cfq_far_writers_seek_once_per_slice(void **state)
{
	struct sfs_timedev_counters k;
	sfs_ns_t elv =
	    run_writers("elevator", 2, 200, LAYOUT_APART, NULL, NULL);
	sfs_ns_t noop = run_writers("noop", 2, 200, LAYOUT_APART, NULL, NULL);
	sfs_ns_t cfq = run_writers("cfq", 2, 200, LAYOUT_APART, NULL, &k);
	sfs_ns_t one =
	    run_writers("elevator", 1, 400, LAYOUT_APART, NULL, NULL);

	print_message("# 2 writers 1 GiB apart: elevator %.1f noop %.1f cfq "
		      "%.1f MB/s; 1 writer %.1f MB/s; %llu slice switches\n",
		      mbps(2, 200, elv), mbps(2, 200, noop), mbps(2, 200, cfq),
		      mbps(1, 400, one), (unsigned long long)k.slice_switches);
	/* at queue depth one the elevator has nothing to sort: a seek per
	 * request; cfq: a seek per slice of 100 ms */
	assert_true(cfq * 2 < elv);
	assert_true(cfq * 2 < noop);
	/* and so close to one writer alone (within 15 %) */
	assert_true(cfq < one + one * 15 / 100);
	/* 100 MiB at ~66 MB/s is ~1.6 s: some 16 slices, far fewer than the
	 * 400 requests */
	assert_true(k.slice_switches >= 8 && k.slice_switches <= 40);
}

static void test_timedev_cfq_interleaved_writer_costs_more(void **state)
{
	sfs_ns_t cfq_apart =
	    run_writers("cfq", 8, 48, LAYOUT_APART, NULL, NULL);
	sfs_ns_t cfq_mixed =
	    run_writers("cfq", 8, 48, LAYOUT_INTERLEAVED, NULL, NULL);
	sfs_ns_t elv_apart =
	    run_writers("elevator", 8, 48, LAYOUT_APART, NULL, NULL);
	sfs_ns_t elv_mixed =
	    run_writers("elevator", 8, 48, LAYOUT_INTERLEAVED, NULL, NULL);

	print_message("# 8 writers: cfq apart %.1f interleaved %.1f; elevator "
		      "apart %.1f interleaved %.1f MB/s\n",
		      mbps(8, 48, cfq_apart), mbps(8, 48, cfq_mixed),
		      mbps(8, 48, elv_apart), mbps(8, 48, elv_mixed));
	/* cfq: each writer's next record is 7 records on, a short seek and
	 * a rotation away; a contiguous file streams (seed A's mechanism) */
	assert_true(cfq_mixed > cfq_apart + cfq_apart / 2);
	/* the elevator at queue depth one ranks them the other way round:
	 * the interleaved layout is sequential as a whole */
	assert_true(elv_apart > elv_mixed + elv_mixed / 2);
}

static void test_timedev_cfq_same_requests_same_times(void **state)
{
	GArray *a = rec_log(), *b = rec_log();
	sfs_ns_t ta = run_writers("cfq", 4, 40, LAYOUT_INTERLEAVED, a, NULL);
	sfs_ns_t tb = run_writers("cfq", 4, 40, LAYOUT_INTERLEAVED, b, NULL);

	assert_true(ta > 0);
	assert_int_equal(ta, tb);
	assert_int_equal(a->len, b->len);
	assert_memory_equal(a->data, b->data,
			    a->len * sizeof(struct sfs_timedev_rec));
	g_array_free(a, TRUE);
	g_array_free(b, TRUE);
}

/* Records equal but for nothing: every time and every cost part. */
static void assert_same_log(GArray *a, GArray *b)
{
	assert_int_equal(a->len, b->len);
	for (guint i = 0; i < a->len; i++) {
		struct sfs_timedev_rec *x = rec_at(a, i), *y = rec_at(b, i);

		assert_int_equal(x->start_ns, y->start_ns);
		assert_int_equal(x->done_ns, y->done_ns);
		assert_memory_equal(&x->cost, &y->cost, sizeof(x->cost));
	}
}

static void test_timedev_cfq_lone_writer_and_stream0_unchanged(void **state)
{
	GArray *elv = rec_log(), *cfq = rec_log();
	GArray *elv0 = rec_log(), *cfq0 = rec_log();
	struct sfs_timedev_counters k;

	/* one process, with think time (slices end by idling, but nobody
	 * else had the disk: no switch) */
	for (int pass = 0; pass < 2; pass++) {
		struct sfs_clock *c = sfs_clock_new_virtual();
		struct sfs_bdev *bd =
		    td_new(null_new(NULL_BYTES), c, "hdd-2009",
			   pass ? "cfq" : "elevator", SFS_TIMEDEV_EMULATE,
			   pass ? cfq : elv);

		sfs_io_set_stream(4242);
		for (int i = 0; i < 600; i++) {
			wr(bd, SFS_IO_DATA, 3 * 1024 * MiB + i * REC, REC);
			if (i % 50 == 49)
				sfs_clock_advance(c, 20 * MS);
			if (i % 100 == 99)
				rd(bd, (uint64_t)i * MiB, 64 * KiB);
		}
		sfs_io_set_stream(0);
		sfs_timedev_counters(bd, &k);
		assert_int_equal(k.slice_switches, 0);
		sfs_bdev_close(bd);
		sfs_clock_free(c);
	}
	assert_int_equal(elv->len, 606);
	assert_same_log(elv, cfq);
	/* the filesystem's own requests (stream 0): the shared model */
	run_workload(elv0, "elevator");
	run_workload(cfq0, "cfq");
	assert_true(elv0->len > 100);
	assert_same_log(elv0, cfq0);
	g_array_free(elv, TRUE);
	g_array_free(cfq, TRUE);
	g_array_free(elv0, TRUE);
	g_array_free(cfq0, TRUE);
}

/*
 * One O_DIRECT writer streams 400 records while, every 25 records, the
 * filesystem (stream 0) writes 16 scattered 4 KiB blocks, as write-back
 * of indirect blocks and bitmaps does.  Returns the modelled time until
 * everything is on the media.
 */
static sfs_ns_t run_writer_with_writeback(const char *sched, bool writeback,
					  struct sfs_timedev_counters *k)
{
	struct sfs_clock *c = sfs_clock_new_virtual();
	struct sfs_bdev *bd = td_new(null_new(NULL_BYTES), c, "hdd-2009", sched,
				     SFS_TIMEDEV_EMULATE, NULL);
	sfs_ns_t end;

	for (int i = 0; i < 400; i++) {
		sfs_io_set_stream(7);
		wr(bd, SFS_IO_DATA, 2 * 1024 * MiB + (uint64_t)i * REC, REC);
		sfs_io_set_stream(0);
		if (writeback && i % 25 == 24)
			for (int j = 0; j < 16; j++)
				wr(bd, SFS_IO_INDIRECT,
				   (uint64_t)(i / 25 * 16 + j) * 8 * MiB + 4096,
				   4096);
	}
	assert_int_equal(sfs_bdev_flush(bd), 0);
	end = sfs_clock_now_ns(c);
	sfs_timedev_counters(bd, k);
	sfs_bdev_close(bd);
	sfs_clock_free(c);
	return end;
}

static void test_timedev_cfq_stream0_writes_take_disk_time(void **state)
{
	struct sfs_timedev_counters k0, k1, ke;
	sfs_ns_t cfq0 = run_writer_with_writeback("cfq", false, &k0);
	sfs_ns_t cfq1 = run_writer_with_writeback("cfq", true, &k1);
	sfs_ns_t elv0 = run_writer_with_writeback("elevator", false, &ke);
	sfs_ns_t elv1 = run_writer_with_writeback("elevator", true, &ke);
	double per_cfq = (double)(cfq1 - cfq0) / (16 * 16) / 1e6;
	double per_elv = (double)(elv1 - elv0) / (16 * 16) / 1e6;

	print_message("# 256 scattered stream-0 writes amid a stream: cfq "
		      "+%.2f ms each, elevator +%.2f ms each; %llu writeouts\n",
		      per_cfq, per_elv,
		      (unsigned long long)k1.shared_writeouts);
	/* one drive, one arm: each scattered block costs a media access
	 * (setup, seek, rotation) under cfq as it does under the elevator,
	 * not just its bus time (the shared model alone would destage them
	 * while the writer holds the disk) */
	assert_true(per_cfq > 5.0);
	assert_true(per_cfq > per_elv * 0.7 && per_cfq < per_elv * 1.5);
	/* written out once per batch before the writer's next record (the
	 * last batch goes with the final flush) */
	assert_int_equal(k1.shared_writeouts, 15);
	assert_int_equal(k0.shared_writeouts, 0);
}

/*
 * sched=cfq,sync_writes=off: writes are asynchronous, as Linux before
 * 2.6.29 submitted O_DIRECT writes (plain WRITE, so CFQ put every
 * process's into the one async queue of their priority): no slices, the
 * shared model charges them exactly as the elevator does, and a batch
 * merges one process's records with another's.
 */
static void test_timedev_cfq_async_writes_share_one_queue(void **state)
{
	GArray *elv = rec_log(), *async = rec_log();
	struct sfs_timedev_counters k;
	sfs_ns_t t_elv =
	    run_writers("elevator", 2, 100, LAYOUT_APART, elv, NULL);
	sfs_ns_t t_async =
	    run_writers("cfq,sync_writes=off", 2, 100, LAYOUT_APART, async, &k);
	sfs_ns_t t_sync = run_writers("cfq", 2, 100, LAYOUT_APART, NULL, NULL);

	print_message("# 2 writers 1 GiB apart: elevator %.1f, cfq async "
		      "writes %.1f, cfq sync writes %.1f MB/s\n",
		      mbps(2, 100, t_elv), mbps(2, 100, t_async),
		      mbps(2, 100, t_sync));
	assert_int_equal(t_elv, t_async);
	assert_same_log(elv, async);
	assert_int_equal(k.slice_switches, 0);
	/* sync writes get the slices (a seek per slice, not per record) */
	assert_true(t_sync * 2 < t_async);

	/* a batch of two processes' interleaved, contiguous records */
	for (int pass = 0; pass < 2; pass++) {
		struct sfs_clock *c = sfs_clock_new_virtual();
		struct sfs_bdev *bd =
		    td_new(null_new(NULL_BYTES), c, "hdd-2009",
			   pass ? "cfq,sync_writes=off" : "cfq",
			   SFS_TIMEDEV_EMULATE, NULL);

		sfs_timedev_plug(bd);
		for (int i = 0; i < 8; i++) {
			sfs_io_set_stream(1 + i % 2);
			wr(bd, SFS_IO_DATA, (uint64_t)i * 64 * KiB, 64 * KiB);
		}
		sfs_io_set_stream(0);
		sfs_timedev_unplug(bd);
		sfs_timedev_counters(bd, &k);
		/* one request of 512 KiB across both, or none merged */
		assert_int_equal(k.merges, pass ? 7 : 0);
		assert_int_equal(k.dev_reqs[SFS_IO_WRITE], pass ? 1 : 8);
		sfs_bdev_close(bd);
		sfs_clock_free(c);
	}
	g_array_free(elv, TRUE);
	g_array_free(async, TRUE);
}

static void test_timedev_cfq_flush_empties_every_writers_cache(void **state)
{
	sfs_ns_t flush_ns[2];

	for (int pass = 0; pass < 2; pass++) {
		struct sfs_clock *c = sfs_clock_new_virtual();
		GArray *log = rec_log();
		struct sfs_bdev *bd =
		    td_new(null_new(NULL_BYTES), c, "hdd-2009",
			   pass ? "cfq" : "elevator", SFS_TIMEDEV_EMULATE, log);

		/* two writers, 4 records each: the drive cache takes them */
		for (int i = 0; i < 8; i++) {
			sfs_io_set_stream(1 + i % 2);
			wr(bd, SFS_IO_DATA, (i % 2) * 2048 * MiB + i / 2 * REC,
			   REC);
		}
		sfs_io_set_stream(0);
		for (guint i = 0; i < log->len; i++)
			assert_true(rec_at(log, i)->cost.cache_hit);
		assert_int_equal(sfs_bdev_flush(bd), 0);
		flush_ns[pass] = rec_at(log, log->len - 1)->cost.total_ns;
		/* 2 MiB reach the media: ~30 ms at 66 MB/s, whoever holds it */
		assert_true(flush_ns[pass] > 25 * MS);
		sfs_bdev_close(bd);
		g_array_free(log, TRUE);
		sfs_clock_free(c);
	}
	print_message("# flush after 8 cached writes: elevator %.1f ms, cfq "
		      "%.1f ms\n",
		      flush_ns[0] / 1e6, flush_ns[1] / 1e6);
	/* cfq's two caches go out one region after the other: no more
	 * than the shared cache's interleaved destage */
	assert_true(flush_ns[1] <= flush_ns[0]);
}

/*
 * Deferred waits (the mount's real queue): an operation that reads a block
 * and then a block that read told it about (an indirect block, then the
 * data it maps) did not issue the second before the first was done.  The
 * two reads are held apart in modelled time, in the order issued, even
 * where the elevator would have served the second first; a batch of
 * writes stays one stage, merged, and what follows the batch waits for
 * it.
 */
static void test_timedev_deferred_dependent_requests_in_sequence(void **state)
{
	struct sfs_clock *c = sfs_clock_new_virtual();
	GArray *log = rec_log();
	struct sfs_bdev *bd = td_new(null_new(NULL_BYTES), c, "hdd-2009",
				     "elevator", SFS_TIMEDEV_EMULATE, log);
	struct sfs_timedev_counters k;
	sfs_ns_t t;

	sfs_io_defer_begin();
	rd(bd, 4096 * MiB, 4096); /* the indirect block, far out */
	rd(bd, 0, 64 * KiB);	  /* the data it maps, near the head */
	t = sfs_io_defer_end();
	assert_int_equal(log->len, 0); /* nothing served yet: queued */
	sfs_io_defer_sleep(c, t);
	assert_int_equal(log->len, 2);
	assert_int_equal(rec_at(log, 0)->off_bytes, 4096 * MiB);
	assert_int_equal(rec_at(log, 1)->off_bytes, 0);
	/* the second arrived when the first was done */
	assert_true(rec_at(log, 1)->submit_ns >= rec_at(log, 0)->done_ns);
	assert_int_equal(sfs_clock_now_ns(c), rec_at(log, 1)->done_ns);

	/* a batch then a read: the batch merged, the read after it */
	sfs_io_defer_begin();
	sfs_timedev_plug(bd);
	for (int i = 0; i < 4; i++)
		wr(bd, SFS_IO_DATA, 2048 * MiB + (uint64_t)i * 64 * KiB,
		   64 * KiB);
	sfs_timedev_unplug(bd);
	rd(bd, 8 * MiB, 4096);
	wr(bd, SFS_IO_DATA, 16 * MiB, 4096); /* decided by the read */
	assert_int_equal(sfs_bdev_flush(bd), 0);
	t = sfs_io_defer_end();
	sfs_io_defer_sleep(c, t);
	sfs_timedev_counters(bd, &k);
	assert_int_equal(log->len, 6);
	assert_int_equal(rec_at(log, 2)->len_bytes, 256 * KiB);
	assert_int_equal(rec_at(log, 2)->n_merged, 4);
	for (guint i = 3; i < log->len; i++)
		assert_true(rec_at(log, i)->start_ns >=
			    rec_at(log, i - 1)->done_ns);
	assert_int_equal(rec_at(log, 3)->off_bytes, 8 * MiB);
	assert_int_equal(rec_at(log, 4)->off_bytes, 16 * MiB);
	/* the flush came after the write it covers */
	assert_int_equal(rec_at(log, 5)->op, SFS_IO_FLUSH);
	assert_int_equal(sfs_clock_now_ns(c), rec_at(log, 5)->done_ns);
	assert_int_equal(k.reqs[SFS_IO_WRITE], 5);
	sfs_bdev_close(bd);
	g_array_free(log, TRUE);
	sfs_clock_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_timedev_forwards_data_and_category),
	    cmocka_unit_test(test_timedev_account_leaves_virtual_clock),
	    cmocka_unit_test(
		test_timedev_emulate_moves_virtual_clock_by_service),
	    cmocka_unit_test(
		test_timedev_emulate_real_clock_takes_modelled_time),
	    cmocka_unit_test(
		test_timedev_plug_batches_writes_in_elevator_order),
	    cmocka_unit_test(test_timedev_read_and_flush_drain_the_batch),
	    cmocka_unit_test(test_timedev_same_sequence_same_times),
	    cmocka_unit_test(test_timedev_counters_by_op_and_category),
	    cmocka_unit_test(test_timedev_bad_specs_leave_lower_alone),
	    cmocka_unit_test(test_timedev_failed_request_not_charged),
	    cmocka_unit_test(test_timedev_close_charges_a_plugged_batch),
	    cmocka_unit_test(test_timedev_cfq_far_writers_seek_once_per_slice),
	    cmocka_unit_test(test_timedev_cfq_interleaved_writer_costs_more),
	    cmocka_unit_test(test_timedev_cfq_same_requests_same_times),
	    cmocka_unit_test(test_timedev_cfq_stream0_writes_take_disk_time),
	    cmocka_unit_test(
		test_timedev_cfq_lone_writer_and_stream0_unchanged),
	    cmocka_unit_test(
		test_timedev_cfq_flush_empties_every_writers_cache),
	    cmocka_unit_test(test_timedev_cfq_async_writes_share_one_queue),
	    cmocka_unit_test(
		test_timedev_deferred_dependent_requests_in_sequence),
	};

	return cmocka_run_group_tests_name("timedev", tests, NULL, NULL);
}
