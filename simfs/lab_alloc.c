/*
 * lab_alloc.c - `simfs lab alloc`: which blocks each file gets, under
 * which allocator, and the fragmentation that results.
 *
 * The scenario is a list of dd appends and rm's on a fresh 8 MiB
 * filesystem of 4 KiB blocks (one group of 2048 blocks: small enough that
 * ext2's per-process "colour" offset, (pid % 16) * 2048 blocks, always
 * falls outside the group and is 0, so a mount places blocks as the lab
 * does whatever the pids).  Each dd is one open, one write of the whole
 * chunk at the end of the file, one release, as the FUSE mount sees it;
 * the lab makes the same calls (sfs_open, sfs_write, sfs_release), syncs,
 * and reads each file's runs back (sfs_lab_file_runs) and the block
 * bitmap for the map.
 *
 * Levels: 1 files written one after another, one removed, one more; 2
 * appends to several files in turn with a removal in between; 3 the level
 * 2 scenario under four allocators at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include <glib.h>

#include "format.h"
#include "frag.h"
#include "fs.h"
#include "fs_priv.h"
#include "lab.h"

#define AL_SIZE (8u << 20)
#define AL_BS 4096u
#define AL_NFILES 5
#define AL_MAXOPS 32
#define AL_MAP_ROW 64 /* blocks per row of the map */

extern const struct sfs_lab sfs_lab_alloc;

static const char *const al_levels[] = {
    "files written one after another, one removed, one more: one allocator",
    "appends to several files in turn, with a removal: one allocator",
    "the same appends under blockmap, reservation, mballoc and delalloc",
};

struct al_policy {
	const char *name; /* as the questions say it */
	const char *opts; /* mount options */
	const char *how;  /* one line for the explanations */
};

static const struct al_policy al_policies[] = {
    {"blockmap", "alloc=blockmap",
     "ext2's block map: the goal is the block after the file's last one "
     "(for a new file, the start of its group); if it is taken, the "
     "first free block up to the next multiple of 64, else the first "
     "wholly free byte of the bitmap (8 aligned free blocks) stepping "
     "back over up to 7 free blocks before it, else any free block; the "
     "run then grows while the next block is free"},
    {"reservation", "alloc=reservation",
     "ext3's reservation windows: each file first reserves a window of 8 "
     "free blocks that other files' allocations skip, and takes its blocks "
     "from it; a new window when it is used up (doubling when it was "
     "well used)"},
    {"extent", "alloc=extent",
     "ext4's extent tree with ext2's bitmap search: the goal is the block "
     "after the file's last one (for a new file, the start of its "
     "group), then the same search as blockmap"},
    {"mballoc", "alloc=mballoc",
     "ext4's mballoc: a small file (under 16 blocks) takes its blocks from "
     "the locality group's preallocation, 512 blocks at a 512-aligned "
     "free stretch (here 512-1023) that all small files share in the "
     "order they write, so files written in turn interleave and a freed "
     "gap stays unused while the preallocation lasts"},
    {"delalloc", "alloc=delalloc",
     "ext4's mballoc with delayed allocation: writes only reserve space; "
     "blocks are placed at write-back (here at sync), each file's dirty "
     "blocks in one request, so a file written in pieces still gets one "
     "run"},
};

enum al_kind {
	AL_WRITE, /* append blocks (creating the file) */
	AL_RM,
};

struct al_op {
	enum al_kind kind;
	int file;	 /* 0 .. AL_NFILES-1: /a ... */
	uint32_t blocks; /* AL_WRITE */
};

struct al_scen {
	struct al_op ops[AL_MAXOPS];
	int nops;
	int nfiles; /* files used: a .. */
};

/* What one allocator made of the scenario. */
struct al_result {
	const struct al_policy *pol;
	GArray *runs[AL_NFILES]; /* data and metadata runs; NULL: removed */
	uint32_t first_free;	 /* before the scenario */
	uint32_t last_used;	 /* after it */
	uint8_t *used;		 /* block bitmap after it, one byte each */
};

static char al_name(int file)
{
	return (char)('a' + file);
}

static const struct al_policy *al_policy(const char *name)
{
	for (unsigned i = 0; i < G_N_ELEMENTS(al_policies); i++)
		if (strcmp(al_policies[i].name, name) == 0)
			return &al_policies[i];
	return NULL;
}

static void al_add(struct al_scen *s, enum al_kind k, int file,
		   uint32_t blocks)
{
	if (s->nops >= AL_MAXOPS)
		return;
	s->ops[s->nops].kind = k;
	s->ops[s->nops].file = file;
	s->ops[s->nops].blocks = blocks;
	s->nops++;
}

/* Level 1: a, b, c (and d) one after another; one of them removed; one
 * more file larger than the gap it left. */
static void al_scen_serial(GRand *rnd, struct al_scen *s)
{
	int n = 3 + g_rand_int_range(rnd, 0, 2);
	int gone = g_rand_int_range(rnd, 0, n - 1);
	uint32_t sz[AL_NFILES] = {0};

	for (int f = 0; f < n; f++) {
		sz[f] = (uint32_t)g_rand_int_range(rnd, 1, 6);
		al_add(s, AL_WRITE, f, sz[f]);
	}
	al_add(s, AL_RM, gone, 0);
	al_add(s, AL_WRITE, n, sz[gone] + (uint32_t)g_rand_int_range(rnd, 1, 4));
	s->nfiles = n + 1;
}

/* Level 2 and 3: two or three files appended in turn, one removed after a
 * few rounds, then the others go on and a new file follows. */
static void al_scen_interleaved(GRand *rnd, struct al_scen *s)
{
	int n = 2 + g_rand_int_range(rnd, 0, 2);
	int rounds = 3 + g_rand_int_range(rnd, 0, 2);
	int gone = g_rand_int_range(rnd, 0, n);
	int cut = 1 + g_rand_int_range(rnd, 0, rounds - 1);

	for (int r = 0; r < rounds; r++) {
		if (r == cut)
			al_add(s, AL_RM, gone, 0);
		for (int f = 0; f < n; f++) {
			if (r >= cut && f == gone)
				continue;
			al_add(s, AL_WRITE, f,
			       (uint32_t)g_rand_int_range(rnd, 1, 4));
		}
	}
	al_add(s, AL_WRITE, n, (uint32_t)g_rand_int_range(rnd, 3, 7));
	s->nfiles = n + 1;
}

static void al_script(const struct al_scen *s, GString *out)
{
	for (int i = 0; i < s->nops; i++) {
		const struct al_op *o = &s->ops[i];

		if (o->kind == AL_RM)
			g_string_append_printf(out, "rm %c\n", al_name(o->file));
		else
			g_string_append_printf(
			    out,
			    "dd if=/dev/zero of=%c bs=%u count=1 "
			    "oflag=append conv=notrunc status=none\n",
			    al_name(o->file), o->blocks * AL_BS);
	}
}

/* The block bitmap of group 0 (the only one), one byte per block. */
static int al_bitmap(struct sfs_fs *fs, uint8_t *used)
{
	uint8_t *buf = g_malloc(AL_BS);
	uint32_t blk;
	int rc;

	rc = sfs_fs_sync(fs);
	sfs_lock(fs);
	blk = sfs_le32(fs->gd[0].bg_block_bitmap);
	sfs_unlock(fs);
	if (rc == 0)
		rc = sfs_bdev_read(sfs_fs_bdev(fs), SFS_IO_OTHER,
				   (uint64_t)blk * AL_BS, buf, AL_BS);
	for (uint32_t b = 0; rc == 0 && b < AL_SIZE / AL_BS; b++)
		used[b] = (buf[b / 8] >> (b % 8)) & 1;
	g_free(buf);
	return rc;
}

static void al_result_clear(struct al_result *r)
{
	for (int f = 0; f < AL_NFILES; f++)
		if (r->runs[f])
			g_array_unref(r->runs[f]);
	g_free(r->used);
	memset(r, 0, sizeof(*r));
}

/* Run s through the engine under pol; r filled.  0 or -errno, *err. */
static int al_run(struct sfs_lab_sheet *sh, const struct al_scen *s,
		  const struct al_policy *pol, struct al_result *r,
		  char **err)
{
	const struct sfs_lab_fs_spec spec = {
	    .size_bytes = AL_SIZE,
	    .block_size = AL_BS,
	    .mount_opts = pol->opts,
	};
	uint32_t ino[AL_NFILES] = {0};
	uint8_t *zero = g_malloc0(8 * AL_BS);
	struct sfs_fs *fs;
	int rc;

	memset(r, 0, sizeof(*r));
	r->pol = pol;
	r->used = g_malloc0(AL_SIZE / AL_BS);
	rc = sfs_lab_fs_open(sh, &spec, &fs, err);
	if (rc) {
		g_free(zero);
		return rc;
	}
	rc = al_bitmap(fs, r->used);
	while (rc == 0 && r->first_free < AL_SIZE / AL_BS &&
	       r->used[r->first_free])
		r->first_free++;
	for (int i = 0; rc == 0 && i < s->nops; i++) {
		const struct al_op *o = &s->ops[i];
		char name[2] = {al_name(o->file), 0};
		struct sfs_attr at;
		size_t done;

		if (o->kind == AL_RM) {
			rc = sfs_unlink(fs, SFS_ROOT_INO, name);
			ino[o->file] = 0;
			continue;
		}
		if (!ino[o->file]) {
			rc = sfs_mknod(fs, SFS_ROOT_INO, name,
				       SFS_S_IFREG | 0644, 0, 0, 0, &at);
			if (rc)
				break;
			ino[o->file] = at.ino;
		}
		rc = sfs_open(fs, ino[o->file], O_WRONLY | O_APPEND);
		if (rc)
			break;
		rc = sfs_getattr(fs, ino[o->file], &at);
		if (rc == 0)
			rc = sfs_write(fs, ino[o->file], at.size, zero,
				       (size_t)o->blocks * AL_BS, &done);
		if (sfs_release(fs, ino[o->file]) && rc == 0)
			rc = -EIO;
	}
	if (rc == 0)
		rc = al_bitmap(fs, r->used);
	for (int f = 0; rc == 0 && f < s->nfiles; f++)
		if (ino[f])
			rc = sfs_lab_file_runs(fs, ino[f], &r->runs[f]);
	for (uint32_t b = 0; b < AL_SIZE / AL_BS; b++)
		if (r->used[b])
			r->last_used = b;
	if (rc && !*err)
		*err = g_strdup_printf("the scenario under %s: %s", pol->name,
				       g_strerror(-rc));
	if (sfs_fs_close(fs) && rc == 0) {
		rc = -EIO;
		*err = g_strdup("closing the lab filesystem failed");
	}
	g_free(zero);
	return rc;
}

/* "35-38 41" for the data runs of runs; the metadata runs in *meta. */
static void al_runs_text(const GArray *runs, GString *out, GString *meta)
{
	for (guint i = 0; i < runs->len; i++) {
		const struct sfs_frag_run *fr =
		    &g_array_index(runs, struct sfs_frag_run, i);
		GString *to = fr->meta ? meta : out;

		if (!to)
			continue;
		if (to->len)
			g_string_append_c(to, ' ');
		if (fr->len == 1)
			g_string_append_printf(to, "%u", (unsigned)fr->pblk);
		else
			g_string_append_printf(to, "%u-%u", (unsigned)fr->pblk,
					       (unsigned)(fr->pblk + fr->len - 1));
	}
}

/* The map of blocks first_free .. last_used: a letter per file's data
 * block, upper case for its mapping blocks, '#' other used, '.' free. */
static void al_map(const struct al_scen *s, const struct al_result *r,
		   GString *fig)
{
	uint32_t lo = r->first_free - r->first_free % AL_MAP_ROW;
	uint32_t hi = r->last_used | (AL_MAP_ROW - 1);
	uint32_t nb = AL_SIZE / AL_BS;
	char *cell = g_malloc(nb);

	for (uint32_t b = 0; b < nb; b++)
		cell[b] = r->used[b] ? '#' : '.';
	for (int f = 0; f < s->nfiles; f++) {
		if (!r->runs[f])
			continue;
		for (guint i = 0; i < r->runs[f]->len; i++) {
			const struct sfs_frag_run *fr =
			    &g_array_index(r->runs[f], struct sfs_frag_run, i);
			for (uint32_t k = 0; k < fr->len; k++)
				if (fr->pblk + k < nb)
					cell[fr->pblk + k] =
					    fr->meta ? g_ascii_toupper(
							   al_name(f))
						     : al_name(f);
		}
	}
	g_string_append_printf(fig,
			       "%s, blocks %u-%u (a-e data of /a-/e, A-E their "
			       "mapping blocks, # metadata, . free):\n",
			       r->pol->name, lo, MIN(hi, nb - 1));
	for (uint32_t row = lo; row <= hi && row < nb; row += AL_MAP_ROW) {
		uint32_t skip = row;

		while (skip < MIN(hi + 1, nb) && cell[skip] == '.')
			skip++;
		if (skip - row >= 2 * AL_MAP_ROW) { /* rows all free */
			skip -= skip % AL_MAP_ROW;
			g_string_append_printf(fig, "  %5u  (free up to %u)\n",
					       row, skip - 1);
			row = skip - AL_MAP_ROW;
			continue;
		}
		g_string_append_printf(fig, "  %5u  ", row);
		for (uint32_t b = row; b < row + AL_MAP_ROW && b < nb; b++) {
			g_string_append_c(fig, cell[b]);
			if ((b + 1) % 16 == 0 && b + 1 < row + AL_MAP_ROW)
				g_string_append_c(fig, ' ');
		}
		g_string_append_c(fig, '\n');
	}
	for (int f = 0; f < s->nfiles; f++) {
		GString *d, *m;

		if (!r->runs[f])
			continue;
		d = g_string_new(NULL);
		m = g_string_new(NULL);
		al_runs_text(r->runs[f], d, m);
		g_string_append_printf(fig, "  /%c  data %s%s%s\n", al_name(f),
				       d->str, m->len ? "  mapping " : "",
				       m->str);
		g_string_free(d, TRUE);
		g_string_free(m, TRUE);
	}
}

static void al_scenario_text(const struct al_scen *s, const char *who,
			     const struct al_result *r, struct sfs_lab_sheet *sh)
{
	GString *script = g_string_new(NULL);

	al_script(s, script);
	g_string_append_printf(
	    sh->scenario,
	    "A fresh filesystem: 8 MiB of 4 KiB blocks, one group of 2048 "
	    "blocks.  The superblock, descriptors, bitmaps, inode table and "
	    "the root and lost+found directories take blocks 0-%u; blocks "
	    "%u-2047 are free.\n\n"
	    "%s.  These commands run in its root, one after another (each dd "
	    "appends its bs bytes in one write; a block is 4096 bytes):\n\n%s",
	    r->first_free - 1, r->first_free, who, script->str);
	if (!sh->mount_script->len)
		g_string_append(sh->mount_script, script->str);
	g_string_free(script, TRUE);
}

/* Which files are alive at the end, as "/a, /c, /d". */
static void al_live(const struct al_scen *s, const struct al_result *r,
		    GString *out)
{
	for (int f = 0; f < s->nfiles; f++)
		if (r->runs[f])
			g_string_append_printf(out, "%s/%c", out->len ? ", " : "",
					       al_name(f));
}

static void al_ask_runs(struct sfs_lab_sheet *sh, const struct al_scen *s,
			const struct al_result *r, int f)
{
	GString *ans = g_string_new(NULL), *meta = g_string_new(NULL);
	GString *why = g_string_new(NULL);

	al_runs_text(r->runs[f], ans, meta);
	g_string_append_printf(why, "See how %s places blocks, in the "
			       "scenario; the map shows the result.",
			       r->pol->name);
	if (meta->len)
		g_string_append_printf(why,
				       "  Its block map also needs a mapping "
				       "(indirect) block: %s.",
				       meta->str);
	g_string_append_printf(why, "  /%c ends up in %u run%s: %s.",
			       al_name(f), sfs_frag_count_extents(r->runs[f]),
			       sfs_frag_count_extents(r->runs[f]) == 1 ? ""
								       : "s",
			       ans->str);
	sfs_lab_ask(sh, true, ans->str, why->str,
		    "Under %s, which blocks hold /%c's data?  Give its runs in "
		    "file order as FIRST-LAST (a run of one block as N).",
		    r->pol->name, al_name(f));
	g_string_free(ans, TRUE);
	g_string_free(meta, TRUE);
	g_string_free(why, TRUE);
}

/* "2 1 3": the runs of each live file; *total their sum. */
static void al_counts(const struct al_scen *s, const struct al_result *r,
		      GString *ans, GString *why, uint32_t *total)
{
	*total = 0;
	for (int f = 0; f < s->nfiles; f++) {
		uint32_t n;

		if (!r->runs[f])
			continue;
		n = sfs_frag_count_extents(r->runs[f]);
		g_string_append_printf(ans, "%u ", n);
		if (why)
			g_string_append_printf(why, "%s/%c %u", why->len ? ", " : "",
					       al_name(f), n);
		*total += n;
	}
}

static int al_build_one(const struct sfs_lab_params *p,
			struct sfs_lab_sheet *sh, GRand *rnd, char **err)
{
	static const char *const l1[] = {"blockmap", "extent", "mballoc"};
	static const char *const l2[] = {"blockmap", "reservation", "mballoc",
					 "delalloc"};
	struct al_scen s = {0};
	struct al_result r;
	const struct al_policy *pol;
	GString *live = g_string_new(NULL), *ans, *why;
	char who[128];
	uint32_t total;
	int rc;

	if (p->level == 1) {
		pol = al_policy(l1[g_rand_int_range(rnd, 0, G_N_ELEMENTS(l1))]);
		al_scen_serial(rnd, &s);
	} else {
		pol = al_policy(l2[g_rand_int_range(rnd, 0, G_N_ELEMENTS(l2))]);
		al_scen_interleaved(rnd, &s);
	}
	rc = al_run(sh, &s, pol, &r, err);
	if (rc) {
		g_string_free(live, TRUE);
		return rc;
	}
	g_snprintf(who, sizeof(who), "It is mounted with -o %s", pol->opts);
	al_scenario_text(&s, who, &r, sh);
	g_string_append_printf(sh->scenario, "\nHow %s places blocks: %s.\n",
			       pol->name, pol->how);
	for (int f = 0; f < s.nfiles; f++)
		if (r.runs[f])
			al_ask_runs(sh, &s, &r, f);
	al_live(&s, &r, live);
	ans = g_string_new(NULL);
	why = g_string_new(NULL);
	al_counts(&s, &r, ans, why, &total);
	g_string_prepend(why, "A run (an extent, as filefrag counts them) is a "
			      "stretch of blocks consecutive both in the file "
			      "and on the disk: ");
	g_string_append_printf(why, "; %u in all.", total);
	sfs_lab_ask(sh, true, ans->str, why->str,
		    "How many runs (extents) does each of %s have?",
		    live->str);
	al_map(&s, &r, sh->figure);
	al_result_clear(&r);
	g_string_free(live, TRUE);
	g_string_free(ans, TRUE);
	g_string_free(why, TRUE);
	return 0;
}

static int al_build_many(const struct sfs_lab_params *p,
			 struct sfs_lab_sheet *sh, GRand *rnd, char **err)
{
	static const char *const names[] = {"blockmap", "reservation",
					    "mballoc", "delalloc"};
	struct al_result r[G_N_ELEMENTS(names)];
	struct al_scen s = {0};
	GString *live = g_string_new(NULL), *best = g_string_new(NULL);
	GString *bestwhy = g_string_new(NULL);
	uint32_t least = UINT32_MAX, tot[G_N_ELEMENTS(names)];
	int rc = 0;
	unsigned n = 0;

	al_scen_interleaved(rnd, &s);
	for (; n < G_N_ELEMENTS(names) && rc == 0; n++) {
		rc = al_run(sh, &s, al_policy(names[n]), &r[n], err);
		if (rc)
			break;
	}
	if (rc) {
		while (n--)
			al_result_clear(&r[n]);
		g_string_free(live, TRUE);
		g_string_free(best, TRUE);
		g_string_free(bestwhy, TRUE);
		return rc;
	}
	al_scenario_text(&s,
			 "The same commands run on four such filesystems, "
			 "mounted with -o alloc=blockmap, alloc=reservation, "
			 "alloc=mballoc and alloc=delalloc (--mount makes the "
			 "first)",
			 &r[0], sh);
	g_string_append(sh->scenario, "\nHow they place blocks:\n");
	for (unsigned i = 0; i < n; i++)
		g_string_append_printf(sh->scenario, "\n%s: %s.\n",
				       r[i].pol->name, r[i].pol->how);
	al_live(&s, &r[0], live);
	for (unsigned i = 0; i < n; i++) {
		GString *ans = g_string_new(NULL), *why = g_string_new(NULL);
		GString *cnt = g_string_new(NULL);

		al_counts(&s, &r[i], ans, cnt, &tot[i]);
		g_string_printf(why, "Runs under %s: %s (%u in all).",
				r[i].pol->name, cnt->str, tot[i]);
		g_string_free(cnt, TRUE);
		sfs_lab_ask(sh, true, ans->str, why->str,
			    "Under %s, how many runs (extents) does each of "
			    "%s have?",
			    r[i].pol->name, live->str);
		least = MIN(least, tot[i]);
		g_string_free(ans, TRUE);
		g_string_free(why, TRUE);
	}
	for (unsigned i = 0; i < n; i++) {
		if (tot[i] == least)
			g_string_append_printf(best, "%s ", r[i].pol->name);
		g_string_append_printf(bestwhy, "%s%s %u", i ? ", " : "",
				       r[i].pol->name, tot[i]);
	}
	g_string_append(bestwhy, " runs in all.");
	sfs_lab_ask(sh, true, best->str, bestwhy->str,
		    "Which of the four leaves the fewest runs in all?  (If "
		    "several tie, name each, in the order blockmap, "
		    "reservation, mballoc, delalloc.)");
	al_ask_runs(sh, &s, &r[3], 0 + (r[3].runs[0] ? 0 : 1));
	for (unsigned i = 0; i < n; i++) {
		if (i)
			g_string_append_c(sh->figure, '\n');
		al_map(&s, &r[i], sh->figure);
		al_result_clear(&r[i]);
	}
	g_string_free(live, TRUE);
	g_string_free(best, TRUE);
	g_string_free(bestwhy, TRUE);
	return 0;
}

static int al_build(const struct sfs_lab_params *p, struct sfs_lab_sheet *sh,
		    char **err)
{
	GRand *rnd = sfs_lab_rand(&sfs_lab_alloc, p);
	int rc = p->level <= 2 ? al_build_one(p, sh, rnd, err)
			       : al_build_many(p, sh, rnd, err);

	g_rand_free(rnd);
	return rc;
}

const struct sfs_lab sfs_lab_alloc = {
    .name = "alloc",
    .summary = "which blocks each file gets under each allocator",
    .teaches =
	"Block allocation and fragmentation.  ext2's block map puts each "
	"new block after the file's last one or at the next free block, so "
	"files written in turn interleave and a freed gap is refilled by "
	"whatever comes next; ext3's reservation windows keep a few blocks "
	"ahead of each file for it alone; ext4's mballoc serves small files "
	"from a shared preallocation; delayed allocation places a file's "
	"blocks only at write-back, all at once.  The student predicts each "
	"file's runs and counts the extents, then sees the map.",
    .levels = 3,
    .level_help = al_levels,
    .build = al_build,
};
