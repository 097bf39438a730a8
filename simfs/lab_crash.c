/*
 * lab_crash.c - `simfs lab crash`: a short script of creates, writes,
 * renames and fsyncs, the power cut after the N-th device request (the
 * "doom counter" of OS/161's crash checker); predict which request was
 * the last to land, what journal recovery replays (committed transactions,
 * blocks written home) and what each file holds afterwards, under each
 * data= mode, and at the top level what e2fsck says of ext2 without a
 * journal.
 *
 * The scenario is drawn from the seed; the answers come from running it
 * through the engine, as `simfs crash` does (simfs/crash.c): a fresh image
 * in memory, the setup part synced, then the script over a crash device
 * (crashdev.h) armed to cut the power after request N; the crashed image
 * is recovered the way a mount recovers it (sfs_jlog_mount_recover, then
 * sfs_fs_open) and read back through the engine.  Every data block
 * written names the write it came from (a tag at the head of the block),
 * so the lab tells, for each block of each file: zeros, which write, or
 * anything else.
 *
 * Time: clock=virtual on the ideal disk, so virtual time never moves and
 * no commit timer fires: transactions commit at fsync, sync, unmount, or
 * when the journal is full.  Same seed, same requests, same answers.
 *
 * Invariant: the scenario depends only on the seed and level, never on
 * what the engine returns, so the dry run and every mode's run issue the
 * same operations (invariant 1 of crash.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "crash.h"
#include "crashdev.h"
#include "format.h"
#include "fs.h"
#include "lab.h"
#include "lab_engine.h"
#include "mkfs.h"
#include "models/journal/jbd2.h"

#define CR_BS 4096u
#define CR_DEV_BYTES (16ull << 20)
#define CR_JOURNAL_BLOCKS 1024u
#define CR_MAX_OPS 16
#define CR_MAX_BLK 4 /* blocks per write */
#define CR_OPTS "clock=virtual,device=ideal,mem=1M"
#define CR_MAGIC "simfs-lab-crash"
#define CR_MKFS_TIME 1700000000u

enum crop_kind { CR_CREATE, CR_WRITE, CR_FSYNC, CR_RENAME, CR_UNLINK, CR_SYNC,
		 CR_UMOUNT };

struct crop {
	enum crop_kind kind;
	char name[8], name2[8];
	uint32_t blk, n; /* write: file blocks [blk, blk + n) */
	unsigned wid;	 /* write: its number (w1, w2, ...) */
	bool setup;	 /* before arming */
};

struct crash_scn {
	struct crop op[CR_MAX_OPS];
	unsigned n, n_setup;
	uint64_t point; /* power cut after this request of the script */
};

/* What one mode's run saw. */
struct crash_mode_out {
	const char *mode;
	uint64_t total;		     /* requests of the script (dry run) */
	uint64_t start[CR_MAX_OPS];  /* requests before the op */
	uint64_t end[CR_MAX_OPS];    /* after it */
	unsigned last_op;	     /* op (1-based, script) that issued the
					cut request, 0: none */
	bool crashed;		     /* the cut came before the end */
	struct sfs_jrecover_info rec; /* journaled modes */
	GString *txns;		     /* the log as recovery found it */
	GString *contents;	     /* "a: w1 w2 b: 0" */
	GString *log;		     /* requests after arming, with fates */
	int fsck_exit;		     /* ext2: e2fsck -fn's exit status */
	bool fsck_clean;
	uint64_t writes_dropped;
};

/* ---- data blocks that name their write ---- */

static void cr_fill(uint8_t *b, unsigned wid, uint32_t idx)
{
	memset(b, 0, CR_BS);
	g_snprintf((char *)b, CR_BS, CR_MAGIC " w%u block %u", wid, idx);
	for (uint32_t i = 64; i < CR_BS; i++)
		b[i] = (uint8_t)(wid * 31 + idx * 7 + i);
}

/* "0", "w3" or "?" for a block read back. */
static void cr_classify(const uint8_t *b, uint32_t idx, GString *out)
{
	unsigned wid;
	uint32_t bidx;
	uint8_t want[CR_BS];
	bool zero = true;

	for (uint32_t i = 0; i < CR_BS && zero; i++)
		zero = b[i] == 0;
	if (zero) {
		g_string_append(out, " 0");
		return;
	}
	if (sscanf((const char *)b, CR_MAGIC " w%u block %u", &wid, &bidx) ==
		2 &&
	    bidx == idx) {
		cr_fill(want, wid, bidx);
		if (memcmp(want, b, CR_BS) == 0) {
			g_string_append_printf(out, " w%u", wid);
			return;
		}
	}
	g_string_append(out, " ?");
}

/* ---- the scenario ---- */

struct cr_level {
	const char *const *modes; /* NULL-terminated */
	unsigned n_script;	  /* ops in the script (before unmount) */
	bool renames;		  /* rename-over and unlink */
};

static const char *const cr_modes1[] = {"ordered", NULL};
static const char *const cr_modes2[] = {"writeback", "ordered", "journal",
					NULL};
static const char *const cr_modes3[] = {"none", "writeback", "ordered",
					"journal", NULL};

static const struct cr_level cr_levels[] = {
    {cr_modes1, 4, false},
    {cr_modes2, 6, false},
    {cr_modes3, 8, true},
};

static const char *const cr_level_help[] = {
    "data=ordered, four operations: writes, a create, an fsync",
    "the same kind of script under writeback, ordered and journal",
    ("eight operations with a rename-over (and maybe an unlink); ext2 "
     "(e2fsck's view) beside the three modes"),
};

struct cr_file {
	char name[8];
	uint32_t nblk;
	bool live;
};

static unsigned cr_live(const struct cr_file *f, unsigned nf, unsigned *idx)
{
	unsigned n = 0;

	for (unsigned i = 0; i < nf; i++)
		if (f[i].live)
			idx[n++] = i;
	return n;
}

static void cr_add(struct crash_scn *sc, struct crop op)
{
	if (sc->n < CR_MAX_OPS)
		sc->op[sc->n++] = op;
}

static void cr_draw(const struct cr_level *lv, GRand *rnd, struct crash_scn *sc)
{
	struct cr_file f[8] = {{"a", 0, false}};
	unsigned nf = 0, wid = 0, live[8], nl;
	bool fsynced = false, renamed = false;

	memset(sc, 0, sizeof(*sc));
	/* setup: one or two files with data */
	unsigned n_files = lv->renames ? 2 : 1 + (unsigned)g_rand_int_range(
						     rnd, 0, 2);

	for (unsigned i = 0; i < n_files; i++) {
		struct crop c = {.kind = CR_CREATE, .setup = true};
		struct crop w = {.kind = CR_WRITE, .setup = true};

		g_snprintf(f[nf].name, sizeof(f[nf].name), "%c", 'a' + nf);
		f[nf].live = true;
		g_strlcpy(c.name, f[nf].name, sizeof(c.name));
		cr_add(sc, c);
		g_strlcpy(w.name, f[nf].name, sizeof(w.name));
		w.n = (uint32_t)g_rand_int_range(rnd, 1, CR_MAX_BLK);
		w.wid = ++wid;
		f[nf].nblk = w.n;
		cr_add(sc, w);
		nf++;
	}
	sc->n_setup = sc->n;
	while (sc->n - sc->n_setup < lv->n_script) {
		unsigned left = lv->n_script - (sc->n - sc->n_setup);
		int r = g_rand_int_range(rnd, 0, 100);
		struct crop op = {.kind = CR_WRITE};
		struct cr_file *t;

		nl = cr_live(f, nf, live);
		t = &f[live[g_rand_int_range(rnd, 0, (gint32)nl)]];
		if (left == 1 && !fsynced)
			r = 60; /* end with an fsync if there was none */
		else if (r >= 50 && r < 75 && sc->n > sc->n_setup &&
			 sc->op[sc->n - 1].kind == CR_FSYNC)
			r = 30; /* not two fsyncs in a row: a write */
		else if (left <= 3 && lv->renames && !renamed && nl >= 2)
			r = 80; /* a rename-over, at least one */
		if (r < 15 && nf < G_N_ELEMENTS(f) && left >= 2) {
			/* create and write a new file */
			struct crop c = {.kind = CR_CREATE};

			g_snprintf(f[nf].name, sizeof(f[nf].name), "%c",
				   'a' + nf);
			f[nf].live = true;
			g_strlcpy(c.name, f[nf].name, sizeof(c.name));
			cr_add(sc, c);
			t = &f[nf++];
			op.blk = 0;
		} else if (r < 50) {
			/* append or overwrite */
			op.blk = g_rand_int_range(rnd, 0, 2)
				     ? t->nblk
				     : (uint32_t)g_rand_int_range(
					   rnd, 0, (gint32)t->nblk + 1);
		} else if (r < 75) {
			op.kind = CR_FSYNC;
			fsynced = true;
		} else if (r < 90 && lv->renames && nl >= 2) {
			/* rename one file over another */
			struct cr_file *u;

			do
				u = &f[live[g_rand_int_range(rnd, 0,
							     (gint32)nl)]];
			while (u == t);
			op.kind = CR_RENAME;
			renamed = true;
			g_strlcpy(op.name, t->name, sizeof(op.name));
			g_strlcpy(op.name2, u->name, sizeof(op.name2));
			/* t keeps its inode and takes u's name; u is gone */
			u->live = false;
			g_strlcpy(t->name, op.name2, sizeof(t->name));
			cr_add(sc, op);
			continue;
		} else if (r < 95 && lv->renames && nl >= 2) {
			op.kind = CR_UNLINK;
			t->live = false;
		} else if (r < 90) {
			op.kind = CR_FSYNC;
			fsynced = true;
		} else {
			op.kind = CR_SYNC;
		}
		g_strlcpy(op.name, t->name, sizeof(op.name));
		if (op.kind == CR_WRITE) {
			op.n = (uint32_t)g_rand_int_range(rnd, 1,
							  CR_MAX_BLK + 1);
			op.wid = ++wid;
			t->nblk = MAX(t->nblk, op.blk + op.n);
		}
		cr_add(sc, op);
	}
	cr_add(sc, (struct crop){.kind = CR_UMOUNT});
}

static void cr_desc(const struct crop *op, char *buf, size_t len)
{
	switch (op->kind) {
	case CR_CREATE:
		g_snprintf(buf, len, "create %s", op->name);
		break;
	case CR_WRITE:
		if (op->n == 1)
			g_snprintf(buf, len, "write %s block %u (w%u)",
				   op->name, op->blk, op->wid);
		else
			g_snprintf(buf, len, "write %s blocks %u-%u (w%u)",
				   op->name, op->blk, op->blk + op->n - 1,
				   op->wid);
		break;
	case CR_FSYNC:
		g_snprintf(buf, len, "fsync %s", op->name);
		break;
	case CR_RENAME:
		g_snprintf(buf, len, "rename %s over %s", op->name, op->name2);
		break;
	case CR_UNLINK:
		g_snprintf(buf, len, "rm %s", op->name);
		break;
	case CR_SYNC:
		g_snprintf(buf, len, "sync");
		break;
	case CR_UMOUNT:
		g_snprintf(buf, len, "unmount");
		break;
	}
}

/* ---- running it ---- */

static int cr_lookup(struct sfs_fs *fs, const char *name, sfs_ino_t *ino)
{
	struct sfs_attr at;
	int rc = sfs_lookup(fs, SFS_ROOT_INO, name, &at);

	*ino = at.ino;
	return rc;
}

/* One op on the engine: 0 or -errno. */
static int cr_issue(struct sfs_fs **fsp, const struct crop *op, uint8_t *buf)
{
	struct sfs_fs *fs = *fsp;
	struct sfs_attr at;
	sfs_ino_t ino = 0;
	size_t done;
	int rc;

	switch (op->kind) {
	case CR_CREATE:
		return sfs_mknod(fs, SFS_ROOT_INO, op->name, SFS_S_IFREG | 0644,
				 0, 0, 0, &at);
	case CR_WRITE:
		rc = cr_lookup(fs, op->name, &ino);
		if (rc)
			return rc;
		for (uint32_t i = 0; i < op->n; i++)
			cr_fill(buf + (size_t)i * CR_BS, op->wid, op->blk + i);
		return sfs_write(fs, ino, (uint64_t)op->blk * CR_BS, buf,
				 (size_t)op->n * CR_BS, &done);
	case CR_FSYNC:
		rc = cr_lookup(fs, op->name, &ino);
		return rc ? rc : sfs_fsync(fs, ino, false);
	case CR_RENAME:
		return sfs_rename(fs, SFS_ROOT_INO, op->name, SFS_ROOT_INO,
				  op->name2, 0);
	case CR_UNLINK:
		return sfs_unlink(fs, SFS_ROOT_INO, op->name);
	case CR_SYNC:
		return sfs_fs_sync(fs);
	case CR_UMOUNT:
		*fsp = NULL;
		return sfs_fs_close(fs);
	}
	return -EINVAL;
}

static int cr_open(struct sfs_bdev *bd, const char *mode, struct sfs_fs **fs,
		   char **err)
{
	struct sfs_config cfg;
	char *opts = g_strdup_printf("%s,data=%s", CR_OPTS, mode);
	int rc;

	sfs_config_defaults(&cfg);
	rc = sfs_config_parse(&cfg, opts, NULL, err);
	g_free(opts);
	if (rc)
		return rc;
	return sfs_fs_open(bd, &cfg, fs, err);
}

/* A fresh image on bd: ext2, or ext3 with a journal. */
static int cr_mkfs(struct sfs_bdev *bd, bool journal, char **err)
{
	struct sfs_mkfs_params p;
	int rc;

	sfs_mkfs_defaults(&p);
	p.seed = 1;
	p.time = CR_MKFS_TIME;
	rc = sfs_mkfs(bd, &p, err);
	if (rc == 0 && journal)
		rc = sfs_jbd2_add_internal(bd, CR_JOURNAL_BLOCKS,
					   SFS_JBD2_PLACE_MIDDLE, err);
	return rc;
}

struct cr_walk {
	GString *g;
};

static int cr_walk_cb(void *ctx, const struct sfs_jtxn_info *t)
{
	struct cr_walk *w = ctx;

	g_string_append_printf(w->g, "%stransaction %u: %u blocks logged, %s",
			       w->g->len ? "; " : "", t->tid, t->n_logged,
			       t->committed ? "committed" : "no commit block");
	return 0;
}

static int cr_collect(void *ctx, const char *name, size_t len, sfs_ino_t ino,
		      uint8_t ftype, uint64_t next_off)
{
	GPtrArray *names = ctx;

	(void)ino;
	(void)ftype;
	(void)next_off;
	if (!(len == 1 && name[0] == '.') &&
	    !(len == 2 && name[0] == '.' && name[1] == '.'))
		g_ptr_array_add(names, g_strndup(name, len));
	return 0;
}

static gint cr_cmp_str(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Append " shown: w1 0 ..." for the regular file name in dir, if any. */
static int cr_read_file(struct sfs_fs *fs, sfs_ino_t dir, const char *name,
			const char *shown, uint8_t *buf, GString *out)
{
	struct sfs_attr at;
	int rc = 0;

	if (sfs_lookup(fs, dir, name, &at) != 0 ||
	    (at.mode & SFS_S_IFMT) != SFS_S_IFREG)
		return 0;
	g_string_append_printf(out, "%s%s:", out->len ? " " : "", shown);
	for (uint64_t b = 0; b * CR_BS < at.size && !rc; b++) {
		size_t got = 0;

		memset(buf, 0, CR_BS);
		rc = sfs_read(fs, at.ino, b * CR_BS, CR_BS, buf, &got);
		if (!rc)
			cr_classify(buf, (uint32_t)b, out);
	}
	if (at.size == 0)
		g_string_append(out, " empty");
	return rc;
}

/* Recover bd as a mount would, then read every file back. */
static int cr_recover(struct sfs_bdev *bd, const char *mode,
		      struct crash_mode_out *out, char **err)
{
	bool journaled = strcmp(mode, "none") != 0;
	struct sfs_fs *fs;
	struct sfs_jlog *log;
	struct sfs_attr lf;
	uint8_t *buf = g_malloc(CR_BS);
	int rc;

	out->txns = g_string_new(NULL);
	out->contents = g_string_new(NULL);
	if (journaled) {
		struct cr_walk w = {out->txns};

		rc = sfs_jlog_open_dev(bd, NULL, &log, err);
		if (rc)
			goto out;
		rc = sfs_jlog_walk(log, 0, cr_walk_cb, &w);
		sfs_jlog_close(log);
		if (rc)
			goto out;
		rc = sfs_jlog_mount_recover(bd, NULL, &out->rec, err);
		if (rc)
			goto out;
	}
	rc = cr_open(sfs_bdev_borrow_new(bd), journaled ? mode : "none", &fs,
		     err);
	if (rc)
		goto out;
	for (char c = 'a'; c <= 'h' && !rc; c++) {
		char name[2] = {c, 0};

		rc = cr_read_file(fs, SFS_ROOT_INO, name, name, buf,
				  out->contents);
	}
	/* what e2fsck found without a name */
	if (!rc && sfs_lookup(fs, SFS_ROOT_INO, "lost+found", &lf) == 0) {
		GPtrArray *names = g_ptr_array_new_with_free_func(g_free);

		rc = sfs_readdir(fs, lf.ino, 0, cr_collect, names);
		g_ptr_array_sort(names, cr_cmp_str);
		for (guint i = 0; i < names->len && !rc; i++) {
			char *shown = g_strconcat(
			    "lost+found/", (char *)names->pdata[i], NULL);

			rc = cr_read_file(fs, lf.ino, names->pdata[i], shown,
					  buf, out->contents);
			g_free(shown);
		}
		g_ptr_array_free(names, TRUE);
	}
	if (!out->contents->len)
		g_string_append(out->contents, "none");
	if (rc) {
		*err = g_strdup_printf("crash lab: reading back: %s",
				       g_strerror(-rc));
		sfs_fs_abort(fs);
	} else {
		rc = sfs_fs_close(fs);
	}
out:
	g_free(buf);
	return rc;
}

/* The e2fsck program, or NULL (g_free it). */
static char *cr_e2fsck(void)
{
	static const char *const dirs[] = {"/usr/sbin/e2fsck", "/sbin/e2fsck"};
	char *prog = g_find_program_in_path("e2fsck");

	for (size_t i = 0; !prog && i < G_N_ELEMENTS(dirs); i++)
		if (g_file_test(dirs[i], G_FILE_TEST_IS_EXECUTABLE))
			prog = g_strdup(dirs[i]);
	return prog;
}

/* Run e2fsck with flags on path: its exit status and whether it printed
 * a problem left unfixed ("? no").  -EIO if it could not run. */
static int cr_run_fsck(const char *prog, const char *flags, const char *path,
		       int *exit_out, bool *unfixed_out)
{
	char *argv[] = {(char *)prog, (char *)flags, (char *)path, NULL};
	char **envp = g_get_environ();
	char *text = NULL, *etext = NULL;
	int status = -1, rc = 0;

	envp = g_environ_setenv(envp, "LC_ALL", "C", TRUE);
	envp = g_environ_setenv(envp, "E2FSCK_CONFIG", "/dev/null", TRUE);
	if (!g_spawn_sync(NULL, argv, envp, G_SPAWN_DEFAULT, NULL, NULL, &text,
			  &etext, &status, NULL) ||
	    !WIFEXITED(status))
		rc = -EIO;
	else {
		*exit_out = WEXITSTATUS(status);
		*unfixed_out = strstr(text ? text : "", "? no\n") != NULL;
	}
	g_strfreev(envp);
	g_free(text);
	g_free(etext);
	return rc;
}

/*
 * ext2's recovery: e2fsck -fn on a copy of bd (the verdict), then
 * e2fsck -fy on it and the repaired bytes back into bd.  -ENOENT without
 * e2fsck, -EIO.
 */
static int cr_fsck(struct sfs_bdev *bd, struct crash_mode_out *out,
		   char **err)
{
	GBytes *img = sfs_lab_memdev_snapshot(bd);
	char *path = NULL, *prog = cr_e2fsck(), *data = NULL;
	gsize n, len = 0;
	const void *p = g_bytes_get_data(img, &n);
	bool unfixed = false;
	int fd, rc = 0, yexit = 0;

	if (!prog) {
		*err = g_strdup("crash lab: this level asks e2fsck, which is "
				"not installed (e2fsprogs)");
		rc = -ENOENT;
		goto out;
	}
	fd = g_file_open_tmp("simfs-lab-XXXXXX.img", &path, NULL);
	if (fd >= 0)
		close(fd);
	if (fd < 0 || !g_file_set_contents(path, p, (gssize)n, NULL)) {
		*err = g_strdup("crash lab: cannot write a temporary image");
		rc = -EIO;
		goto out;
	}
	rc = cr_run_fsck(prog, "-fn", path, &out->fsck_exit, &unfixed);
	out->fsck_clean = !rc && out->fsck_exit == 0 && !unfixed;
	if (!rc && !out->fsck_clean)
		rc = cr_run_fsck(prog, "-fy", path, &yexit, &unfixed);
	if (!rc && (yexit & ~3)) {
		*err = g_strdup_printf("crash lab: e2fsck -fy could not repair "
				       "the image (exit %d)",
				       yexit);
		rc = -EIO;
	}
	if (!rc && (!g_file_get_contents(path, &data, &len, NULL) ||
		    len != n)) {
		*err = g_strdup("crash lab: cannot read the repaired image");
		rc = -EIO;
	}
	if (!rc) {
		GBytes *fixed = g_bytes_new_take(data, len);

		data = NULL;
		rc = sfs_lab_memdev_restore(bd, fixed);
		g_bytes_unref(fixed);
	} else if (!*err) {
		*err = g_strdup("crash lab: e2fsck did not run");
	}
out:
	if (path)
		unlink(path);
	g_free(path);
	g_free(prog);
	g_free(data);
	g_bytes_unref(img);
	return rc;
}

static void cr_log(GString *g, struct sfs_bdev *cd,
		   const struct crash_scn *sc, const struct crash_mode_out *o)
{
	size_t n;
	const struct sfs_crashdev_rec *log = sfs_crashdev_log(cd, &n);

	for (unsigned k = sc->n_setup; k < sc->n; k++) {
		char d[64];

		cr_desc(&sc->op[k], d, sizeof(d));
		g_string_append_printf(g, "  op %u: %s%s\n", k - sc->n_setup + 1,
				       d,
				       o->end[k] > o->start[k] ? ""
				       : o->crashed && o->start[k] >= sc->point
					   ? " (not run: the power is off)"
					   : " (no request)");
		for (uint64_t i = o->start[k]; i < o->end[k] && i < n; i++)
			g_string_append_printf(
			    g, "    %3llu %-5s %-8s block %5llu +%-3llu %s%s\n",
			    (unsigned long long)i + 1,
			    sfs_io_op_name(log[i].req.op),
			    sfs_io_cat_name(log[i].req.cat),
			    (unsigned long long)(log[i].req.off_bytes / CR_BS),
			    (unsigned long long)((log[i].req.len_bytes +
						  CR_BS - 1) /
						 CR_BS),
			    sfs_crash_fate_name(log[i].fate),
			    i + 1 == sc->point ? "   <- power cut" : "");
	}
}

/*
 * Run the scenario under mode on a fresh image: dry (point UINT64_MAX:
 * count only) or armed, then recover and read back.  0 or -errno + *err.
 */
static int cr_run(const struct crash_scn *sc, const char *mode, bool dry,
		  bool fsck, struct crash_mode_out *out, char **err)
{
	bool journaled = strcmp(mode, "none") != 0;
	struct sfs_bdev *bd = sfs_lab_memdev_new(CR_DEV_BYTES, true);
	struct sfs_bdev *cd;
	struct sfs_crashdev_counters ctr;
	struct sfs_fs *fs = NULL;
	uint8_t *buf = g_malloc((size_t)CR_MAX_BLK * CR_BS);
	int rc;

	memset(out, 0, sizeof(*out));
	out->mode = mode;
	rc = cr_mkfs(bd, journaled, err);
	if (rc)
		goto out_bd;
	cd = sfs_crashdev_new(sfs_bdev_borrow_new(bd));
	rc = cr_open(sfs_bdev_borrow_new(cd), mode, &fs, err);
	if (rc)
		goto out_cd;
	for (unsigned i = 0; i < sc->n_setup && !rc; i++)
		rc = cr_issue(&fs, &sc->op[i], buf);
	if (!rc)
		rc = sfs_fs_sync(fs);
	if (rc) {
		*err = g_strdup_printf("crash lab: setup failed: %s",
				       g_strerror(-rc));
		goto out_fs;
	}
	sfs_crashdev_set_logging(cd, !dry);
	sfs_crashdev_arm(cd, SFS_CRASH_CUT, dry ? UINT64_MAX : sc->point, 0);
	for (unsigned i = sc->n_setup; i < sc->n; i++) {
		out->start[i] = sfs_crashdev_seen(cd);
		if (!sfs_crashdev_crashed(cd)) {
			int orc = cr_issue(&fs, &sc->op[i], buf);

			if (orc && !sfs_crashdev_crashed(cd)) {
				char d[64];

				cr_desc(&sc->op[i], d, sizeof(d));
				*err = g_strdup_printf(
				    "crash lab: %s failed: %s", d,
				    g_strerror(-orc));
				rc = orc;
			}
		}
		out->end[i] = sfs_crashdev_seen(cd);
		if (!dry && !out->last_op && out->start[i] < sc->point &&
		    out->end[i] >= sc->point)
			out->last_op = i - sc->n_setup + 1;
		if (rc)
			break;
	}
	out->crashed = sfs_crashdev_crashed(cd);
out_fs:
	if (fs)
		sfs_fs_abort(fs);
	sfs_crashdev_crash_now(cd);
	sfs_crashdev_counters(cd, &ctr);
	out->total = out->end[sc->n - 1];
	out->writes_dropped = ctr.writes_dropped;
	if (!dry) {
		out->log = g_string_new(NULL);
		cr_log(out->log, cd, sc, out);
	}
out_cd:
	sfs_bdev_close(cd);
	if (!rc && !dry && fsck && !journaled)
		rc = cr_fsck(bd, out, err);
	if (!rc && !dry)
		rc = cr_recover(bd, mode, out, err);
out_bd:
	sfs_bdev_close(bd);
	g_free(buf);
	return rc;
}

static void cr_out_free(struct crash_mode_out *o)
{
	if (o->txns)
		g_string_free(o->txns, TRUE);
	if (o->contents)
		g_string_free(o->contents, TRUE);
	if (o->log)
		g_string_free(o->log, TRUE);
	memset(o, 0, sizeof(*o));
}

/* ---- the sheet ---- */

static void cr_scenario(GString *g, const struct cr_level *lv,
			const struct crash_scn *sc)
{
	char d[64];

	g_string_append_printf(
	    g,
	    "A 16 MiB filesystem with 4 KiB blocks and a 4 MiB journal "
	    "(ext3%s), opened in memory with %s: virtual time does not move "
	    "on the ideal disk, so no commit timer fires; a transaction "
	    "commits at fsync, sync or unmount (or when the journal fills).  "
	    "Each data block written names its write (w1, w2, ...).\n\n"
	    "Set up first, then synced to disk:\n",
	    strcmp(lv->modes[0], "none") ? ""
					 : "; ext2 without a journal for "
					   "data=none",
	    CR_OPTS);
	for (unsigned i = 0; i < sc->n_setup; i++) {
		cr_desc(&sc->op[i], d, sizeof(d));
		g_string_append_printf(g, "      %s\n", d);
	}
	g_string_append_printf(
	    g,
	    "\nThen this script runs.  The power goes out right after device "
	    "request N = %llu of the script (reads, writes and flushes all "
	    "count; request 1 is the script's first); nothing written after "
	    "it reaches the disk.\nModes: data=",
	    (unsigned long long)sc->point);
	for (unsigned m = 0; lv->modes[m]; m++)
		g_string_append_printf(g, "%s%s", m ? ", " : "", lv->modes[m]);
	g_string_append(g, ".\n");
	for (unsigned i = sc->n_setup; i < sc->n; i++) {
		cr_desc(&sc->op[i], d, sizeof(d));
		g_string_append_printf(g, "  %2u  %s\n", i - sc->n_setup + 1, d);
	}
}

static void cr_ask_mode(struct sfs_lab_sheet *sheet, const struct crash_scn *sc,
			const struct crash_mode_out *o, bool many)
{
	char pre[32] = "", ans[64], d[64];
	GString *ex = g_string_new(NULL);
	bool journaled = strcmp(o->mode, "none") != 0;

	if (many)
		g_snprintf(pre, sizeof(pre), "[data=%s] ", o->mode);
	/* which op issued request N */
	if (o->last_op)
		g_snprintf(ans, sizeof(ans), "%u", o->last_op);
	else
		g_strlcpy(ans, "none", sizeof(ans));
	g_string_printf(ex, "The script issues %llu requests under data=%s. ",
			(unsigned long long)o->total, o->mode);
	if (o->last_op) {
		unsigned k = sc->n_setup + o->last_op - 1;

		cr_desc(&sc->op[k], d, sizeof(d));
		g_string_append_printf(
		    ex, "Op %u (%s) issues requests %llu..%llu, so request %llu "
			"is its. Writes after the cut that never land: %llu.",
		    o->last_op, d, (unsigned long long)o->start[k] + 1,
		    (unsigned long long)o->end[k],
		    (unsigned long long)sc->point,
		    (unsigned long long)o->writes_dropped);
	} else {
		g_string_append(ex, "The cut comes after the last of them: "
				    "the whole script, unmount included, "
				    "reached the disk.");
	}
	sfs_lab_ask(sheet, false, ans, ex->str,
		    "%sWhich operation of the script issues request N? "
		    "(its number, or none if the script ends first)",
		    pre);

	if (journaled) {
		g_snprintf(ans, sizeof(ans), "%u %u", o->rec.n_txns,
			   o->rec.n_replayed);
		g_string_printf(ex, "The log as recovery finds it: %s. ",
				o->txns->len ? o->txns->str
					     : "empty (clean: s_start = 0)");
		if (o->rec.was_clean)
			g_string_append(ex, "Nothing to replay: the journal "
					    "was empty (the last commit was "
					    "checkpointed, or the unmount "
					    "completed).");
		else
			g_string_append_printf(
			    ex,
			    "Recovery replays the committed transactions "
			    "%u..%u: %u blocks written home (%u revoke "
			    "records). A transaction without its commit block "
			    "is ignored.",
			    o->rec.start_tid, o->rec.end_tid - 1,
			    o->rec.n_replayed, o->rec.n_revokes);
		sfs_lab_ask(sheet, true, ans, ex->str,
			    "%sHow many committed transactions does journal "
			    "recovery find, and how many blocks does it "
			    "write home (two numbers)?",
			    pre);
	} else {
		g_strlcpy(ans, o->fsck_clean ? "clean" : "damaged",
			  sizeof(ans));
		g_string_printf(
		    ex,
		    "e2fsck -fn exits %d on the crashed image: %s. Without a "
		    "journal, nothing orders the metadata writes, so a cut "
		    "between them leaves bitmaps, inodes and directories "
		    "disagreeing until e2fsck repairs them.",
		    o->fsck_exit,
		    o->fsck_clean ? "no problem found" : "it finds problems");
		sfs_lab_ask(sheet, false, ans, ex->str,
			    "%sIs the crashed ext2 image clean for e2fsck -fn "
			    "(clean / damaged)?",
			    pre);
	}

	g_string_printf(
	    ex,
	    "Read back after recovery. data=%s: %s",
	    o->mode,
	    !strcmp(o->mode, "ordered")
		? "a file's new data blocks are written before the "
		  "transaction that points at them commits, so a committed "
		  "size never shows stale blocks; an overwrite in place is "
		  "not journaled."
	    : !strcmp(o->mode, "journal")
		? "data goes through the journal with the metadata: what "
		  "recovery replays is a committed state, data included."
	    : !strcmp(o->mode, "writeback")
		? "metadata is journaled but data is not ordered: a "
		  "committed size may cover blocks whose data never landed "
		  "(zeros or old contents)."
		: "no journal: e2fsck -fy repaired the metadata that the "
		  "cut left inconsistent; a file whose inode or directory "
		  "entry never landed is gone, one whose blocks never "
		  "landed reads what was there before.");
	sfs_lab_ask(sheet, true, o->contents->str, ex->str,
		    "%sWhat does each file hold after recovery%s? For each "
		    "name (a, b, ...) write the name with a colon, then each "
		    "block: the write whose data it holds (w2), 0 for "
		    "zeros, ? for anything else; 'empty' for an empty "
		    "file.",
		    pre, journaled ? "" : " (e2fsck -fy for ext2)");
	g_string_free(ex, TRUE);
}

static int crash_build(const struct sfs_lab_params *p,
		       struct sfs_lab_sheet *sheet, char **err)
{
	const struct cr_level *lv = &cr_levels[p->level - 1];
	guint32 sv[3] = {(guint32)p->seed, (guint32)(p->seed >> 32),
			 0xc4a50000u + (guint32)p->level};
	GRand *rnd = g_rand_new_with_seed_array(sv, 3);
	struct crash_scn sc;
	struct crash_mode_out dry, o;
	const char *dry_mode = lv->modes[lv->modes[1] ? 1 : 0];
	int rc;

	cr_draw(lv, rnd, &sc);
	/* the doom counter: a request of the first journaled mode's run */
	rc = cr_run(&sc, dry_mode, true, false, &dry, err);
	if (rc) {
		g_rand_free(rnd);
		return rc;
	}
	/* mostly inside the script proper, sometimes in the unmount */
	{
		uint64_t before = dry.start[sc.n - 1];

		if (before && (before == dry.total ||
			       g_rand_int_range(rnd, 0, 10) < 7))
			sc.point = (uint64_t)g_rand_int_range(
			    rnd, 1, (gint32)before + 1);
		else
			sc.point = (uint64_t)g_rand_int_range(
			    rnd, (gint32)before + 1, (gint32)dry.total + 1);
	}
	g_rand_free(rnd);
	cr_out_free(&dry);
	cr_scenario(sheet->scenario, lv, &sc);
	for (unsigned m = 0; lv->modes[m]; m++) {
		rc = cr_run(&sc, lv->modes[m], false, true, &o, err);
		if (rc) {
			cr_out_free(&o);
			return rc;
		}
		cr_ask_mode(sheet, &sc, &o, lv->modes[1] != NULL);
		g_string_append_printf(sheet->figure,
				       "data=%s: the script's requests and "
				       "their fate\n%s",
				       o.mode, o.log->str);
		cr_out_free(&o);
	}
	return 0;
}

const struct sfs_lab sfs_lab_crash = {
    .name = "crash",
    .summary = "a power cut after request N: what recovery replays and what "
	       "the files hold, per data= mode",
    .teaches =
	"What a journal promises after a crash, and what it does not: the "
	"power goes out after the N-th device request of a short script "
	"(OS/161's doom counter); the student predicts which operation was "
	"cut, what journal recovery replays (the committed transactions and "
	"their blocks) and what each file holds afterwards under "
	"data=writeback, ordered and journal, and at the top level what "
	"e2fsck finds on ext2 without a journal.  The answers come from "
	"simfs's crash device and its own journal recovery, run as `simfs "
	"crash` runs them.  There is no --mount: a mount cannot cut its "
	"power at a chosen request; `simfs crash --trace` does the same on "
	"an image.",
    .levels = G_N_ELEMENTS(cr_levels),
    .level_help = cr_level_help,
    .build = crash_build,
};
