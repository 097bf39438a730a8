/*
 * test_clock.c - virtual and real clocks.
 *
 * Virtual: starts at 0, moves only by advance and sleep_until, never
 * backwards, and concurrent advances all count.  Real: monotonic, refuses
 * advance, and sleep_until returns no earlier than asked (a lower bound
 * only: no upper-bound timing assertions).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>

#include <glib.h>

#include "clock.h"

static void test_clock_virtual_starts_at_zero(void **state)
{
	struct sfs_clock *c = sfs_clock_new_virtual();

	assert_true(sfs_clock_is_virtual(c));
	assert_int_equal(sfs_clock_now_ns(c), 0);
	assert_int_equal(sfs_clock_now_ns(c), 0); /* time stands still */
	sfs_clock_free(c);
}

static void test_clock_virtual_advance_adds(void **state)
{
	struct sfs_clock *c = sfs_clock_new_virtual();

	assert_int_equal(sfs_clock_advance(c, 1500), 0);
	assert_int_equal(sfs_clock_now_ns(c), 1500);
	assert_int_equal(sfs_clock_advance(c, 0), 0);
	assert_int_equal(sfs_clock_advance(c, 3 * SFS_NS_PER_S), 0);
	assert_int_equal(sfs_clock_now_ns(c), 3 * SFS_NS_PER_S + 1500);
	sfs_clock_free(c);
}

static void test_clock_virtual_sleep_jumps_forward_only(void **state)
{
	struct sfs_clock *c = sfs_clock_new_virtual();

	sfs_clock_sleep_until(c, 7 * SFS_NS_PER_MS);
	assert_int_equal(sfs_clock_now_ns(c), 7 * SFS_NS_PER_MS);
	sfs_clock_sleep_until(c, 2 * SFS_NS_PER_MS); /* in the past */
	assert_int_equal(sfs_clock_now_ns(c), 7 * SFS_NS_PER_MS);
	sfs_clock_sleep_until(c, 7 * SFS_NS_PER_MS);
	assert_int_equal(sfs_clock_now_ns(c), 7 * SFS_NS_PER_MS);
	sfs_clock_free(c);
}

struct adder {
	struct sfs_clock *c;
	int n;
};

static gpointer add_many(gpointer p)
{
	struct adder *a = p;

	for (int i = 0; i < a->n; i++) {
		sfs_clock_advance(a->c, 3);
		sfs_clock_sleep_until(a->c, (sfs_ns_t)i); /* never moves back */
	}
	return NULL;
}

static void test_clock_virtual_concurrent_advances_all_count(void **state)
{
	struct sfs_clock *c = sfs_clock_new_virtual();
	struct adder a = {.c = c, .n = 20000};
	GThread *t[4];

	for (int i = 0; i < 4; i++)
		t[i] = g_thread_new("adder", add_many, &a);
	for (int i = 0; i < 4; i++)
		g_thread_join(t[i]);
	assert_int_equal(sfs_clock_now_ns(c), 4 * 20000 * 3);
	sfs_clock_free(c);
}

static void test_clock_real_refuses_advance(void **state)
{
	struct sfs_clock *c = sfs_clock_new_real();

	assert_false(sfs_clock_is_virtual(c));
	assert_int_equal(sfs_clock_advance(c, 10), -EINVAL);
	sfs_clock_free(c);
}

static void test_clock_real_monotonic_from_near_zero(void **state)
{
	struct sfs_clock *c = sfs_clock_new_real();
	sfs_ns_t prev = sfs_clock_now_ns(c);

	/* its origin is its creation: a freshly made clock reads < 1 s */
	assert_true(prev < SFS_NS_PER_S);
	for (int i = 0; i < 1000; i++) {
		sfs_ns_t now = sfs_clock_now_ns(c);

		assert_true(now >= prev);
		prev = now;
	}
	sfs_clock_free(c);
}

static void test_clock_real_sleep_until_lower_bound(void **state)
{
	struct sfs_clock *c = sfs_clock_new_real();
	sfs_ns_t target = sfs_clock_now_ns(c) + 20 * SFS_NS_PER_MS;

	sfs_clock_sleep_until(c, target);
	assert_true(sfs_clock_now_ns(c) >= target);
	sfs_clock_sleep_until(c, 0); /* past: returns at once */
	sfs_clock_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_clock_virtual_starts_at_zero),
	    cmocka_unit_test(test_clock_virtual_advance_adds),
	    cmocka_unit_test(test_clock_virtual_sleep_jumps_forward_only),
	    cmocka_unit_test(test_clock_virtual_concurrent_advances_all_count),
	    cmocka_unit_test(test_clock_real_refuses_advance),
	    cmocka_unit_test(test_clock_real_monotonic_from_near_zero),
	    cmocka_unit_test(test_clock_real_sleep_until_lower_bound),
	};

	return cmocka_run_group_tests_name("clock", tests, NULL, NULL);
}
