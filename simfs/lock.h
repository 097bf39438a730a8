/*
 * lock.h - the one kind of mutex simfs uses: a POSIX mutex.
 *
 * GLib's GMutex is built on futexes on Linux, which ThreadSanitizer cannot
 * see: under -Db_sanitize=thread every access a GMutex protects looked
 * like a race.  With pthread mutexes TSan checks the locking for real
 * (doc/internals.md 11.1).  A zeroed sfs_mutex is an
 * unlocked one (glibc's PTHREAD_MUTEX_INITIALIZER is all zeros), as a
 * zeroed GMutex was; init and clear are still called where they were.
 */
#ifndef SFS_LOCK_H
#define SFS_LOCK_H

#include <pthread.h>

typedef struct {
	pthread_mutex_t m;
} sfs_mutex;

static inline void sfs_mutex_init(sfs_mutex *x)
{
	pthread_mutex_init(&x->m, NULL);
}

static inline void sfs_mutex_clear(sfs_mutex *x)
{
	pthread_mutex_destroy(&x->m);
}

static inline void sfs_mutex_lock(sfs_mutex *x)
{
	pthread_mutex_lock(&x->m);
}

static inline void sfs_mutex_unlock(sfs_mutex *x)
{
	pthread_mutex_unlock(&x->m);
}

/* A condition waited on under an sfs_mutex (group commit: fsyncs wait for
 * the commit in flight, fs.c). */
typedef struct {
	pthread_cond_t c;
} sfs_cond;

static inline void sfs_cond_init(sfs_cond *x)
{
	pthread_cond_init(&x->c, NULL);
}

static inline void sfs_cond_clear(sfs_cond *x)
{
	pthread_cond_destroy(&x->c);
}

static inline void sfs_cond_wait(sfs_cond *x, sfs_mutex *m)
{
	pthread_cond_wait(&x->c, &m->m);
}

static inline void sfs_cond_broadcast(sfs_cond *x)
{
	pthread_cond_broadcast(&x->c);
}

#endif /* SFS_LOCK_H */
