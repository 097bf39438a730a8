/*
 * test_sched.c - the I/O schedulers on their own.
 *
 * noop keeps arrival order and merges only what continues the request in
 * front; elevator goes C-LOOK from the head, merges contiguous requests of
 * one op up to max_req (never across ops, never overlapping ones), and a
 * request past its deadline goes first, so a request behind the head does
 * not starve while new ones keep arriving ahead of it.  cfq orders a
 * batch as the elevator does but merges only within one stream, and hands
 * its slice knobs to the timing device.  A contract case runs every
 * registered scheduler through the same checks.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include <glib.h>

#include "sched.h"
#include "testsupport.h"

#define KiB 1024ULL
#define MS 1000000ULL

static struct sfs_sched *mk(const char *spec)
{
	struct sfs_sched *s = NULL;
	char *err = NULL;
	int rc = sfs_sched_new(spec, &s, &err);

	sfs_test_spec_ok(spec, rc, err);
	return s;
}

static void add(struct sfs_sched *s, enum sfs_io_op op, uint64_t off,
		uint64_t len, sfs_ns_t t)
{
	struct sfs_io_req r = {op, SFS_IO_DATA, off, len, 0};

	assert_int_equal(sfs_sched_add(s, &r, t, NULL), 0);
}

static struct sfs_sched_dispatch next(struct sfs_sched *s, uint64_t head,
				      sfs_ns_t now)
{
	struct sfs_sched_dispatch d;

	assert_int_equal(sfs_sched_dispatch_next(s, head, now, &d), 0);
	return d;
}

static void test_sched_bad_spec_refused(void **state)
{
	const char *bad[][2] = {
	    {"bfq", "elevator"},
	    {"", "noop"},
	    {"elevator,max_req=huge", "max_req"},
	    {"elevator,max_req=1", "max_req"},
	    {"noop,read_expire_ms=5", "max_req"},
	    {"elevator,write_expire_ms", "key=value"},
	    {"bfq", "cfq"}, /* the message lists every scheduler */
	    {"cfq,slice_sync_ms=0", "slice_sync_ms"},
	    {"cfq,slice_idle_ms=-1", "slice_idle_ms"},
	    {"cfq,slice_sync_ms=fast", "slice_sync_ms"},
	    /* an idle wait as long as the slice leaves no slice */
	    {"cfq,slice_sync_ms=10,slice_idle_ms=10", "below slice_sync_ms"},
	};

	for (unsigned i = 0; i < G_N_ELEMENTS(bad); i++) {
		struct sfs_sched *s = NULL;
		char *err = NULL;

		assert_int_equal(sfs_sched_new(bad[i][0], &s, &err), -EINVAL);
		assert_null(s);
		assert_non_null(err);
		if (!strstr(err, bad[i][1]))
			fail_msg("'%s': '%s' lacks '%s'", bad[i][0], err,
				 bad[i][1]);
		g_free(err);
	}
}

static void test_sched_refuses_flush_and_empty(void **state)
{
	struct sfs_sched *s = mk("elevator");
	struct sfs_io_req flush = {SFS_IO_FLUSH, SFS_IO_OTHER, 0, 0, 0};
	struct sfs_io_req empty = {SFS_IO_WRITE, SFS_IO_DATA, 4096, 0, 0};
	struct sfs_sched_dispatch d;

	assert_int_equal(sfs_sched_add(s, &flush, 0, NULL), -EINVAL);
	assert_int_equal(sfs_sched_add(s, &empty, 0, NULL), -EINVAL);
	assert_true(sfs_sched_empty(s));
	assert_int_equal(sfs_sched_dispatch_next(s, 0, 0, &d), -ENOENT);
	sfs_sched_free(s);
}

static void test_sched_noop_is_fifo_and_merges_what_follows(void **state)
{
	struct sfs_sched *s = mk("noop");
	uint64_t want_off[] = {30 * KiB, 0, 100 * KiB, 8 * KiB};
	uint64_t want_len[] = {4 * KiB, 8 * KiB, 4 * KiB, 4 * KiB};
	struct sfs_sched_counters c;

	add(s, SFS_IO_WRITE, 30 * KiB, 4 * KiB, 1);
	add(s, SFS_IO_WRITE, 0, 4 * KiB, 2);
	add(s, SFS_IO_WRITE, 4 * KiB, 4 * KiB, 3); /* continues the one ahead */
	add(s, SFS_IO_WRITE, 100 * KiB, 4 * KiB, 4);
	add(s, SFS_IO_WRITE, 8 * KiB, 4 * KiB, 5); /* not right behind: alone */
	assert_int_equal(sfs_sched_queued(s), 5);
	for (unsigned i = 0; i < G_N_ELEMENTS(want_off); i++) {
		struct sfs_sched_dispatch d = next(s, 0, 10);

		assert_int_equal(d.req.off_bytes, want_off[i]);
		assert_int_equal(d.req.len_bytes, want_len[i]);
	}
	assert_true(sfs_sched_empty(s));
	sfs_sched_counters(s, &c);
	assert_int_equal(c.added, 5);
	assert_int_equal(c.dispatched, 4);
	assert_int_equal(c.merges, 1);
	sfs_sched_free(s);
}

static void test_sched_elevator_clook_order(void **state)
{
	struct sfs_sched *s = mk("elevator");
	uint64_t offs[] = {10, 60, 30, 90, 55, 50};
	uint64_t want[] = {50, 55, 60, 90, 10, 30};
	uint64_t head = 50 * KiB;

	for (unsigned i = 0; i < G_N_ELEMENTS(offs); i++)
		add(s, SFS_IO_READ, offs[i] * KiB, KiB, i);
	for (unsigned i = 0; i < G_N_ELEMENTS(want); i++) {
		struct sfs_sched_dispatch d = next(s, head, 100);

		assert_int_equal(d.req.off_bytes, want[i] * KiB);
		assert_int_equal(d.n_orig, 1);
		assert_false(d.expired);
		head = d.req.off_bytes + d.req.len_bytes;
	}
	sfs_sched_free(s);
}

static void test_sched_elevator_merges_up_to_max_req(void **state)
{
	struct sfs_sched *s = mk("elevator");
	/* sixteen contiguous 64 KiB writes, queued out of order */
	unsigned order[] = {5, 0,  9, 3,  15, 1, 12, 7,
			    2, 10, 4, 14, 6,  8, 13, 11};
	struct sfs_sched_counters c;
	struct sfs_sched_dispatch d;

	for (unsigned i = 0; i < G_N_ELEMENTS(order); i++) {
		struct sfs_io_req r = {
		    SFS_IO_WRITE, order[i] == 0 ? SFS_IO_INODE : SFS_IO_DATA,
		    order[i] * 64 * KiB, 64 * KiB, 0};

		assert_int_equal(sfs_sched_add(s, &r, i, NULL), 0);
	}
	/* head in the middle of the first half: the run grows both ways */
	d = next(s, 3 * 64 * KiB, 100);
	assert_int_equal(d.req.op, SFS_IO_WRITE);
	assert_int_equal(d.req.off_bytes, 0);
	assert_int_equal(d.req.len_bytes, 512 * KiB);
	assert_int_equal(d.req.cat, SFS_IO_INODE); /* the first one's */
	assert_int_equal(d.n_orig, 8);
	for (size_t i = 0; i < d.n_orig; i++)
		assert_int_equal(d.orig[i].io.off_bytes, i * 64 * KiB);
	d = next(s, 512 * KiB, 100);
	assert_int_equal(d.req.off_bytes, 512 * KiB);
	assert_int_equal(d.req.len_bytes, 512 * KiB);
	assert_true(sfs_sched_empty(s));
	sfs_sched_counters(s, &c);
	assert_int_equal(c.dispatched, 2);
	assert_int_equal(c.merges, 14);
	sfs_sched_free(s);

	/* a smaller max_req cuts the runs shorter */
	s = mk("elevator,max_req=128K");
	for (unsigned i = 0; i < 4; i++)
		add(s, SFS_IO_WRITE, i * 64 * KiB, 64 * KiB, i);
	assert_int_equal(next(s, 0, 10).req.len_bytes, 128 * KiB);
	assert_int_equal(next(s, 0, 10).req.len_bytes, 128 * KiB);
	sfs_sched_free(s);
}

static void test_sched_elevator_no_merge_across_ops_or_overlap(void **state)
{
	struct sfs_sched *s = mk("elevator");

	add(s, SFS_IO_READ, 0, 4 * KiB, 1);
	add(s, SFS_IO_WRITE, 4 * KiB, 4 * KiB, 2);
	add(s, SFS_IO_WRITE, 100 * KiB, 8 * KiB, 3);
	add(s, SFS_IO_WRITE, 104 * KiB, 8 * KiB, 4); /* overlaps */
	for (int i = 0; i < 4; i++)
		assert_int_equal(next(s, 0, 10).n_orig, 1);
	assert_true(sfs_sched_empty(s));
	sfs_sched_free(s);
}

/*
 * A read at offset 0 waits while new requests keep arriving just ahead of
 * the head, 10 ms apart.  Returns when it went out (0: never, in 300).
 */
static sfs_ns_t starve(const char *spec, bool *expired)
{
	struct sfs_sched *s = mk(spec);
	uint64_t head = 64 * KiB;
	sfs_ns_t now = 0, served = 0;

	add(s, SFS_IO_READ, 0, 4 * KiB, 0);
	for (int i = 0; i < 300 && !served; i++) {
		struct sfs_sched_dispatch d;

		add(s, SFS_IO_READ, head + 8 * KiB, 4 * KiB, now);
		d = next(s, head, now);
		if (d.req.off_bytes == 0) {
			served = now;
			*expired = d.expired;
		}
		head = d.req.off_bytes + d.req.len_bytes;
		now += 10 * MS;
	}
	sfs_sched_free(s);
	return served;
}

static void test_sched_elevator_deadline_prevents_starvation(void **state)
{
	bool expired = false;
	sfs_ns_t t = starve("elevator", &expired);

	/* read_expire_ms = 500: served at the first dispatch past 500 ms */
	assert_true(t >= 500 * MS && t <= 510 * MS);
	assert_true(expired);
	/* without a usable deadline, C-LOOK alone starves it */
	assert_int_equal(starve("elevator,read_expire_ms=1e7", &expired), 0);
}

static void test_sched_elevator_write_deadline_longer(void **state)
{
	struct sfs_sched *s = mk("elevator,read_expire_ms=100,"
				 "write_expire_ms=1000");
	struct sfs_sched_dispatch d;
	struct sfs_sched_counters c;

	add(s, SFS_IO_WRITE, 0, 4 * KiB, 0);
	add(s, SFS_IO_READ, 8 * KiB, 4 * KiB, 0);
	/* at 500 ms only the read has expired: it goes, not the write that
	 * C-LOOK would pick (wrapping from 800 KiB to 0) */
	d = next(s, 800 * KiB, 500 * MS);
	assert_true(d.expired);
	assert_int_equal(d.req.op, SFS_IO_READ);
	assert_int_equal(d.req.off_bytes, 8 * KiB);
	/* at 1.55 s the write has expired, a read from 1.5 s has not: the
	 * write goes, though the read lies ahead of the head */
	add(s, SFS_IO_READ, 900 * KiB, 4 * KiB, 1500 * MS);
	d = next(s, 800 * KiB, 1550 * MS);
	assert_true(d.expired);
	assert_int_equal(d.req.op, SFS_IO_WRITE);
	d = next(s, 4 * KiB, 1550 * MS);
	assert_false(d.expired);
	assert_int_equal(d.req.off_bytes, 900 * KiB);
	sfs_sched_counters(s, &c);
	assert_int_equal(c.expired, 2);
	sfs_sched_free(s);
}

static void add_stream(struct sfs_sched *s, uint64_t off, uint64_t len,
		       uint32_t stream)
{
	struct sfs_io_req r = {SFS_IO_WRITE, SFS_IO_DATA, off, len, stream};

	assert_int_equal(sfs_sched_add(s, &r, 0, NULL), 0);
}

static void test_sched_cfq_merges_only_within_a_stream(void **state)
{
	struct sfs_sched *cfq = mk("cfq"), *elv = mk("elevator");
	struct sfs_sched_dispatch d;

	/* three contiguous writes: 0-4K and 8K-12K by stream 7, 4K-8K by 9 */
	for (int i = 0; i < 2; i++) {
		struct sfs_sched *s = i ? elv : cfq;

		add_stream(s, 0, 4 * KiB, 7);
		add_stream(s, 4 * KiB, 4 * KiB, 9);
		add_stream(s, 8 * KiB, 4 * KiB, 7);
	}
	/* the elevator merges all three (same op, contiguous) */
	d = next(elv, 0, 0);
	assert_int_equal(d.n_orig, 3);
	assert_int_equal(d.req.len_bytes, 12 * KiB);
	/* cfq keeps the streams apart, in C-LOOK order, each with its id */
	d = next(cfq, 0, 0);
	assert_int_equal(d.n_orig, 1);
	assert_int_equal(d.req.stream, 7);
	d = next(cfq, d.req.off_bytes + d.req.len_bytes, 0);
	assert_int_equal(d.req.off_bytes, 4 * KiB);
	assert_int_equal(d.req.stream, 9);
	d = next(cfq, 8 * KiB, 0);
	assert_int_equal(d.req.off_bytes, 8 * KiB);
	assert_true(sfs_sched_empty(cfq));
	sfs_sched_free(cfq);
	sfs_sched_free(elv);
}

static void test_sched_cfq_slices_from_knobs(void **state)
{
	struct sfs_sched *cfq = mk("cfq"), *tuned = mk("cfq,slice_sync_ms=40,"
						       "slice_idle_ms=0");
	struct sfs_sched *elv = mk("elevator");
	struct sfs_sched_slices sl;

	/* CFQ's defaults, Linux 2.6.32 block/cfq-iosched.c */
	assert_int_equal(sfs_sched_slices(cfq, &sl), 0);
	assert_int_equal(sl.slice_sync_ns, 100 * MS);
	assert_int_equal(sl.slice_idle_ns, 8 * MS);
	assert_int_equal(sfs_sched_slices(tuned, &sl), 0);
	assert_int_equal(sl.slice_sync_ns, 40 * MS);
	assert_int_equal(sl.slice_idle_ns, 0);
	/* the others have none */
	assert_int_equal(sfs_sched_slices(elv, &sl), -ENOENT);
	assert_string_equal(sfs_sched_name(cfq), "cfq");
	assert_non_null(sfs_sched_knobs("cfq"));
	sfs_sched_free(cfq);
	sfs_sched_free(tuned);
	sfs_sched_free(elv);
}

/*
 * The contract every registered scheduler keeps: each request queued is
 * handed out exactly once, every dispatch is one op, contiguous, within
 * max_req (64K here), and its knobs parse and reject.
 */
static void test_sched_contract_every_registered(void **state)
{
	(void)state;
	for (unsigned i = 0; sfs_sched_nth(i, NULL); i++) {
		const char *name = sfs_sched_nth(i, NULL);
		char *spec = g_strdup_printf("%s,max_req=64K", name);
		char *bad = g_strdup_printf("%s,no_such_knob=1", name);
		struct sfs_sched *s = mk(spec), *t = NULL;
		struct sfs_sched_dispatch d;
		char *err = NULL;
		unsigned seen[64] = {0}, total = 0;
		uint64_t head = 0;
		sfs_ns_t now = 0;

		assert_non_null(sfs_sched_knobs(name));
		assert_int_equal(sfs_sched_new(bad, &t, &err), -EINVAL);
		assert_null(t);
		assert_non_null(err);
		g_free(err);
		/* 64 4K requests, 32 slots apart, shuffled: some contiguous */
		for (unsigned k = 0; k < 64; k++) {
			unsigned j = (k * 37) % 64;
			struct sfs_io_req r = {
			    .op = j % 3 ? SFS_IO_WRITE : SFS_IO_READ,
			    .off_bytes = (j % 32) * 4 * KiB + (j / 32) * MS,
			    .len_bytes = 4 * KiB,
			    .stream = j % 2,
			};

			assert_int_equal(sfs_sched_add(s, &r, now, &seen[j]),
					 0);
		}
		assert_int_equal(sfs_sched_queued(s), 64);
		while (sfs_sched_dispatch_next(s, head, now, &d) == 0) {
			assert_true(d.n_orig >= 1);
			assert_true(d.req.len_bytes <= 64 * KiB);
			for (size_t k = 0; k < d.n_orig; k++) {
				unsigned *c = d.orig[k].cookie;

				assert_int_equal(d.orig[k].io.op, d.req.op);
				if (k)
					assert_int_equal(
					    d.orig[k].io.off_bytes,
					    d.orig[k - 1].io.off_bytes +
						d.orig[k - 1].io.len_bytes);
				(*c)++;
				total++;
			}
			head = d.req.off_bytes + d.req.len_bytes;
			now += MS;
		}
		assert_true(sfs_sched_empty(s));
		assert_int_equal(total, 64);
		for (unsigned k = 0; k < 64; k++)
			assert_int_equal(seen[k], 1);
		sfs_sched_free(s);
		g_free(spec);
		g_free(bad);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sched_bad_spec_refused),
	    cmocka_unit_test(test_sched_refuses_flush_and_empty),
	    cmocka_unit_test(test_sched_noop_is_fifo_and_merges_what_follows),
	    cmocka_unit_test(test_sched_elevator_clook_order),
	    cmocka_unit_test(test_sched_elevator_merges_up_to_max_req),
	    cmocka_unit_test(
		test_sched_elevator_no_merge_across_ops_or_overlap),
	    cmocka_unit_test(test_sched_elevator_deadline_prevents_starvation),
	    cmocka_unit_test(test_sched_elevator_write_deadline_longer),
	    cmocka_unit_test(test_sched_cfq_merges_only_within_a_stream),
	    cmocka_unit_test(test_sched_cfq_slices_from_knobs),
	    cmocka_unit_test(test_sched_contract_every_registered),
	};

	return cmocka_run_group_tests_name("sched", tests, NULL, NULL);
}
