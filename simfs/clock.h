/*
 * clock.h - where simfs gets its time from.
 *
 * Time is an input (doc/internals.md, §14): nothing in simfs but clock.c
 * calls clock_gettime or sleeps.  A clock is an opaque handle with one of two
 * behaviours, chosen when it is made:
 *
 *   virtual  time stands still until someone moves it: sfs_clock_advance
 *            adds to it, sfs_clock_sleep_until jumps it forward.  Starts at
 *            0.  Replay and tests run on it: same input, same times, bit for
 *            bit, on any machine.
 *   real     CLOCK_MONOTONIC, counted from the moment the clock was made (so
 *            it also starts near 0); sfs_clock_sleep_until really sleeps
 *            (clock_nanosleep, TIMER_ABSTIME).  Mounts run on it.
 *
 *   c = sfs_clock_new_virtual();        or sfs_clock_new_real()
 *   t = sfs_clock_now_ns(c);
 *   sfs_clock_sleep_until(c, t + 5 * SFS_NS_PER_MS);
 *   sfs_clock_free(c);
 *
 * Invariant: sfs_clock_now_ns never goes backwards.  All verbs are
 * thread-safe (the virtual time is one atomic word).
 */
#ifndef SFS_CLOCK_H
#define SFS_CLOCK_H

#include <stdbool.h>

#include "format.h" /* sfs_ns_t */

#define SFS_NS_PER_US 1000ULL
#define SFS_NS_PER_MS 1000000ULL
#define SFS_NS_PER_S 1000000000ULL

struct sfs_clock;

/* A virtual clock at time 0.  Free with sfs_clock_free. */
struct sfs_clock *sfs_clock_new_virtual(void);
/* A real (monotonic) clock whose time 0 is now.  Free with sfs_clock_free. */
struct sfs_clock *sfs_clock_new_real(void);
void sfs_clock_free(struct sfs_clock *c);

bool sfs_clock_is_virtual(const struct sfs_clock *c);

/* Current time in ns since the clock's origin. */
sfs_ns_t sfs_clock_now_ns(struct sfs_clock *c);

/*
 * Return no earlier than time t_ns.  Virtual: moves the time to t_ns if it
 * is behind (never back).  Real: sleeps, retrying after signals.  A time
 * already past returns at once.
 */
void sfs_clock_sleep_until(struct sfs_clock *c, sfs_ns_t t_ns);

/* Move a virtual clock forward by d_ns.  0, or -EINVAL on a real clock. */
int sfs_clock_advance(struct sfs_clock *c, sfs_ns_t d_ns);

/* Wall-clock time since the epoch (the coarse clock, as time(2)): only to
 * anchor time stamps at mkfs and mount. */
sfs_ns_t sfs_clock_wall_ns(void);

#endif /* SFS_CLOCK_H */
