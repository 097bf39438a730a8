/*
 * lab_journal.c - `simfs lab journal`: when the journal commits, what each
 * transaction logs, and how many blocks reach the log under each data=
 * mode.
 *
 * The scenario is a timeline in whole virtual seconds: appends to files
 * (each one write of whole 4 KiB blocks), fsyncs, and the end.  The lab
 * runs it on a fresh 64 MiB filesystem of 4 KiB blocks with a 1024-block
 * internal journal over the ideal device (requests take no time), so
 * virtual time moves only as the timeline says: before each event the
 * clock is advanced to its second, firing the journal's and the flusher's
 * timers on the way (sfs_fs_journal_deadline / _tick, as simfs run's
 * journal and flusher actors do).  A commit is seen as a change of the
 * journal's commit counters (its reason) and its transaction read back
 * from the log (sfs_jlog_walk: the home blocks it logged); the block
 * counts come from the journal's and the device's statistics.
 *
 * There is no --mount part: on a mount nothing but the modelled device
 * moves a virtual clock, so the timeline's pauses cannot be replayed.
 *
 * Levels: 1 data=ordered, a few appends and an fsync; 2 writeback and
 * ordered side by side, an fsync with another file's data dirty; 3
 * data=journal with a small transaction limit (commits because the
 * transaction is full), and the log traffic of all three modes.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include <glib.h>

#include "clock.h"
#include "format.h"
#include "frag.h"
#include "fs.h"
#include "fs_priv.h"
#include "lab.h"
#include "models/journal/jbd2.h"

#define JN_SIZE (64u << 20)
#define JN_BS 4096u
#define JN_JOURNAL 1024u /* blocks */
#define JN_FILES 4
#define JN_MAXEV 24
#define JN_MAXCOMMITS 32
#define JN_NS 1000000000ull

extern const struct sfs_lab sfs_lab_journal;

static const char *const jn_levels[] = {
    "data=ordered: commit times, what each transaction logs",
    "the three data= modes side by side, fsync with other files' data "
    "dirty",
    "data=journal with a transaction limit; the log traffic of all three "
    "modes",
};

enum jn_kind {
	JN_WRITE, /* append blocks (creating the file) */
	JN_FSYNC,
	JN_END,
};

struct jn_ev {
	uint32_t t_s;
	enum jn_kind kind;
	int file;
	uint32_t blocks;
};

struct jn_scen {
	struct jn_ev ev[JN_MAXEV];
	int nev;
	uint32_t commit_s;
	uint32_t max_txn; /* 0: the default (a quarter of the log) */
};

static const char *const jn_reasons[] = {"interval", "full", "fsync",
					 "sync", "logspace", "enospc"};

/* One commit as the lab saw it. */
struct jn_commit {
	double t_s;	    /* since the start */
	const char *reason; /* jn_reasons[] */
	uint32_t logged;    /* home blocks logged */
	uint32_t data;	    /* of which file data (data=journal) */
	uint32_t ordered;   /* data blocks written first (data=ordered) */
	char kinds[160];    /* "sb gdt ..." of the logged blocks */
};

struct jn_result {
	const char *mode;
	struct jn_commit c[JN_MAXCOMMITS];
	int nc;
	uint64_t log_desc, log_meta, log_data, log_commit; /* blocks */
	uint64_t data_write_blocks;	/* to home locations, by the end */
	uint64_t fsync_data_blocks;	/* written during the (first) fsync */
};

/* The run in progress. */
struct jn_run {
	struct sfs_fs *fs;
	struct jn_result *res;
	sfs_ns_t t0;
	uint32_t last_tid;
	uint64_t counts[G_N_ELEMENTS(jn_reasons)];
	uint64_t ordered_seen;
	uint32_t ino[JN_FILES];
	GArray *homes; /* uint32_t: home blocks of the transactions walked */
	int rc;
};

static char jn_name(int file)
{
	return (char)('a' + file);
}

static void jn_add(struct jn_scen *s, uint32_t t, enum jn_kind k, int file,
		   uint32_t blocks)
{
	if (s->nev >= JN_MAXEV)
		return;
	s->ev[s->nev] = (struct jn_ev){t, k, file, blocks};
	s->nev++;
}

/* What kind of block home block b is, for the explanations. */
static const char *jn_kind_of(struct jn_run *r, uint32_t b)
{
	struct sfs_fs *fs = r->fs;

	if (b == (fs->bs == 1024 ? 1u : 0u))
		return "sb";
	if (b <= fs->first_data_block + fs->desc_blocks)
		return "gdt";
	for (uint32_t g = 0; g < fs->groups; g++) {
		uint32_t it = sfs_le32(fs->gd[g].bg_inode_table);

		if (b == sfs_le32(fs->gd[g].bg_block_bitmap))
			return "bbitmap";
		if (b == sfs_le32(fs->gd[g].bg_inode_bitmap))
			return "ibitmap";
		if (b >= it && b < it + fs->itb)
			return "itable";
	}
	for (int f = 0; f < JN_FILES; f++) {
		GArray *runs = NULL;
		const char *hit = NULL;

		if (!r->ino[f])
			continue;
		sfs_unlock(fs);
		if (sfs_lab_file_runs(fs, r->ino[f], &runs) == 0) {
			for (guint i = 0; i < runs->len; i++) {
				const struct sfs_frag_run *fr = &g_array_index(
				    runs, struct sfs_frag_run, i);
				if (b >= fr->pblk && b < fr->pblk + fr->len)
					hit = fr->meta ? "indirect" : "data";
			}
			g_array_unref(runs);
		}
		sfs_lock(fs);
		if (hit)
			return hit;
	}
	return "dir";
}

struct jn_walk {
	struct jn_run *r;
	struct jn_commit *c;
	uint32_t newest;
};

static int jn_walk_cb(void *ctx, const struct sfs_jtxn_info *t)
{
	struct jn_walk *w = ctx;

	if (!t->committed || t->tid <= w->r->last_tid)
		return 0;
	w->newest = MAX(w->newest, t->tid);
	w->c->logged += t->n_logged;
	for (uint32_t i = 0; i < t->n_logged; i++)
		g_array_append_val(w->r->homes, t->home[i]);
	return 0;
}

/* Read the transactions committed since the last look into c. */
static int jn_read_log(struct jn_run *r, struct jn_commit *c)
{
	struct sfs_fs *fs = r->fs;
	struct jn_walk w = {.r = r, .c = c};
	struct sfs_jlog *log = NULL;
	char *err = NULL;
	GString *kinds = g_string_new(NULL);
	int rc;

	g_array_set_size(r->homes, 0);
	sfs_lock(fs);
	rc = sfs_jlog_open_fs(fs, NULL, &log, &err);
	if (rc == 0) {
		rc = sfs_jlog_walk(log, 0, jn_walk_cb, &w);
		if (rc == 0 && !w.newest)
			rc = sfs_jlog_walk(log, SFS_JLOG_WALK_STALE,
					   jn_walk_cb, &w);
		sfs_jlog_close(log);
	}
	/* the kinds, in a fixed order with counts: "sb gdt 2 itable ..." */
	static const char *const order[] = {"sb",     "gdt",	"bbitmap",
					    "ibitmap", "itable", "dir",
					    "indirect", "data"};
	for (unsigned k = 0; rc == 0 && k < G_N_ELEMENTS(order); k++) {
		uint32_t n = 0;

		for (guint i = 0; i < r->homes->len; i++)
			n += strcmp(jn_kind_of(r, g_array_index(r->homes,
								uint32_t, i)),
				    order[k]) == 0;
		if (strcmp(order[k], "data") == 0)
			c->data = n;
		if (n == 1)
			g_string_append_printf(kinds, "%s%s",
					       kinds->len ? ", " : "",
					       order[k]);
		else if (n > 1)
			g_string_append_printf(kinds, "%s%u %s",
					       kinds->len ? ", " : "", n,
					       order[k]);
	}
	sfs_unlock(fs);
	g_strlcpy(c->kinds, kinds->str, sizeof(c->kinds));
	g_string_free(kinds, TRUE);
	if (w.newest)
		r->last_tid = w.newest;
	g_free(err);
	return rc;
}

static uint64_t jn_stat(struct jn_run *r, const char *path)
{
	uint64_t v = 0;

	if (sfs_lab_stat(r->fs, path, &v) && !r->rc)
		r->rc = -ENOENT;
	return v;
}

/* Record the commits made since the last look (one per reason counter
 * step; the log is read once for them all). */
static void jn_note_commits(struct jn_run *r)
{
	struct jn_result *res = r->res;
	double now = (double)(sfs_clock_now_ns(sfs_fs_clock(r->fs)) - r->t0) /
		     JN_NS;
	uint64_t ordered = jn_stat(r, "journal.ordered_data_blocks");
	int first = res->nc;

	for (unsigned k = 0; k < G_N_ELEMENTS(jn_reasons); k++) {
		char path[64];
		uint64_t v;

		g_snprintf(path, sizeof(path), "journal.commits.%s",
			   jn_reasons[k]);
		v = jn_stat(r, path);
		while (r->counts[k] < v && res->nc < JN_MAXCOMMITS) {
			struct jn_commit *c = &res->c[res->nc++];

			memset(c, 0, sizeof(*c));
			c->t_s = now;
			c->reason = jn_reasons[k];
			r->counts[k]++;
		}
	}
	if (res->nc == first)
		return;
	if (res->nc - first == 1) {
		if (jn_read_log(r, &res->c[first]) && !r->rc)
			r->rc = -EIO;
		res->c[first].ordered = (uint32_t)(ordered - r->ordered_seen);
	}
	r->ordered_seen = ordered;
}

/* Move the clock to t_s, firing the journal's and the flusher's timers
 * that fall due on the way. */
static void jn_advance(struct jn_run *r, uint32_t t_s)
{
	struct sfs_clock *clk = sfs_fs_clock(r->fs);
	sfs_ns_t target = r->t0 + (sfs_ns_t)t_s * JN_NS;

	while (r->rc == 0) {
		sfs_ns_t dj = sfs_fs_journal_deadline(r->fs);
		sfs_ns_t dw = sfs_fs_writeback_deadline(r->fs);
		sfs_ns_t d = MIN(dj, dw), now = sfs_clock_now_ns(clk);

		if (d > target)
			break;
		if (d > now)
			sfs_clock_advance(clk, d - now);
		if (dj <= dw)
			r->rc = sfs_fs_journal_tick(r->fs);
		else
			r->rc = sfs_fs_writeback_tick(r->fs);
		jn_note_commits(r);
	}
	if (sfs_clock_now_ns(clk) < target)
		sfs_clock_advance(clk, target - sfs_clock_now_ns(clk));
}

static void jn_do(struct jn_run *r, const struct jn_ev *e, uint8_t *zero,
		  bool *first_fsync)
{
	char name[2] = {jn_name(e->file), 0};
	struct sfs_attr at;
	size_t done;
	int rc = 0;

	if (e->kind == JN_WRITE) {
		if (!r->ino[e->file]) {
			rc = sfs_mknod(r->fs, SFS_ROOT_INO, name,
				       SFS_S_IFREG | 0644, 0, 0, 0, &at);
			if (rc == 0)
				r->ino[e->file] = at.ino;
		}
		if (rc == 0)
			rc = sfs_getattr(r->fs, r->ino[e->file], &at);
		if (rc == 0)
			rc = sfs_write(r->fs, r->ino[e->file], at.size, zero,
				       (size_t)e->blocks * JN_BS, &done);
	} else if (e->kind == JN_FSYNC) {
		uint64_t before = jn_stat(
		    r, "device.submitted.by_category.data.write_bytes");

		rc = sfs_fsync(r->fs, r->ino[e->file], false);
		if (*first_fsync)
			r->res->fsync_data_blocks =
			    (jn_stat(r, "device.submitted.by_category.data."
					"write_bytes") -
			     before) /
			    JN_BS;
		*first_fsync = false;
	}
	if (rc && !r->rc)
		r->rc = rc;
	jn_note_commits(r);
}

/* Run s under data=mode; res filled.  0 or -errno with *err. */
static int jn_run(struct sfs_lab_sheet *sh, const struct jn_scen *s,
		  const char *mode, struct jn_result *res, char **err)
{
	char opts[160];
	struct sfs_lab_fs_spec spec = {
	    .size_bytes = JN_SIZE,
	    .block_size = JN_BS,
	    .journal_blocks = JN_JOURNAL,
	    .mount_opts = opts,
	};
	uint8_t *zero = g_malloc0(64 * JN_BS);
	struct jn_run r = {0};
	bool first_fsync = true;
	int rc;

	g_snprintf(opts, sizeof(opts),
		   "data=%s,commit=%u,journal_max_txn=%u,device=ideal", mode,
		   s->commit_s, s->max_txn);
	memset(res, 0, sizeof(*res));
	res->mode = mode;
	rc = sfs_lab_fs_open(NULL, &spec, &r.fs, err);
	if (rc) {
		g_free(zero);
		return rc;
	}
	r.res = res;
	r.homes = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	r.t0 = sfs_clock_now_ns(sfs_fs_clock(r.fs));
	jn_note_commits(&r); /* the counters as the mount left them */
	res->nc = 0;
	for (int i = 0; i < s->nev && r.rc == 0; i++) {
		jn_advance(&r, s->ev[i].t_s);
		if (r.rc == 0)
			jn_do(&r, &s->ev[i], zero, &first_fsync);
	}
	res->log_desc = jn_stat(&r, "journal.log_blocks.descriptor");
	res->log_meta = jn_stat(&r, "journal.log_blocks.metadata");
	res->log_data = jn_stat(&r, "journal.log_blocks.data");
	res->log_commit = jn_stat(&r, "journal.log_blocks.commit");
	rc = r.rc;
	if (rc == 0)
		rc = sfs_fs_sync(r.fs);
	res->data_write_blocks =
	    jn_stat(&r, "device.submitted.by_category.data.write_bytes") /
	    JN_BS;
	if (rc && !*err)
		*err = g_strdup_printf("the timeline under data=%s: %s", mode,
				       g_strerror(-rc));
	g_array_free(r.homes, TRUE);
	if (sfs_fs_close(r.fs) && rc == 0) {
		rc = -EIO;
		*err = g_strdup("closing the lab filesystem failed");
	}
	g_free(zero);
	(void)sh;
	return rc;
}

/* Levels 1 and 2: a few appends and one fsync; level 3: bigger appends
 * that fill a small transaction limit. */
static void jn_scen_make(const struct sfs_lab_params *p, GRand *rnd,
			 struct jn_scen *s)
{
	uint32_t t = 0;
	int nfiles = p->level == 1 ? 2 : 3;
	int fsync_at, nw = p->level == 1 ? 4 : 6;

	s->commit_s = p->level == 1 ? 5 : (uint32_t)g_rand_int_range(rnd, 2, 6);
	s->max_txn = p->level == 3 ? (uint32_t)g_rand_int_range(rnd, 3, 5) * 4
				   : 0;
	fsync_at = 1 + g_rand_int_range(rnd, 0, nw - 1);
	for (int i = 0; i < nw; i++) {
		uint32_t b = p->level == 3
				 ? (uint32_t)g_rand_int_range(rnd, 2, 8)
				 : (uint32_t)g_rand_int_range(rnd, 1, 4);
		int f = i < nfiles ? i : g_rand_int_range(rnd, 0, nfiles);

		jn_add(s, t, JN_WRITE, f, b);
		if (i == fsync_at) {
			t += (uint32_t)g_rand_int_range(rnd, 0, 2);
			jn_add(s, t, JN_FSYNC, f == 0 ? 1 : 0, 0);
		}
		t += (uint32_t)g_rand_int_range(rnd, 1, 4);
	}
	jn_add(s, t + s->commit_s + 1, JN_END, 0, 0);
}

static void jn_timeline(const struct jn_scen *s, GString *out)
{
	for (int i = 0; i < s->nev; i++) {
		const struct jn_ev *e = &s->ev[i];

		g_string_append_printf(out, "  t=%2us  ", e->t_s);
		if (e->kind == JN_WRITE)
			g_string_append_printf(out,
					       "append %u block%s to /%c\n",
					       e->blocks, e->blocks == 1 ? "" : "s",
					       jn_name(e->file));
		else if (e->kind == JN_FSYNC)
			g_string_append_printf(out, "fsync /%c\n",
					       jn_name(e->file));
		else
			g_string_append(out, "end (nothing more happens)\n");
	}
}

static void jn_fmt_time(GString *out, double t)
{
	if (t == (double)(uint64_t)t)
		g_string_append_printf(out, "%llu", (unsigned long long)t);
	else
		g_string_append_printf(out, "%.3f", t);
}

static void jn_ask_times(struct sfs_lab_sheet *sh, const struct jn_scen *s,
			 const struct jn_result *r)
{
	GString *t = g_string_new(NULL), *why = g_string_new(NULL);
	GString *rs = g_string_new(NULL);

	for (int i = 0; i < r->nc; i++) {
		if (i)
			g_string_append_c(t, ' ');
		jn_fmt_time(t, r->c[i].t_s);
		g_string_append_printf(rs, "%s ", r->c[i].reason);
	}
	g_string_printf(why,
			"A transaction commits %u s after its first change "
			"(interval) or when an fsync needs it on disk (fsync)%s; "
			"a change after a commit opens a new transaction with "
			"a new interval.  Commits under data=%s:",
			s->commit_s,
			s->max_txn ? ", or at the end of an operation after "
				     "which it holds the transaction limit's "
				     "worth of blocks (full: logged data "
				     "counts, the superblock and group "
				     "descriptors do not, as they join only at "
				     "commit; a transaction always holds whole "
				     "operations)"
				   : "",
			r->mode);
	for (int i = 0; i < r->nc; i++) {
		GString *one = g_string_new(NULL);

		jn_fmt_time(one, r->c[i].t_s);
		g_string_append_printf(why, "%s %s s (%s)", i ? "," : "",
				       one->str, r->c[i].reason);
		g_string_free(one, TRUE);
	}
	g_string_append_c(why, '.');
	sfs_lab_ask(sh, true, t->str, why->str,
		    "Under data=%s, at which times (seconds, as on the "
		    "timeline) does the journal commit, up to the end?",
		    r->mode);
	sfs_lab_ask(sh, true, rs->str, NULL,
		    "Why does each of those commits happen?  Answer interval, "
		    "fsync or full for each, in order.");
	g_string_free(t, TRUE);
	g_string_free(rs, TRUE);
	g_string_free(why, TRUE);
}

static void jn_ask_logged(struct sfs_lab_sheet *sh, const struct jn_result *r)
{
	GString *a = g_string_new(NULL), *why = g_string_new(NULL);

	g_string_append_printf(
	    why,
	    "data=%s logs the metadata blocks a transaction changed, each "
	    "once however often it changed%s: the superblock and group "
	    "descriptors (simfs logs the free counts with every transaction), "
	    "bitmaps, inode-table blocks, directory blocks.",
	    r->mode,
	    strcmp(r->mode, "journal") == 0 ? ", and the file data blocks too"
					    : "");
	for (int i = 0; i < r->nc; i++) {
		g_string_append_printf(a, "%u ", r->c[i].logged);
		g_string_append_printf(why, "  Commit %d: %u (%s).", i + 1,
				       r->c[i].logged, r->c[i].kinds);
	}
	sfs_lab_ask(sh, true, a->str, why->str,
		    "Under data=%s, how many blocks does each commit log (home "
		    "blocks copied into the journal), in order?",
		    r->mode);
	g_string_free(a, TRUE);
	g_string_free(why, TRUE);
}

static uint64_t jn_log_total(const struct jn_result *r)
{
	return r->log_desc + r->log_meta + r->log_data + r->log_commit;
}

static void jn_log_why(GString *why, const struct jn_result *r)
{
	g_string_append_printf(why,
			       "data=%s: %" G_GUINT64_FORMAT
			       " descriptor + %" G_GUINT64_FORMAT
			       " metadata + %" G_GUINT64_FORMAT
			       " data + %" G_GUINT64_FORMAT " commit = %" G_GUINT64_FORMAT,
			       r->mode, r->log_desc, r->log_meta, r->log_data,
			       r->log_commit, jn_log_total(r));
}

static void jn_figure(GString *fig, const struct jn_scen *s,
		      const struct jn_result *r)
{
	g_string_append_printf(fig, "data=%s, commit=%u%s:\n", r->mode,
			       s->commit_s,
			       s->max_txn ? "" : ", no transaction limit");
	if (s->max_txn) {
		g_string_truncate(fig, fig->len - 2);
		g_string_append_printf(fig, ", journal_max_txn=%u:\n",
				       s->max_txn);
	}
	g_string_append(fig, "  commit  time (s)  reason    logged  ordered "
			     "data  what it logged\n");
	for (int i = 0; i < r->nc; i++) {
		GString *t = g_string_new(NULL);

		jn_fmt_time(t, r->c[i].t_s);
		g_string_append_printf(fig, "  %6d  %8s  %-8s  %6u  %12u  %s\n",
				       i + 1, t->str, r->c[i].reason,
				       r->c[i].logged, r->c[i].ordered,
				       r->c[i].kinds);
		g_string_free(t, TRUE);
	}
	g_string_append(fig, "  log blocks: ");
	jn_log_why(fig, r);
	g_string_append_c(fig, '\n');
}

static const char jn_setup[] =
    "A fresh filesystem: 64 MiB of 4 KiB blocks with a 1024-block internal "
    "journal, on an ideal disk (requests take no time, so time moves only "
    "as the timeline says).  Each append is one write of whole blocks at "
    "the end of the file (a new file is created first); the files live in "
    "the root directory.\n";

static int jn_build(const struct sfs_lab_params *p, struct sfs_lab_sheet *sh,
		    char **err)
{
	static const char *const modes3[] = {"writeback", "ordered",
					     "journal"};
	GRand *rnd = sfs_lab_rand(&sfs_lab_journal, p);
	struct jn_scen s = {0};
	struct jn_result *res = g_new0(struct jn_result, 3);
	GString *tl = g_string_new(NULL);
	int rc = 0, n = 0;

	jn_scen_make(p, rnd, &s);
	g_rand_free(rnd);
	jn_timeline(&s, tl);
	if (p->level == 1) {
		rc = jn_run(sh, &s, "ordered", &res[0], err);
		n = rc ? 0 : 1;
	} else {
		for (; n < 3 && rc == 0; n++)
			rc = jn_run(sh, &s, modes3[n], &res[n], err);
	}
	if (rc)
		goto out;
	g_string_append(sh->scenario, jn_setup);
	if (p->level == 1)
		g_string_append_printf(sh->scenario,
				       "\nMounted -o data=ordered,commit=%u.  "
				       "The timeline:\n\n%s",
				       s.commit_s, tl->str);
	else if (p->level == 2)
		g_string_append_printf(sh->scenario,
				       "\nThe same timeline on three such "
				       "filesystems, mounted -o data=writeback, "
				       "data=ordered and data=journal, each "
				       "with commit=%u:\n\n%s",
				       s.commit_s, tl->str);
	else
		g_string_append_printf(sh->scenario,
				       "\nThe same timeline on three such "
				       "filesystems, mounted -o data=writeback, "
				       "data=ordered and data=journal, each "
				       "with commit=%u,journal_max_txn=%u (a "
				       "transaction commits once it holds %u "
				       "blocks):\n\n%s",
				       s.commit_s, s.max_txn, s.max_txn, tl->str);

	if (p->level == 1) {
		struct jn_result *r = &res[0];
		GString *a = g_string_new(NULL), *why = g_string_new(NULL);

		jn_ask_times(sh, &s, r);
		jn_ask_logged(sh, r);
		for (int i = 0; i < r->nc; i++)
			g_string_append_printf(a, "%u ", r->c[i].ordered);
		g_string_append(why, "data=ordered writes the data blocks "
				     "dirtied in the transaction home before "
				     "its commit block, whichever file they "
				     "belong to: each commit writes what was "
				     "appended since the previous one.");
		sfs_lab_ask(sh, true, a->str, why->str,
			    "How many file data blocks does each commit write "
			    "to their home locations first, in order?");
		g_string_truncate(a, 0);
		g_string_printf(a, "%" G_GUINT64_FORMAT, jn_log_total(r));
		g_string_assign(why, "A transaction takes a descriptor block, "
				     "its logged blocks and a commit block in "
				     "the log: ");
		jn_log_why(why, r);
		g_string_append_c(why, '.');
		sfs_lab_ask(sh, false, a->str, why->str,
			    "How many blocks are written to the log in all, up "
			    "to the end (not counting journal superblock "
			    "updates)?");
		jn_figure(sh->figure, &s, r);
		g_string_free(a, TRUE);
		g_string_free(why, TRUE);
	} else {
		GString *a = g_string_new(NULL), *why = g_string_new(NULL);

		jn_ask_times(sh, &s, &res[p->level == 2 ? 1 : 2]);
		jn_ask_logged(sh, &res[p->level == 2 ? 1 : 2]);
		if (p->level == 2) {
			for (int m = 0; m < 2; m++)
				g_string_append_printf(
				    a, "%" G_GUINT64_FORMAT " ",
				    res[m].fsync_data_blocks);
			g_string_printf(
			    why,
			    "fsync under writeback writes the file's own dirty "
			    "data, then commits; under ordered the commit "
			    "writes the data of every file changed in the "
			    "transaction first (the classic ext3 fsync cost): "
			    "%" G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT
			    " blocks.",
			    res[0].fsync_data_blocks,
			    res[1].fsync_data_blocks);
			sfs_lab_ask(sh, true, a->str, why->str,
				    "How many file data blocks reach the disk "
				    "during the fsync, under data=writeback "
				    "and under data=ordered?");
		}
		g_string_truncate(a, 0);
		g_string_truncate(why, 0);
		for (int m = 0; m < 3; m++) {
			g_string_append_printf(a, "%" G_GUINT64_FORMAT " ",
					       jn_log_total(&res[m]));
			if (m)
				g_string_append(why, "; ");
			jn_log_why(why, &res[m]);
		}
		g_string_prepend(why, "Each transaction puts a descriptor, its "
				      "logged blocks and a commit block in the "
				      "log; data=journal logs the data too, "
				      "and its commits differ: ");
		g_string_append_c(why, '.');
		sfs_lab_ask(sh, true, a->str, why->str,
			    "How many blocks are written to the log in all, up "
			    "to the end, under data=writeback, ordered and "
			    "journal (not counting journal superblock "
			    "updates)?");
		g_string_truncate(a, 0);
		g_string_printf(
		    why,
		    "Every mode writes each file block home once by the "
		    "end; data=journal also writes it to the log first, "
		    "so its data costs twice: %" G_GUINT64_FORMAT
		    " data blocks in the log.",
		    res[2].log_data);
		g_string_printf(a, "%" G_GUINT64_FORMAT,
				res[2].log_data);
		sfs_lab_ask(sh, false, a->str, why->str,
			    "Under data=journal, how many file data blocks go "
			    "to the log, up to the end?");
		for (int m = 0; m < 3; m++) {
			if (m)
				g_string_append_c(sh->figure, '\n');
			jn_figure(sh->figure, &s, &res[m]);
		}
		g_string_free(a, TRUE);
		g_string_free(why, TRUE);
	}
out:
	g_string_free(tl, TRUE);
	g_free(res);
	return rc;
}

const struct sfs_lab sfs_lab_journal = {
    .name = "journal",
    .summary = "when the journal commits and what reaches the log per data=",
    .teaches =
	"Journaling as ext3 does it.  Every metadata change joins the running "
	"transaction, which commits after the commit interval, at an fsync "
	"or when it is full; a commit writes a descriptor, a copy of each "
	"changed block (once, however often it changed) and a commit block "
	"to the log.  data=ordered first writes the transaction's file data "
	"home, data=writeback does not wait for it, data=journal logs the "
	"data as well and so writes it twice.  The student predicts the "
	"commit times, what each transaction logs and the log traffic.",
    .levels = 3,
    .level_help = jn_levels,
    .build = jn_build,
};
