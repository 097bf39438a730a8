/*
 * lab_inode.c - `simfs lab inode`: inode numbers, group placement, the
 * directory entry layout and link counts after a short shell session.
 *
 * The scenario is a list of shell commands (touch, mkdir, ln, rm, mv) on
 * a fresh 32 MiB filesystem of 1 KiB blocks in 4 groups of 256 inodes;
 * the same list is the --mount script.  The lab carries each command out
 * through the engine (sfs_mknod, sfs_mkdir, sfs_link, sfs_unlink,
 * sfs_rename), then reads the answers back: inode numbers from
 * sfs_lookup, link counts from sfs_getattr, the groups from the inode
 * numbers, and the root directory's first block as it is on the device
 * after sfs_fs_sync (inode, rec_len, name_len of each record).
 *
 * Levels: 1 files and a directory in the root; 2 hard links, a removal
 * and a new name that may reuse the hole; 3 top-level directories and
 * their contents under dirs=oldalloc and dirs=orlov side by side.
 */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "fs_priv.h"
#include "format.h"
#include "frag.h"
#include "fs.h"
#include "lab.h"

#define INO_SIZE (32u << 20)
#define INO_BS 1024u
#define INO_RATIO 32768u /* 1024 inodes, 256 per group */

extern const struct sfs_lab sfs_lab_inode;

static const char *const ino_levels[] = {
    "files and a directory in the root: numbers, records, link counts",
    "hard links, rm and a new name in the hole it leaves",
    "top-level directories under dirs=oldalloc and dirs=orlov",
};

/* Names of several lengths, so the records differ (8 + name, to 4). */
static const char *const ino_words[] = {
    "a",       "db",	   "log",      "todo",	  "notes",    "readme",
    "report",  "data.csv", "main.c",   "x1",	  "photos",   "music",
    "src",     "tmp",	   "Makefile", "lib",	  "index.html",
    "thesis.tex", "backup", "z",	"cache",    "config.yaml",
    "old",     "q",	   "results", "draft2",	  "plan.md",  "bin",
};

/* One run: the engine, the commands so far, the first error. */
struct ino_run {
	struct sfs_fs *fs;
	GString *script; /* the shell commands, as the student runs them */
	int rc;
	char *err;
};

static void ino_fail(struct ino_run *r, int rc, const char *what)
{
	if (r->rc)
		return;
	r->rc = rc;
	r->err = g_strdup_printf("%s: %s", what, g_strerror(-rc));
}

/* Split "/a/b" into the parent's inode and "b". */
static uint32_t ino_parent(struct ino_run *r, const char *path,
			   const char **name)
{
	const char *slash = strrchr(path, '/');
	char *dir = g_strndup(path, slash - path);
	uint32_t ino = 0;
	int rc = sfs_lab_resolve(r->fs, *dir ? dir : "/", &ino);

	if (rc)
		ino_fail(r, rc, path);
	g_free(dir);
	*name = slash + 1;
	return ino;
}

static void ino_touch(struct ino_run *r, const char *path)
{
	const char *name;
	uint32_t dir = ino_parent(r, path, &name);
	struct sfs_attr at;
	int rc;

	if (r->rc)
		return;
	rc = sfs_mknod(r->fs, dir, name, SFS_S_IFREG | 0644, 0, 0, 0, &at);
	if (rc)
		ino_fail(r, rc, path);
	g_string_append_printf(r->script, "touch %s\n", path + 1);
}

static void ino_mkdir(struct ino_run *r, const char *path)
{
	const char *name;
	uint32_t dir = ino_parent(r, path, &name);
	struct sfs_attr at;
	int rc;

	if (r->rc)
		return;
	rc = sfs_mkdir(r->fs, dir, name, 0755, 0, 0, &at);
	if (rc)
		ino_fail(r, rc, path);
	g_string_append_printf(r->script, "mkdir %s\n", path + 1);
}

static void ino_ln(struct ino_run *r, const char *from, const char *to)
{
	const char *name;
	uint32_t dir = ino_parent(r, to, &name), ino = 0;
	struct sfs_attr at;
	int rc;

	if (r->rc)
		return;
	rc = sfs_lab_resolve(r->fs, from, &ino);
	if (rc == 0)
		rc = sfs_link(r->fs, ino, dir, name, &at);
	if (rc)
		ino_fail(r, rc, to);
	g_string_append_printf(r->script, "ln %s %s\n", from + 1, to + 1);
}

static void ino_rm(struct ino_run *r, const char *path)
{
	const char *name;
	uint32_t dir = ino_parent(r, path, &name);
	int rc;

	if (r->rc)
		return;
	rc = sfs_unlink(r->fs, dir, name);
	if (rc)
		ino_fail(r, rc, path);
	g_string_append_printf(r->script, "rm %s\n", path + 1);
}

static void ino_mv(struct ino_run *r, const char *from, const char *to)
{
	const char *n1, *n2;
	uint32_t d1 = ino_parent(r, from, &n1), d2 = ino_parent(r, to, &n2);
	int rc;

	if (r->rc)
		return;
	rc = sfs_rename(r->fs, d1, n1, d2, n2, 0);
	if (rc)
		ino_fail(r, rc, from);
	g_string_append_printf(r->script, "mv %s %s\n", from + 1, to + 1);
}

static uint32_t ino_of(struct ino_run *r, const char *path)
{
	uint32_t ino = 0;
	int rc = sfs_lab_resolve(r->fs, path, &ino);

	if (rc)
		ino_fail(r, rc, path);
	return ino;
}

static uint32_t ino_nlink(struct ino_run *r, const char *path)
{
	struct sfs_attr at = {0};
	uint32_t ino = ino_of(r, path);

	if (!r->rc && sfs_getattr(r->fs, ino, &at))
		ino_fail(r, -EIO, path);
	return at.nlink;
}

/* One record of a directory block, as on the device. */
struct ino_rec {
	uint32_t off;
	uint32_t ino;
	uint16_t rec_len;
	uint8_t name_len;
	char name[256];
};

/* The records of directory path's first block, in block order. */
static GArray *ino_records(struct ino_run *r, const char *path)
{
	GArray *recs = g_array_new(FALSE, TRUE, sizeof(struct ino_rec));
	uint32_t ino = ino_of(r, path), bs = sfs_fs_block_size(r->fs);
	GArray *runs = NULL;
	uint8_t *buf = g_malloc(bs);
	sfs_blk_t blk = 0;
	int rc;

	if (r->rc)
		goto out;
	rc = sfs_fs_sync(r->fs);
	if (rc == 0)
		rc = sfs_lab_file_runs(r->fs, ino, &runs);
	for (guint i = 0; rc == 0 && i < runs->len; i++) {
		const struct sfs_frag_run *fr =
		    &g_array_index(runs, struct sfs_frag_run, i);
		if (!fr->meta && fr->lblk == 0)
			blk = fr->pblk;
	}
	if (rc == 0 && !blk)
		rc = -EIO;
	if (rc == 0)
		rc = sfs_bdev_read(sfs_fs_bdev(r->fs), SFS_IO_OTHER,
				   (uint64_t)blk * bs, buf, bs);
	if (rc) {
		ino_fail(r, rc, path);
		goto out;
	}
	for (uint32_t off = 0; off + 8 <= bs;) {
		struct ino_rec e = {.off = off};

		e.ino = sfs_get_le32(buf + off);
		e.rec_len = sfs_get_le16(buf + off + 4);
		e.name_len = buf[off + 6];
		if (e.rec_len < 8 || off + e.rec_len > bs) {
			ino_fail(r, -EIO, "directory record");
			break;
		}
		memcpy(e.name, buf + off + 8, e.name_len);
		g_array_append_val(recs, e);
		off += e.rec_len;
	}
out:
	if (runs)
		g_array_unref(runs);
	g_free(buf);
	return recs;
}

/* The layout of a directory block as debugfs `ls` shows it. */
static void ino_records_figure(GString *fig, const char *path, GArray *recs,
			       uint32_t bs)
{
	g_string_append_printf(fig,
			       "%s, first block (%u bytes); what `debugfs -R "
			       "'ls %s'` shows as ino (rec_len) name:\n",
			       path, bs, path);
	g_string_append(fig, "  offset  inode  rec_len  name_len  name\n");
	for (guint i = 0; i < recs->len; i++) {
		const struct ino_rec *e =
		    &g_array_index(recs, struct ino_rec, i);
		g_string_append_printf(fig, "  %6u  %5u  %7u  %8u  %s%s\n",
				       e->off, e->ino, e->rec_len, e->name_len,
				       e->name, e->ino ? "" : "(unused)");
	}
}

/* "8 + name_len rounded up to 4" for name */
static uint32_t ino_need(const char *name)
{
	return (8 + (uint32_t)strlen(name) + 3) & ~3u;
}

/* Distinct names for this sheet, drawn from ino_words. */
static void ino_pick_names(GRand *rnd, const char **out, unsigned n)
{
	unsigned k = G_N_ELEMENTS(ino_words);
	const char *pool[G_N_ELEMENTS(ino_words)];

	memcpy(pool, ino_words, sizeof(pool));
	for (unsigned i = 0; i < n && i < k; i++) {
		unsigned j = i + (unsigned)g_rand_int_range(rnd, 0,
							   (gint32)(k - i));
		const char *t = pool[i];

		pool[i] = pool[j];
		pool[j] = t;
		out[i] = pool[i];
	}
}

static int ino_open(struct sfs_lab_sheet *sh, const char *opts,
		    struct ino_run *r, char **err)
{
	const struct sfs_lab_fs_spec spec = {
	    .size_bytes = INO_SIZE,
	    .block_size = INO_BS,
	    .inode_ratio = INO_RATIO,
	    .mount_opts = opts,
	};

	memset(r, 0, sizeof(*r));
	r->script = g_string_new(NULL);
	return sfs_lab_fs_open(sh, &spec, &r->fs, err);
}

static int ino_close(struct ino_run *r, char **err)
{
	int rc = r->rc;

	if (rc && err && !*err)
		*err = g_strdup(r->err);
	g_free(r->err);
	if (r->fs && sfs_fs_close(r->fs) && !rc) {
		rc = -EIO;
		if (err)
			*err = g_strdup("closing the lab filesystem failed");
	}
	g_string_free(r->script, TRUE);
	return rc;
}

static void ino_geometry(GString *s)
{
	g_string_append(
	    s, "A fresh filesystem: 32 MiB of 1 KiB blocks in 4 groups of "
	       "8192 blocks and\n256 inodes (group g holds inodes 256g+1 to "
	       "256g+256).  Inodes 1-10 are\nreserved, 2 is the root, 11 is "
	       "lost+found.  Directories are linear (no htree).\n");
}

/* "/name" for every name, the records of / answered in that order. */
static void ino_ask_records(struct sfs_lab_sheet *sh, struct ino_run *r,
			    bool after)
{
	GArray *recs = ino_records(r, "/");
	GString *ans = g_string_new(NULL), *names = g_string_new(NULL);
	GString *why = g_string_new(NULL);
	uint32_t bs = INO_BS;

	for (guint i = 0; i < recs->len; i++) {
		const struct ino_rec *e =
		    &g_array_index(recs, struct ino_rec, i);
		g_string_append_printf(ans, "%u ", e->rec_len);
		g_string_append_printf(names, "%s%s", i ? ", " : "",
				       e->ino ? e->name : "(unused)");
	}
	g_string_append(why, "A record needs 8 bytes (inode 4, rec_len 2, "
			     "name_len 1, type 1) plus the name, rounded up "
			     "to 4 bytes; the last record of a block reaches "
			     "to its end.");
	if (after)
		g_string_append(why, "  rm adds the record's space to the one "
				     "before it (ext2_delete_entry); a new "
				     "name goes in the first record whose "
				     "slack holds it, else at the end.");
	g_string_append(why, "  The records as they are on the device:");
	for (guint i = 0; i < recs->len; i++) {
		const struct ino_rec *e =
		    &g_array_index(recs, struct ino_rec, i);
		g_string_append_printf(why, " %s at %u (%u)",
				       e->ino ? e->name : "(unused)", e->off,
				       e->rec_len);
		g_string_append(why, i + 1 < recs->len ? "," : ".");
	}
	sfs_lab_ask(sh, true, ans->str, why->str,
		    "The root directory's first block holds, in order, the "
		    "records of: %s.\nGive the rec_len of each, in that order.",
		    names->str);
	if (sh->figure->len == 0)
		ino_records_figure(sh->figure, "/", recs, bs);
	g_array_unref(recs);
	g_string_free(ans, TRUE);
	g_string_free(names, TRUE);
	g_string_free(why, TRUE);
}

static void ino_ask_numbers(struct sfs_lab_sheet *sh, struct ino_run *r,
			    const char *const *paths, unsigned n,
			    const char *why, const char *what)
{
	GString *ans = g_string_new(NULL), *list = g_string_new(NULL);
	GString *ex = g_string_new(why);

	for (unsigned i = 0; i < n; i++) {
		uint32_t ino = ino_of(r, paths[i]);

		g_string_append_printf(ans, "%u ", ino);
		g_string_append_printf(list, "%s%s", i ? ", " : "", paths[i]);
		g_string_append_printf(ex, "%s %s: %u (group %u)",
				       i ? "," : "", paths[i], ino,
				       (ino - 1) / 256);
	}
	g_string_append_c(ex, '.');
	sfs_lab_ask(sh, true, ans->str, ex->str, "%s: %s?", what, list->str);
	g_string_free(ans, TRUE);
	g_string_free(list, TRUE);
	g_string_free(ex, TRUE);
}

static void ino_ask_nlinks(struct sfs_lab_sheet *sh, struct ino_run *r,
			   const char *const *paths, unsigned n)
{
	GString *ans = g_string_new(NULL), *list = g_string_new(NULL);

	g_string_append(sh->figure, "\nlink counts:");
	for (unsigned i = 0; i < n; i++) {
		uint32_t nl = ino_nlink(r, paths[i]);

		g_string_append_printf(ans, "%u ", nl);
		g_string_append_printf(list, "%s%s", i ? ", " : "", paths[i]);
		g_string_append_printf(sh->figure, " %s=%u", paths[i], nl);
	}
	g_string_append_c(sh->figure, '\n');
	sfs_lab_ask(sh, true, ans->str,
		    "A file's link count is the number of names it has.  A "
		    "directory has one from its parent's entry, one from its "
		    "own \".\" and one from the \"..\" of each subdirectory "
		    "(2 + subdirectories).",
		    "The link counts (stat -c %%h) of: %s?", list->str);
	g_string_free(ans, TRUE);
	g_string_free(list, TRUE);
}

static const char ino_why_files[] =
    "A new file goes to its parent's group (find_group_other) and takes the "
    "lowest free inode there; a new subdirectory of a directory other "
    "than the root stays near its parent too.";

/* Level 1 and 2: one directory and files in the root. */
static int ino_build_root(const struct sfs_lab_params *p,
			  struct sfs_lab_sheet *sh, GRand *rnd, char **err)
{
	const char *w[8];
	char f[6][64], d[64], sub[64], lnk[64], nw[64];
	struct ino_run r;
	int rc, nf = 3 + g_rand_int_range(rnd, 0, 2);

	ino_pick_names(rnd, w, 8);
	for (int i = 0; i < nf; i++)
		g_snprintf(f[i], sizeof(f[i]), "/%s", w[i]);
	g_snprintf(d, sizeof(d), "/%s", w[6]);
	g_snprintf(sub, sizeof(sub), "%s/%s", d, w[7]);
	rc = ino_open(sh, "dirs=orlov", &r, err);
	if (rc)
		return rc;
	ino_touch(&r, f[0]);
	ino_mkdir(&r, d);
	for (int i = 1; i < nf; i++)
		ino_touch(&r, f[i]);
	ino_touch(&r, sub);
	if (p->level >= 2) {
		/* a hard link, a removal in the middle, a new name */
		const char *nn = w[nf + g_rand_int_range(rnd, 0, 6 - nf)];
		int gone = 1 + g_rand_int_range(rnd, 0, nf - 2);

		if (strcmp(nn, w[gone]) == 0 || strlen(nn) > 12)
			nn = "new";
		g_snprintf(lnk, sizeof(lnk), "%s/%s.lnk", d, w[0]);
		g_snprintf(nw, sizeof(nw), "/%s2", nn);
		ino_ln(&r, f[0], lnk);
		ino_rm(&r, f[gone]);
		ino_touch(&r, nw);
		if (g_rand_boolean(rnd)) {
			char to[80];

			g_snprintf(to, sizeof(to), "%s%s", d, f[nf - 1]);
			if (nf - 1 != gone) {
				ino_mv(&r, f[nf - 1], to);
			}
		}
	}
	ino_geometry(sh->scenario);
	g_string_append_printf(sh->scenario,
			       "\nThese commands run in its root "
			       "(mounted with -o %s):\n\n%s",
			       "dirs=orlov", r.script->str);
	g_string_append(sh->mount_script, r.script->str);

	if (p->level == 1) {
		const char *paths[8];
		unsigned n = 0;

		paths[n++] = f[0];
		paths[n++] = d;
		for (int i = 1; i < nf; i++)
			paths[n++] = f[i];
		paths[n++] = sub;
		char what[160];

		g_snprintf(what, sizeof(what),
			   "Orlov put the top-level directory %s in group %u "
			   "(its scan starts at a random group).  The inode "
			   "numbers, in the order made",
			   d, (ino_of(&r, d) - 1) / 256);
		ino_ask_numbers(sh, &r, paths, n, ino_why_files, what);
		ino_ask_records(sh, &r, false);
		{
			const char *lp[] = {"/", d, f[0]};
			ino_ask_nlinks(sh, &r, lp, 3);
		}
		{
			GArray *recs = ino_records(&r, "/");
			const struct ino_rec *last = &g_array_index(
			    recs, struct ino_rec, recs->len - 1);
			char *a = g_strdup_printf("%u", last->off);
			char *why = g_strdup_printf(
			    "The offsets add up the rec_len of the records "
			    "before: %s starts at %u and its record runs to "
			    "the end of the block (%u bytes).",
			    last->name, last->off, INO_BS - last->off);
			sfs_lab_ask(sh, false, a, why,
				    "At which byte offset of the block does "
				    "the record of /%s start?",
				    last->name);
			g_free(a);
			g_free(why);
			g_array_unref(recs);
		}
	} else {
		const char *paths[] = {nw, lnk};
		char whyn[512];

		g_snprintf(whyn, sizeof(whyn),
			   "%s  A hard link is a second name for the same "
			   "inode; rm frees an inode only when its last name "
			   "goes, and the next file takes the lowest free "
			   "number:",
			   ino_why_files);
		ino_ask_numbers(sh, &r, paths, 2, whyn,
				"After all the commands, the inode numbers of");
		ino_ask_records(sh, &r, true);
		{
			const char *lp[] = {"/", d, f[0]};
			ino_ask_nlinks(sh, &r, lp, 3);
		}
		{
			GArray *recs = ino_records(&r, "/");
			const struct ino_rec *hit = NULL;

			for (guint i = 0; i < recs->len; i++) {
				const struct ino_rec *e =
				    &g_array_index(recs, struct ino_rec, i);
				if (e->ino && strcmp(e->name, nw + 1) == 0)
					hit = e;
			}
			if (hit) {
				char *a = g_strdup_printf("%u", hit->off);
				char *why = g_strdup_printf(
				    "%s needs %u bytes; the first record with "
				    "that much slack past its own need is "
				    "where it goes: at offset %u.",
				    nw + 1, ino_need(nw + 1), hit->off);
				sfs_lab_ask(sh, false, a, why,
					    "At which byte offset of the "
					    "block is the record of %s?",
					    nw);
				g_free(a);
				g_free(why);
			}
			g_array_unref(recs);
		}
	}
	return ino_close(&r, err);
}

/* Level 3: the same tree under both directory policies. */
struct ino_tree {
	char top[4][32];
	char sub[3][64];
	char file[2][64];
	int ntop;
};

static void ino_make_tree(struct ino_run *r, const struct ino_tree *t)
{
	for (int i = 0; i < t->ntop; i++)
		ino_mkdir(r, t->top[i]);
	for (int i = 0; i < 3; i++)
		ino_mkdir(r, t->sub[i]);
	for (int i = 0; i < 2; i++)
		ino_touch(r, t->file[i]);
}

static void ino_groups_answer(struct ino_run *r, char (*paths)[32], int n,
			      GString *ans, GString *why)
{
	for (int i = 0; i < n; i++) {
		uint32_t g = (ino_of(r, paths[i]) - 1) / 256;

		g_string_append_printf(ans, "%u ", g);
		g_string_append_printf(why, "%s%s: group %u", i ? ", " : "",
				       paths[i], g);
	}
}

static void ino_group_table(struct ino_run *r, GString *s)
{
	struct sfs_fs *fs = r->fs;

	g_string_append(s, "  group  free blocks  free inodes  directories\n");
	sfs_lock(fs);
	for (uint32_t g = 0; g < fs->groups; g++)
		g_string_append_printf(
		    s, "  %5u  %11u  %11u  %11u\n", g,
		    sfs_le16(fs->gd[g].bg_free_blocks_count),
		    sfs_le16(fs->gd[g].bg_free_inodes_count),
		    sfs_le16(fs->gd[g].bg_used_dirs_count));
	sfs_unlock(fs);
}

static int ino_build_policies(const struct sfs_lab_params *p,
			      struct sfs_lab_sheet *sh, GRand *rnd, char **err)
{
	struct ino_tree t = {0};
	struct ino_run old, orl;
	const char *w[10];
	GString *ans, *why;
	int rc;

	ino_pick_names(rnd, w, 10);
	t.ntop = 3 + g_rand_int_range(rnd, 0, 2);
	for (int i = 0; i < t.ntop; i++)
		g_snprintf(t.top[i], sizeof(t.top[i]), "/%s", w[i]);
	g_snprintf(t.sub[0], sizeof(t.sub[0]), "%s/%s", t.top[0], w[4]);
	g_snprintf(t.sub[1], sizeof(t.sub[1]), "%s/%s", t.top[0], w[5]);
	g_snprintf(t.sub[2], sizeof(t.sub[2]), "%s/%s", t.sub[0], w[6]);
	g_snprintf(t.file[0], sizeof(t.file[0]), "%s/%s", t.top[0], w[7]);
	g_snprintf(t.file[1], sizeof(t.file[1]), "%s/%s", t.sub[2], w[8]);

	rc = ino_open(sh, "dirs=oldalloc", &old, err);
	if (rc)
		return rc;
	rc = ino_open(NULL, "dirs=orlov", &orl, err);
	if (rc) {
		ino_close(&old, NULL);
		return rc;
	}
	ino_geometry(sh->scenario);
	g_string_append(sh->scenario, "Its groups before the commands:\n\n");
	ino_group_table(&old, sh->scenario);
	ino_make_tree(&old, &t);
	ino_make_tree(&orl, &t);
	g_string_append_printf(sh->scenario,
			       "\nThe same commands run on two such "
			       "filesystems, one mounted -o dirs=oldalloc "
			       "(ext2's placement), one -o dirs=orlov (ext3 "
			       "and ext4's):\n\n%s",
			       old.script->str);
	g_string_append(sh->mount_script, old.script->str);

	ans = g_string_new(NULL);
	why = g_string_new("oldalloc (find_group_dir) puts a new directory, "
			   "wherever its parent is, in the group with the "
			   "most free blocks among those with at least the "
			   "average free inodes; each directory takes an "
			   "inode and a block there, which changes the next "
			   "choice.  ");
	ino_groups_answer(&old, t.top, t.ntop, ans, why);
	g_string_append_c(why, '.');
	sfs_lab_ask(sh, true, ans->str, why->str,
		    "Under dirs=oldalloc, which group holds each top-level "
		    "directory (%d of them, in the order made)?",
		    t.ntop);
	g_string_truncate(ans, 0);
	g_string_truncate(why, 0);
	{
		char subs[3][32];
		for (int i = 0; i < 3; i++)
			g_strlcpy(subs[i], t.sub[i], sizeof(subs[i]));
		g_string_append(why, "oldalloc does not look at the parent: ");
		ino_groups_answer(&old, subs, 3, ans, why);
		g_string_append_c(why, '.');
		sfs_lab_ask(sh, true, ans->str, why->str,
			    "Under dirs=oldalloc, which groups hold %s, %s "
			    "and %s?",
			    t.sub[0], t.sub[1], t.sub[2]);
	}
	/* Orlov: where the top-level directories went is given (its scan
	 * starts at a random group); the rest follows from it */
	g_string_truncate(ans, 0);
	g_string_truncate(why, 0);
	{
		GString *given = g_string_new(NULL);
		GHashTable *seen = g_hash_table_new(NULL, NULL);
		char subs[3][32];

		ino_groups_answer(&orl, t.top, t.ntop, given, why);
		for (int i = 0; i < t.ntop; i++)
			g_hash_table_add(
			    seen, GUINT_TO_POINTER(
				      (ino_of(&orl, t.top[i]) - 1) / 256 + 1));
		g_string_printf(ans, "%u", g_hash_table_size(seen));
		g_string_prepend(why,
				 "Orlov gives each top-level directory the "
				 "group with the fewest directories among "
				 "those with at least the average free inodes "
				 "and blocks, scanning from a random group: "
				 "so they spread out.  ");
		g_string_append_c(why, '.');
		sfs_lab_ask(sh, false, ans->str, why->str,
			    "Under dirs=orlov, over how many different groups "
			    "are the %d top-level directories spread?",
			    t.ntop);
		g_string_truncate(ans, 0);
		g_string_truncate(why, 0);
		for (int i = 0; i < 3; i++)
			g_strlcpy(subs[i], t.sub[i], sizeof(subs[i]));
		g_string_append(why, "Below the top level, Orlov keeps a "
				     "directory in its parent's group while "
				     "that group is not short of inodes, "
				     "blocks or crowded with directories: ");
		ino_groups_answer(&orl, subs, 3, ans, why);
		g_string_append_c(why, '.');
		sfs_lab_ask(sh, true, ans->str, why->str,
			    "Under dirs=orlov, %s landed in group %u.  Which "
			    "groups hold %s, %s and %s?",
			    t.top[0], (ino_of(&orl, t.top[0]) - 1) / 256,
			    t.sub[0], t.sub[1], t.sub[2]);
		g_string_free(given, TRUE);
		g_hash_table_destroy(seen);
	}
	{
		const char *paths[] = {t.file[0], t.file[1]};
		ino_ask_numbers(sh, &old, paths, 2, ino_why_files,
				"Under dirs=oldalloc, the inode numbers of");
	}
	g_string_free(ans, TRUE);
	g_string_free(why, TRUE);
	g_string_append(sh->figure, "Groups after the commands, "
				    "dirs=oldalloc:\n\n");
	ino_group_table(&old, sh->figure);
	g_string_append(sh->figure, "\ndirs=orlov:\n\n");
	ino_group_table(&orl, sh->figure);
	rc = ino_close(&orl, err);
	if (rc) {
		ino_close(&old, NULL);
		return rc;
	}
	return ino_close(&old, err);
}

static int ino_build(const struct sfs_lab_params *p, struct sfs_lab_sheet *sh,
		     char **err)
{
	GRand *rnd = sfs_lab_rand(&sfs_lab_inode, p);
	int rc;

	if (p->level <= 2)
		rc = ino_build_root(p, sh, rnd, err);
	else
		rc = ino_build_policies(p, sh, rnd, err);
	g_rand_free(rnd);
	return rc;
}

const struct sfs_lab sfs_lab_inode = {
    .name = "inode",
    .summary = "inode numbers, group placement, directory records, links",
    .teaches =
	"Where a new inode goes and what a directory looks like inside.  A "
	"file takes the lowest free inode in its parent's group; directories "
	"are placed by a policy (ext2's oldalloc spreads them by free space, "
	"Orlov spreads the top level and keeps subtrees together).  A linear "
	"directory is a chain of records, each 8 bytes plus the name rounded "
	"to 4, the last one reaching the end of the block; rm merges a "
	"record into the one before it and a new name reuses the first gap "
	"that fits.  Link counts count names, and for a directory its "
	"subdirectories' \"..\" entries.",
    .levels = 3,
    .level_help = ino_levels,
    .build = ino_build,
};
