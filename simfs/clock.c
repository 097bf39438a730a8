/*
 * clock.c - virtual and real time behind one handle (see clock.h).
 *
 * Each clock is an ops table (virtual or real, chosen by the constructor) and
 * its state.  This is the only file in simfs that reads the host's clock or
 * sleeps.
 *
 * Virtual time is one atomic 64-bit word: advance is a fetch-add, and
 * sleep_until a compare-and-swap loop that only ever raises the word, so
 * concurrent callers never move time backwards.  A real clock holds only its
 * origin (written once at creation, read-only afterwards).
 */
#include <errno.h>
#include <stdatomic.h>
#include <time.h>

#include <glib.h>

#include "clock.h"

struct sfs_clock_ops {
	const char *name;
	sfs_ns_t (*now)(struct sfs_clock *c);
	void (*sleep_until)(struct sfs_clock *c, sfs_ns_t t_ns);
	/* optional: NULL means the clock cannot be moved by hand */
	void (*advance)(struct sfs_clock *c, sfs_ns_t d_ns);
};

struct sfs_clock {
	const struct sfs_clock_ops *ops;
	_Atomic sfs_ns_t virt_ns; /* virtual: current time; atomic */
	struct timespec origin;	  /* real: CLOCK_MONOTONIC at creation */
};

static const struct sfs_clock_ops clk_virtual_ops;
static const struct sfs_clock_ops clk_real_ops;

/* ---- virtual ---- */

static sfs_ns_t virt_now(struct sfs_clock *c)
{
	return atomic_load(&c->virt_ns);
}

static void virt_sleep_until(struct sfs_clock *c, sfs_ns_t t_ns)
{
	sfs_ns_t cur = atomic_load(&c->virt_ns);

	while (cur < t_ns &&
	       !atomic_compare_exchange_weak(&c->virt_ns, &cur, t_ns))
		;
}

static void virt_advance(struct sfs_clock *c, sfs_ns_t d_ns)
{
	atomic_fetch_add(&c->virt_ns, d_ns);
}

/* ---- real ---- */

static sfs_ns_t ts_to_ns(const struct timespec *ts)
{
	return (sfs_ns_t)ts->tv_sec * SFS_NS_PER_S + (sfs_ns_t)ts->tv_nsec;
}

static sfs_ns_t real_now(struct sfs_clock *c)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts_to_ns(&ts) - ts_to_ns(&c->origin);
}

static void real_sleep_until(struct sfs_clock *c, sfs_ns_t t_ns)
{
	sfs_ns_t abs_ns = ts_to_ns(&c->origin) + t_ns;
	struct timespec ts = {
	    .tv_sec = (time_t)(abs_ns / SFS_NS_PER_S),
	    .tv_nsec = (long)(abs_ns % SFS_NS_PER_S),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

/* ---- the verbs ---- */

static struct sfs_clock *clk_new(const struct sfs_clock_ops *ops)
{
	struct sfs_clock *c = g_new0(struct sfs_clock, 1);

	c->ops = ops;
	atomic_init(&c->virt_ns, 0);
	if (ops == &clk_real_ops)
		clock_gettime(CLOCK_MONOTONIC, &c->origin);
	return c;
}

struct sfs_clock *sfs_clock_new_virtual(void)
{
	return clk_new(&clk_virtual_ops);
}

struct sfs_clock *sfs_clock_new_real(void)
{
	return clk_new(&clk_real_ops);
}

void sfs_clock_free(struct sfs_clock *c)
{
	g_free(c);
}

bool sfs_clock_is_virtual(const struct sfs_clock *c)
{
	return c->ops == &clk_virtual_ops;
}

sfs_ns_t sfs_clock_now_ns(struct sfs_clock *c)
{
	return c->ops->now(c);
}

void sfs_clock_sleep_until(struct sfs_clock *c, sfs_ns_t t_ns)
{
	c->ops->sleep_until(c, t_ns);
}

int sfs_clock_advance(struct sfs_clock *c, sfs_ns_t d_ns)
{
	if (!c->ops->advance)
		return -EINVAL;
	c->ops->advance(c, d_ns);
	return 0;
}

static const struct sfs_clock_ops clk_virtual_ops = {
    .name = "virtual",
    .now = virt_now,
    .sleep_until = virt_sleep_until,
    .advance = virt_advance,
};

static const struct sfs_clock_ops clk_real_ops = {
    .name = "real",
    .now = real_now,
    .sleep_until = real_sleep_until,
};

/*
 * Wall-clock time in ns since the Unix epoch.  Only for anchoring time
 * stamps (mkfs, mount); intervals always come from a struct sfs_clock.
 * The coarse clock, as Linux stamps files and as time(2) reads it: the
 * precise one runs up to a tick ahead, and e2fsck, which asks time(2),
 * reports a superblock written in the first milliseconds of a second as
 * written "in the future".
 */
sfs_ns_t sfs_clock_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (sfs_ns_t)ts.tv_sec * SFS_NS_PER_S + (sfs_ns_t)ts.tv_nsec;
}
