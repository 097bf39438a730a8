/*
 * testfs.c - temporary images and the e2fsck oracle for the tests.
 *
 *   dir = sfs_test_tmpdir();                  private dir under $TMPDIR
 *   sfs_test_mkimage(path, size, bs);         sparse file + simfs mkfs
 *   fs = sfs_test_open(path, "mem=1M");       engine on it (fails the test
 *                                             with the engine's message)
 *   ... sfs_fs_close(fs);
 *   assert_true(sfs_test_fsck_clean(path, NULL));
 *   sfs_test_rmtree(dir);
 *
 * With SIMFS_TEST_MKFS=mke2fs-ext4 (or mke2fs-ext3) in the environment,
 * sfs_test_mkimage makes the image with plain `mke2fs -t ext4` (or ext3)
 * at the same size and block size instead: the defaults of the installed
 * e2fsprogs (1.47: metadata_csum, 64bit, flex_bg, a journal, dir_index,
 * resize_inode), with a fixed UUID and hash seed so that a run is
 * reproducible.  The unit suites that take their images from here run a
 * second time that way (tests/unit/meson.build); a test that checks what
 * simfs mkfs itself lays out asks sfs_test_simfs_mkfs() and checks that
 * only on simfs mkfs's images.
 *
 * Directories come from one per-process parent that is removed at exit
 * and on SIGTERM/SIGINT/SIGHUP, so a failed or killed test leaves nothing
 * in $TMPDIR.
 *
 * The oracle runs `e2fsck -fn` (C locale, no e2fsck.conf) and accepts only
 * a clean run: exit 0 and nothing but the version line, the "Pass N" lines
 * and the final "N/M files ..., X/Y blocks" summary.  Anything else ("Free
 * blocks count wrong", "Fix? no", "differences", a journal warning) is a
 * problem even though -n exits 0 for some of them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "config.h"
#include "fs_priv.h"
#include "mkfs.h"
#include "models/journal/jbd2.h"
#include "testsupport.h"
#include "workload.h"

#define SFS_TEST_SEED 0x5EEDu /* test images get reproducible UUIDs */

/*
 * Every directory a test process makes lives under one parent of its own,
 * $TMPDIR/simfs-test-XXXXXX, removed when the process exits or is killed
 * by SIGTERM/SIGINT/SIGHUP (a meson timeout sends SIGTERM), and also when
 * a failed assertion skipped a test's own clean-up.  Only the process that
 * made the parent removes it, not the children the crash tests fork.
 */
static char *tmp_parent;
static pid_t tmp_parent_pid;

static void tmp_parent_remove(void)
{
	if (tmp_parent && getpid() == tmp_parent_pid)
		sfs_test_rmtree(tmp_parent);
}

static void tmp_parent_signal(int sig)
{
	tmp_parent_remove(); /* best effort, then die of the signal */
	signal(sig, SIG_DFL);
	raise(sig);
}

static const char *tmp_parent_get(void)
{
	GError *gerr = NULL;
	char msg[256];

	if (tmp_parent && getpid() == tmp_parent_pid)
		return tmp_parent;
	tmp_parent = g_dir_make_tmp("simfs-test-XXXXXX", &gerr);
	if (!tmp_parent) {
		g_strlcpy(msg, gerr->message, sizeof(msg));
		g_error_free(gerr);
		fail_msg("cannot make a temporary directory: %s", msg);
	}
	if (!tmp_parent_pid) {
		atexit(tmp_parent_remove);
		signal(SIGTERM, tmp_parent_signal);
		signal(SIGINT, tmp_parent_signal);
		signal(SIGHUP, tmp_parent_signal);
	}
	tmp_parent_pid = getpid();
	return tmp_parent;
}

/* A fresh private directory under $TMPDIR; fails the test if impossible. */
char *sfs_test_tmpdir(void)
{
	char *dir = g_build_filename(tmp_parent_get(), "dXXXXXX", NULL);

	if (!g_mkdtemp(dir))
		fail_msg("cannot make a temporary directory in %s: %s",
			 tmp_parent, g_strerror(errno));
	return dir;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	remove(path); /* best effort: keep going */
	return 0;
}

/* Remove dir and everything under it (not following symlinks). */
void sfs_test_rmtree(const char *dir)
{
	if (!dir || !dir[0] || !g_path_is_absolute(dir) ||
	    strcmp(dir, "/") == 0)
		return;
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* The mke2fs type SIMFS_TEST_MKFS asks for ("ext4", "ext3"), or NULL for
 * simfs mkfs; any other value fails the test. */
static const char *mke2fs_type(void)
{
	const char *v = getenv("SIMFS_TEST_MKFS");

	if (!v || !v[0] || strcmp(v, "simfs") == 0)
		return NULL;
	if (strcmp(v, "mke2fs-ext4") == 0 || strcmp(v, "mke2fs-ext3") == 0)
		return v + strlen("mke2fs-");
	fail_msg("SIMFS_TEST_MKFS must be simfs, mke2fs-ext4 or mke2fs-ext3, "
		 "not '%s'",
		 v);
	return NULL;
}

bool sfs_test_simfs_mkfs(void)
{
	return mke2fs_type() == NULL;
}

struct CMUnitTest *sfs_test_select(const struct CMUnitTest *tests, size_t *n,
				   const char *const *only_simfs)
{
	struct CMUnitTest *run = g_new0(struct CMUnitTest, *n + 1);
	size_t kept = 0;

	for (size_t i = 0; i < *n; i++) {
		const char *why = NULL;

		for (const char *const *o = only_simfs;
		     !sfs_test_simfs_mkfs() && o[0]; o += 2)
			if (strcmp(o[0], tests[i].name) == 0)
				why = o[1];
		if (why)
			printf("# %s: not on %s images: %s\n", tests[i].name,
			       getenv("SIMFS_TEST_MKFS"), why);
		else
			run[kept++] = tests[i];
	}
	*n = kept;
	return run;
}

int sfs_test_mke2fs(const char *path, uint64_t size_bytes, uint32_t bs,
		    const char *type, const char *ext_opts)
{
	char bsarg[16], size[32];
	char *eopts = g_strdup_printf(
	    "hash_seed=5eed5eed-0000-4000-8000-0000000000d1%s%s",
	    ext_opts ? "," : "", ext_opts ? ext_opts : "");
	gchar *argv[] = {
	    "mke2fs", "-F",	    "-q",
	    "-t",     (char *)type, "-b",
	    bsarg,    "-U",	    "5eed5eed-0000-4000-8000-00000000f00d",
	    "-E",     eopts,	    (char *)path,
	    size,     NULL};
	char **envp = g_environ_setenv(g_get_environ(), "LC_ALL", "C", TRUE);
	char *out = NULL, *errs = NULL;
	gint status = -1;
	int rc = 0;

	g_snprintf(bsarg, sizeof(bsarg), "%u", bs);
	g_snprintf(size, sizeof(size), "%" G_GUINT64_FORMAT "k",
		   size_bytes / 1024);
	envp =
	    g_environ_setenv(envp, "E2FSPROGS_FAKE_TIME", "1700000000", TRUE);
	/* its stdout ("Creating regular file") kept off the TAP stream */
	if (!g_spawn_sync(NULL, argv, envp, G_SPAWN_SEARCH_PATH, NULL, NULL,
			  &out, &errs, &status, NULL) ||
	    !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		print_error("sfs_test_mke2fs %s: mke2fs -t %s: %s\n", path,
			    type, errs ? errs : "(cannot run)");
		rc = -EIO;
	}
	g_free(out);
	g_free(errs);
	g_free(eopts);
	g_strfreev(envp);
	return rc;
}

/* Sparse image of size_bytes formatted by simfs mkfs (or mke2fs, with
 * SIMFS_TEST_MKFS).  0 or -errno. */
int sfs_test_mkimage(const char *path, uint64_t size_bytes, uint32_t bs)
{
	struct sfs_mkfs_params p;
	struct sfs_bdev *bd;
	const char *type = mke2fs_type();
	char *err = NULL;
	int rc;

	rc = sfs_bdev_open_file(path, SFS_BDEV_CREATE | SFS_BDEV_EXCL,
				size_bytes, &bd);
	if (rc)
		return rc;
	if (type) {
		sfs_bdev_close(bd);
		return sfs_test_mke2fs(path, size_bytes, bs, type, NULL);
	}
	sfs_mkfs_defaults(&p);
	p.block_size = bs;
	p.seed = SFS_TEST_SEED;
	rc = sfs_mkfs(bd, &p, &err);
	if (rc)
		print_error("sfs_test_mkimage %s: %s\n", path,
			    err ? err : "(no message)");
	g_free(err);
	sfs_bdev_close(bd);
	return rc;
}

/* The engine on the image at path with options opts; fails the test. */
struct sfs_fs *sfs_test_open(const char *path, const char *opts)
{
	struct sfs_config cfg;
	struct sfs_bdev *bd;
	struct sfs_fs *fs = NULL;
	char *err = NULL;
	char msg[512];
	unsigned flags = SFS_BDEV_EXCL;
	int rc;

	sfs_config_defaults(&cfg);
	rc = sfs_config_parse(&cfg, opts ? opts : "", NULL, &err);
	if (rc) {
		g_snprintf(msg, sizeof(msg), "%s", err ? err : "?");
		g_free(err);
		fail_msg("bad test options '%s': %s", opts, msg);
	}
	if (cfg.direct)
		flags |= SFS_BDEV_DIRECT;
	if (cfg.ro)
		flags |= SFS_BDEV_RDONLY;
	rc = sfs_bdev_open_file(path, flags, 0, &bd);
	if (rc)
		fail_msg("cannot open %s: %s", path, g_strerror(-rc));
	rc = sfs_fs_open(bd, &cfg, &fs, &err);
	if (rc) {
		g_snprintf(msg, sizeof(msg), "%s", err ? err : "?");
		g_free(err);
		fail_msg("sfs_fs_open %s (%s): %s (%s)", path, opts, msg,
			 g_strerror(-rc));
	}
	return fs;
}

/* The e2fsck binary: PATH first, then the usual sbin directories. */
static char *find_e2fsck(void)
{
	static const char *const dirs[] = {"/usr/sbin/e2fsck", "/sbin/e2fsck",
					   "/usr/local/sbin/e2fsck"};
	char *p = g_find_program_in_path("e2fsck");

	for (size_t i = 0; !p && i < G_N_ELEMENTS(dirs); i++)
		if (g_file_test(dirs[i], G_FILE_TEST_IS_EXECUTABLE))
			p = g_strdup(dirs[i]);
	return p;
}

/* Is every line of e2fsck's output one a clean run prints (or, shape_ok,
 * the note that an extent tree could be narrower or shorter)? */
static bool fsck_output_clean(const char *text, bool shape_ok)
{
	GRegex *ok = g_regex_new(
	    "^(e2fsck [0-9][^ ]* \\(.*\\)"
	    "|Pass [1-5]: [A-Za-z ,]+"
	    "|.+: [0-9]+/[0-9]+ files \\([0-9.]+% non-contiguous\\), "
	    "[0-9]+/[0-9]+ blocks"
	    "|)$",
	    0, 0, NULL);
	GRegex *shape = g_regex_new(
	    "^Inode [0-9]+ extent tree \\(at level [0-9]+\\) could be "
	    "(narrower|shorter)\\.  Optimize\\? no$",
	    0, 0, NULL);
	char **lines = g_strsplit(text, "\n", -1);
	bool clean = true;

	for (char **l = lines; *l; l++) {
		if (!g_regex_match(ok, *l, 0, NULL) &&
		    !(shape_ok && g_regex_match(shape, *l, 0, NULL))) {
			clean = false;
			break;
		}
	}
	g_strfreev(lines);
	g_regex_unref(ok);
	g_regex_unref(shape);
	return clean;
}

/* Add an internal journal (as simfs mkfs -j); mke2fs's images
 * (SIMFS_TEST_MKFS) keep the one mke2fs made. */
void sfs_test_add_journal(const char *path, uint32_t blocks)
{
	struct sfs_bdev *bd;
	struct sfs_dsuper sb;
	char *err = NULL;
	int rc;

	if (!sfs_test_simfs_mkfs()) {
		FILE *f = fopen(path, "rb");

		assert_non_null(f);
		assert_int_equal(fseek(f, SFS_SUPER_OFFSET, SEEK_SET), 0);
		assert_int_equal(fread(&sb, sizeof(sb), 1, f), 1);
		fclose(f);
		if (sfs_le32(sb.s_feature_compat) &
		    SFS_FEATURE_COMPAT_HAS_JOURNAL)
			return;
	}
	assert_int_equal(sfs_bdev_open_file(path, 0, 0, &bd), 0);
	rc = sfs_jbd2_add_internal(bd, blocks, SFS_JBD2_PLACE_FIRST_FREE, &err);
	if (rc)
		print_error("adding a journal to %s: %s\n", path,
			    err ? err : "?");
	g_free(err);
	sfs_bdev_close(bd);
	assert_int_equal(rc, 0);
}

/* e2fsck -fn path: true only for exit 0 and a clean output. */
static bool fsck_run(const char *path, char **output, bool shape_ok)
{
	char *prog = find_e2fsck();
	char *argv[] = {prog, "-fn", (char *)path, NULL};
	char **envp = g_get_environ();
	char *out = NULL, *errtext = NULL;
	GError *gerr = NULL;
	int status = -1;
	bool clean = false;

	if (output)
		*output = NULL;
	if (!prog) {
		if (output)
			*output = g_strdup("e2fsck not found");
		g_strfreev(envp);
		return false;
	}
	envp = g_environ_setenv(envp, "LC_ALL", "C", TRUE);
	envp = g_environ_setenv(envp, "E2FSCK_CONFIG", "/dev/null", TRUE);
	if (!g_spawn_sync(NULL, argv, envp, G_SPAWN_DEFAULT, NULL, NULL, &out,
			  &errtext, &status, &gerr)) {
		if (output)
			*output = g_strdup_printf("cannot run %s: %s", prog,
						  gerr->message);
		g_error_free(gerr);
		goto out;
	}
	clean = WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		fsck_output_clean(out, shape_ok) &&
		fsck_output_clean(errtext, shape_ok);
	if (output)
		*output = g_strconcat(errtext, out, NULL);
out:
	g_free(out);
	g_free(errtext);
	g_strfreev(envp);
	g_free(prog);
	return clean;
}

bool sfs_test_fsck_clean(const char *path, char **output)
{
	return fsck_run(path, output, false);
}

bool sfs_test_fsck_clean_shape(const char *path, char **output)
{
	return fsck_run(path, output, true);
}

/* ---- the common fixture: a temp image with a filesystem open on it ---- */

struct sfs_tfs *sfs_tfs_alloc(void)
{
	struct sfs_tfs *t = g_new0(struct sfs_tfs, 1);

	t->dir = sfs_test_tmpdir();
	t->img = g_build_filename(t->dir, "img", NULL);
	return t;
}

struct sfs_tfs *sfs_tfs_new(uint32_t bs, uint64_t size_bytes, const char *opts)
{
	struct sfs_tfs *t = sfs_tfs_alloc();

	assert_int_equal(sfs_test_mkimage(t->img, size_bytes, bs), 0);
	t->fs = sfs_test_open(t->img, opts ? opts : "");
	assert_non_null(t->fs);
	return t;
}

void sfs_tfs_close(struct sfs_tfs *t)
{
	if (t->fs)
		assert_int_equal(sfs_fs_close(t->fs), 0);
	t->fs = NULL;
}

void sfs_tfs_assert_clean(struct sfs_tfs *t)
{
	char *out = NULL;
	bool ok;

	sfs_tfs_close(t);
	ok = sfs_test_fsck_clean(t->img, &out);
	if (!ok)
		print_message("e2fsck -fn %s:\n%s\n", t->img, out ? out : "");
	g_free(out);
	assert_true(ok);
}

void sfs_tfs_reopen(struct sfs_tfs *t)
{
	sfs_tfs_close(t);
	t->fs = sfs_test_open(t->img, "");
	assert_non_null(t->fs);
}

void sfs_tfs_cycle(struct sfs_tfs *t)
{
	sfs_tfs_assert_clean(t);
	t->fs = sfs_test_open(t->img, "");
	assert_non_null(t->fs);
}

void sfs_tfs_free(struct sfs_tfs *t)
{
	if (t->fs)
		sfs_fs_close(t->fs);
	sfs_test_rmtree(t->dir);
	g_free(t->img);
	g_free(t->dir);
	g_free(t);
}

int sfs_tfs_setup(void **state, uint32_t bs, uint64_t size_bytes,
		  const char *opts)
{
	*state = sfs_tfs_new(bs, size_bytes, opts);
	return 0;
}

int sfs_tfs_teardown(void **state)
{
	sfs_tfs_assert_clean(*state);
	sfs_tfs_free(*state);
	return 0;
}

int sfs_tfs_setup_alloc(void **state)
{
	*state = sfs_tfs_alloc();
	return 0;
}

int sfs_tfs_teardown_free(void **state)
{
	sfs_tfs_free(*state);
	return 0;
}

char *sfs_test_which(const char *name)
{
	static const char *const dirs[] = {"/usr/sbin", "/sbin", "/usr/bin",
					   "/bin"};
	char *p = g_find_program_in_path(name);

	for (size_t i = 0; !p && i < G_N_ELEMENTS(dirs); i++) {
		p = g_build_filename(dirs[i], name, NULL);
		if (!g_file_test(p, G_FILE_TEST_IS_EXECUTABLE))
			g_clear_pointer(&p, g_free);
	}
	return p;
}

char *sfs_test_tmp_file(const char *name, const char *text)
{
	char *dir = sfs_test_tmpdir();
	char *path = g_build_filename(dir, name, NULL);

	assert_true(g_file_set_contents(path, text, -1, NULL));
	g_free(dir);
	return path;
}

void sfs_test_rm_tmp_file(char *path)
{
	char *dir = g_path_get_dirname(path);

	sfs_test_rmtree(dir);
	g_free(dir);
	g_free(path);
}

void sfs_test_spec_ok(const char *spec, int rc, char *err)
{
	if (rc)
		print_error("%s: %s\n", spec, err ? err : "?");
	assert_int_equal(rc, 0);
	g_free(err);
}

struct sfs_workload *sfs_test_workload(const char *spec)
{
	struct sfs_workload *w = NULL;
	char *err = NULL;
	int rc = sfs_workload_new(spec, &w, &err);

	sfs_test_spec_ok(spec, rc, err);
	return w;
}

int sfs_test_next(struct sfs_workload *w, unsigned c, sfs_ns_t now,
		  struct sfs_wop *op)
{
	char *err = NULL;
	int rc = sfs_workload_next(w, c, now, op, &err);

	if (rc < 0)
		print_error("next: %s\n", err ? err : "?");
	assert_true(rc >= 0);
	g_free(err);
	return rc;
}

sfs_ino_t sfs_test_mkfile(struct sfs_fs *fs, sfs_ino_t dir, const char *name)
{
	sfs_ino_t ino = sfs_test_mknod(fs, dir, name);

	assert_int_equal(sfs_open(fs, ino, O_RDWR), 0);
	return ino;
}

sfs_ino_t sfs_test_mknod(struct sfs_fs *fs, sfs_ino_t dir, const char *name)
{
	struct sfs_attr a;

	assert_int_equal(
	    sfs_mknod(fs, dir, name, SFS_S_IFREG | 0644, 0, 0, 0, &a), 0);
	return a.ino;
}

sfs_ino_t sfs_test_mkdir(struct sfs_fs *fs, sfs_ino_t dir, const char *name)
{
	struct sfs_attr a;

	assert_int_equal(sfs_mkdir(fs, dir, name, 0755, 0, 0, &a), 0);
	return a.ino;
}

void sfs_test_fill(struct sfs_fs *fs, sfs_ino_t ino, uint64_t off, size_t n,
		   uint8_t fill)
{
	uint8_t *buf = g_malloc(n);
	size_t w = 0;

	memset(buf, fill, n);
	assert_int_equal(sfs_write(fs, ino, off, buf, n, &w), 0);
	assert_int_equal(w, n);
	g_free(buf);
}

uint64_t sfs_test_free_blocks(struct sfs_fs *fs)
{
	uint64_t n;

	sfs_lock(fs);
	n = sfs_free_blocks(fs);
	sfs_unlock(fs);
	return n;
}

char *sfs_test_run(char **argv)
{
	char *out = NULL, *errs = NULL;
	gint status = -1;

	if (!g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
			  &out, &errs, &status, NULL))
		fail_msg("cannot run %s", argv[0]);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("%s exited %d: %s", argv[0], status, errs);
	g_free(errs);
	return out;
}
