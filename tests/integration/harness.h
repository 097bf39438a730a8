/*
 * harness.h - what the FUSE integration tests share.
 *
 * A test program calls h_init(argc, argv) first: it finds the simfs binary
 * (argv[1], else $SIMFS), exits 77 (meson SKIP) if /dev/fuse cannot be
 * opened, makes a private temp dir and starts a guardian process.  Then it
 * runs `simfs mkfs`, h_mount(), plain syscalls on the mount, h_umount() and
 * h_fsck_clean() (e2fsck -fn whose OUTPUT must be clean, not just its exit
 * code: -n prints some problems and still exits 0).
 *
 * Unmount on every path:
 *  - normal exit and h_bail(): an atexit handler runs `simfs umount` for
 *    every mount still live, then removes the temp dir;
 *  - SIGINT/SIGTERM/SIGSEGV/SIGABRT/...: the handler does the same, then
 *    re-raises;
 *  - SIGKILL (meson kills a timed-out test's process group 0.5 s after
 *    SIGTERM): the guardian, in its own session, sees the pipe from the
 *    test close, aborts each FUSE connection still mounted
 *    (/sys/fs/fuse/connections/N/abort), detaches every mount and removes
 *    the temp dir.  $H_KEEP=1 keeps the temp dir for debugging.
 *
 * Output is TAP-like ("ok N - what", "not ok N - what", "# diag", plan at
 * the end); h_done() returns the exit status: 0 if every check passed.
 */
#ifndef SFS_HARNESS_H
#define SFS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <glib.h>

/* ---- set-up ---- */
/* Parse argv[1] (simfs binary) and start; see the file head. */
void h_init(int argc, char **argv);
const char *h_simfs(void);
const char *h_tmpdir(void);
/* A path under the temp dir (g_free it). */
char *h_path(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- running programs ---- */
/*
 * Run argv (NULL-terminated, argv[0] looked up in PATH), capture stdout and
 * stderr (either out pointer may be NULL; g_free them).  Returns the exit
 * status, 128 + signal if killed, -1 if it could not be started.
 */
int h_run(char **out, char **err, const char *const *argv);
/* The same with the arguments inline, NULL-terminated. */
int h_runl(char **out, char **err, const char *arg0, ...)
	__attribute__((sentinel));

/* simfs mkfs [extra...] IMAGE SIZE; extra is NULL-terminated or NULL.
 * Returns the exit status; prints stderr as a diagnostic on failure. */
int h_mkfs(const char *image, const char *size, const char *const *extra);
/*
 * mkdir -p mnt; simfs mount [-o opts] IMAGE MNT; then check the mount is
 * live.  Returns 0, or -1 (stderr shown as a diagnostic).
 */
int h_mount(const char *image, const char *mnt, const char *opts);
/* simfs umount MNT and check it is gone; 0 or -1. */
int h_umount(const char *mnt);
/* mount -o loop,ro -t ext2 IMAGE MNT (kernel driver); 0 or -1, *err set. */
int h_kmount(const char *image, const char *mnt, char **err);
/* The same with the kernel driver `type` ("ext4" mounts ext2/3/4). */
int h_kmount_type(const char *image, const char *mnt, const char *type,
		  char **err);
/* The same with mount options opts ("loop" mounts read-write). */
int h_kmount_opts(const char *image, const char *mnt, const char *type,
		  const char *opts, char **err);
int h_kumount(const char *mnt);
/* mke2fs -F -q -t type -b bs image size (a fresh image); 0, or nonzero
 * with mke2fs's message in a diagnostic. */
int h_mke2fs(const char *image, const char *type, const char *bs,
	     const char *size);
/* Can this machine loop-mount an ext4 image read-write?  false with *why
 * (g_free) saying why not. */
bool h_loop_possible(char **why);
/* A simfs mount of a `simfs mkfs --preset` image beside a kernel ext4
 * loop mount of an `mke2fs -t type` image, both 64M at block size bs,
 * for tests that run one sequence on both.  h_kpair_up makes and mounts
 * them (false, with a failed check, if it could not); h_kpair_down
 * unmounts what is mounted, checks both images with e2fsck -fn, removes
 * them and frees the paths. */
struct h_kpair {
	const char *preset, *bs; /* for the checks' names */
	char *img, *mnt;	 /* simfs */
	char *kimg, *kmnt;	 /* the kernel's */
	bool mounted, kmounted;
};
bool h_kpair_up(struct h_kpair *p, const char *preset, const char *type,
		const char *bs);
void h_kpair_down(struct h_kpair *p);
/* The side-by-side tests' sequence: SEED (argv[2], default 1) and STEPS
 * (argv[3], default steps) read and printed with the command to rerun
 * them, then fn run on ext4 at 4 KiB and 1 KiB blocks and on ext3
 * (seeds SEED, SEED+1, SEED+2).  false, saying why, when loop mounting
 * is impossible here (nothing run). */
bool h_kpair_configs(int argc, char **argv, unsigned steps,
		     void (*fn)(const char *preset, const char *type,
				const char *bs, uint64_t seed,
				unsigned steps));
/* mount -t tmpfs -o size=SIZE at mnt (a small host disk that fills); 0 or
 * -1.  Tracked like a kernel mount; h_kumount undoes it. */
int h_tmpfs(const char *mnt, const char *size);
/* Start tracking mnt if something is mounted there (a mount that was
 * expected to fail but did not), so that cleanup unmounts it. */
void h_track(const char *mnt);
/* Is something mounted exactly at mnt (from /proc/self/mountinfo)? */
bool h_is_mounted(const char *mnt);
/* A process other than us whose command line mentions `needle`: its pid,
 * or 0. */
pid_t h_find_process(const char *needle);
/* How many such processes there are. */
int h_count_processes(const char *needle);
/*
 * e2fsck -fn image: true only if it exits 0 and prints nothing but the
 * version line, "Pass N" lines and the final summary.  On a problem the
 * whole output goes out as diagnostics.  *out (may be NULL) gets the text.
 */
bool h_fsck_clean(const char *image, char **out);

/* ---- TAP ---- */
bool h_ok_at(const char *file, int line, bool cond, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
#define H_OK(cond, ...) h_ok_at(__FILE__, __LINE__, (cond), __VA_ARGS__)
/* expr must succeed (!= -1); on failure reports errno (read right after
 * expr: GNU statement expressions) */
#define H_SYS(expr, ...)                                                     \
	({                                                                   \
		long h_rc_ = (long)(expr);                                   \
		int h_errno_ = errno;                                        \
		h_sys_at(__FILE__, __LINE__, h_rc_, h_errno_, __VA_ARGS__);  \
	})
/* expr must fail (== -1) with errno e */
#define H_ERR(expr, e, ...)                                                  \
	({                                                                   \
		long h_rc_ = (long)(expr);                                   \
		int h_errno_ = errno;                                        \
		h_err_at(__FILE__, __LINE__, h_rc_, h_errno_, (e),           \
			 __VA_ARGS__);                                       \
	})
/* a == b for integers, both shown on failure */
#define H_EQ(a, b, ...)                                                      \
	h_eq_at(__FILE__, __LINE__, (long long)(a), (long long)(b),          \
		__VA_ARGS__)
bool h_sys_at(const char *file, int line, long rc, int err, const char *fmt,
	      ...) __attribute__((format(printf, 5, 6)));
bool h_err_at(const char *file, int line, long rc, int err, int want,
	      const char *fmt, ...) __attribute__((format(printf, 6, 7)));
bool h_eq_at(const char *file, int line, long long a, long long b,
	     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void h_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "Bail out!" and exit 1 (cleanup still runs). */
void h_bail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
/* Number of failed checks so far. */
int h_failures(void);
/* Print the plan; return the exit status (0 all passed, 1 otherwise). */
int h_done(void);
/* Monotonic seconds, for reporting durations (and polling). */
double h_now(void);
/*
 * SIMFS_TEST_TIMEOUT_MULTIPLIER (a positive integer, default 1): every
 * time limit inside a test (a poll's deadline, a deadlock guard) is
 * multiplied by it, as meson's --timeout-multiplier stretches the test's
 * own timeout (tests/run-all.sh passes both).  A bad value bails out.
 */
double h_time_scale(void);

/* ---- data ---- */
/* splitmix64: seeded, the same sequence on every machine */
struct h_rng {
	uint64_t s;
};
void h_rng_seed(struct h_rng *r, uint64_t seed);
uint64_t h_rand(struct h_rng *r);
/* uniform in [0, n) (n > 0) */
uint64_t h_below(struct h_rng *r, uint64_t n);
void h_fill(struct h_rng *r, void *buf, size_t n);

uint64_t h_hash_buf(const void *buf, size_t n);
/* XXH3-64 of a whole file's bytes; -errno in *err (0 on success) */
uint64_t h_hash_file(const char *path, int *err);
/* Write all of buf at off (pwrite loop); 0 or -errno. */
int h_pwrite_all(int fd, const void *buf, size_t n, off_t off);
/* Write a whole file (O_CREAT|O_TRUNC, mode); 0 or -errno. */
int h_write_file(const char *path, const void *buf, size_t n, mode_t mode);

/* ---- trees ---- */
/* One entry of a scanned tree (h_tree_scan). */
struct h_entry {
	char *path;      /* relative to the root, no leading '/' */
	mode_t mode;     /* full st_mode: type | permissions */
	nlink_t nlink;
	uid_t uid;
	gid_t gid;
	uint64_t size;   /* bytes (not compared for directories) */
	uint64_t hash;   /* XXH3 of the content (files) or target (symlinks) */
	char *target;    /* symlink target, else NULL */
};
/*
 * Walk root (not following symlinks), sorted by path.  Returns an
 * array of struct h_entry * (free with h_tree_free), or NULL with the
 * failing path and errno reported as a diagnostic.
 */
GPtrArray *h_tree_scan(const char *root);
/* An empty tree to fill by hand (entries g_new0'd, strings g_strdup'd). */
GPtrArray *h_tree_new(void);
void h_tree_free(GPtrArray *tree);
/* Sort entries by path (strcmp), the order h_tree_compare expects; scans
 * come sorted, hand-built expectations call this. */
void h_tree_sort(GPtrArray *tree);
#define H_CMP_NLINK 0x1 /* compare link counts */
#define H_CMP_OWNER 0x2 /* compare uid/gid */
/* Compare two scans; prints up to 20 differences as diagnostics and
 * returns how many there were (0 = same). */
int h_tree_compare(GPtrArray *a, GPtrArray *b, const char *name_a,
		   const char *name_b, unsigned flags);

#endif /* SFS_HARNESS_H */
