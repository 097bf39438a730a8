/*
 * crash_image.c - reading a crashed or recovered image back
 * (crash_priv.h): the tree through the engine (crash_tree_*), e2fsck runs and
 * their verdicts, image copies and superblock flags, simfs recovery.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>
#include <xxhash.h>

#include "crash_priv.h"

static void tent_free(gpointer p)
{
	struct tent *t = p;

	g_free(t->path);
	g_free(t->name);
	g_free(t->blk);
	g_free(t);
}

void crash_tree_free(struct tree *t)
{
	if (t->e)
		g_ptr_array_free(t->e, TRUE);
	t->e = NULL;
}

struct dirent_rec {
	char *name;
	sfs_ino_t ino;
};

static int collect_cb(void *ctx, const char *name, size_t len, sfs_ino_t ino,
		      uint8_t ftype, uint64_t next_off)
{
	GArray *a = ctx;
	struct dirent_rec r = {g_strndup(name, len), ino};

	g_array_append_val(a, r);
	return 0;
}

static int read_file(struct sfs_fs *fs, struct tent *t, uint32_t bs,
		     uint64_t dev_bytes, struct cb_gen *g)
{
	uint8_t *buf = g_malloc(bs);
	uint64_t size = MIN(t->size, dev_bytes);
	uint64_t h = 0;
	int rc = 0;

	t->nblk = (uint32_t)((size + bs - 1) / bs);
	if (t->in_crash)
		t->blk = g_new0(struct bsum, t->nblk ? t->nblk : 1);
	for (uint32_t i = 0; i < t->nblk; i++) {
		size_t got = 0;

		rc = sfs_read(fs, t->ino, (uint64_t)i * bs, bs, buf, &got);
		if (rc)
			break;
		if (got < bs)
			memset(buf + got, 0, bs - got);
		h = XXH64(buf, got, h);
		if (t->in_crash)
			crash_cb_classify(g, buf, bs, &t->blk[i]);
	}
	t->hash = h;
	g_free(buf);
	return rc;
}

static int tree_walk(struct sfs_fs *fs, struct tree *tr, sfs_ino_t dino,
		     uint32_t dgen, const char *path, bool in_crash,
		     uint64_t dev_bytes, struct cb_gen *g, int depth)
{
	GArray *ents = g_array_new(FALSE, FALSE, sizeof(struct dirent_rec));
	int rc;

	if (depth > 64) {
		g_array_free(ents, TRUE);
		return -ELOOP;
	}
	rc = sfs_readdir(fs, dino, 0, collect_cb, ents);
	for (guint i = 0; rc == 0 && i < ents->len; i++) {
		struct dirent_rec *d =
		    &g_array_index(ents, struct dirent_rec, i);
		struct sfs_attr a;
		struct tent *t;

		if (strcmp(d->name, ".") == 0 || strcmp(d->name, "..") == 0)
			continue;
		rc = sfs_getattr(fs, d->ino, &a);
		if (rc)
			break;
		t = g_new0(struct tent, 1);
		t->path = g_strdup_printf("%s/%s", path, d->name);
		t->name = g_strdup(d->name);
		t->ino = d->ino;
		t->pino = dino;
		t->gen = a.generation;
		t->pgen = dgen;
		t->mode = a.mode;
		t->nlink = a.nlink;
		t->size = a.size;
		t->in_crash =
		    in_crash || (depth == 0 && strcmp(d->name, CRASH_DIR) == 0);
		g_ptr_array_add(tr->e, t);
		if ((a.mode & SFS_S_IFMT) == SFS_S_IFDIR)
			rc = tree_walk(fs, tr, d->ino, a.generation, t->path,
				       t->in_crash, dev_bytes, g, depth + 1);
		else if ((a.mode & SFS_S_IFMT) == SFS_S_IFREG)
			rc = read_file(fs, t, tr->bs, dev_bytes, g);
		else if ((a.mode & SFS_S_IFMT) == SFS_S_IFLNK) {
			char target[4096];
			size_t len = 0;

			rc = sfs_readlink(fs, d->ino, target, sizeof(target),
					  &len);
			t->hash = XXH64(target, len, 0);
		}
	}
	for (guint i = 0; i < ents->len; i++)
		g_free(g_array_index(ents, struct dirent_rec, i).name);
	g_array_free(ents, TRUE);
	return rc;
}

/* Read the whole tree of the image at img (read-only).  0 or -errno with
 * a message in err. */
int crash_tree_load(const char *img, const struct sfs_config *base,
		    struct tree *tr, char *err, size_t errlen)
{
	struct sfs_config cfg = *base;
	struct sfs_bdev *bd;
	struct sfs_fs *fs;
	struct sfs_attr root;
	struct cb_gen *g;
	char *msg = NULL;
	int rc;

	cfg.ro = true;
	cfg.direct = false;
	cfg.mem_bytes = 4u << 20;
	g_strlcpy(cfg.device, "none", sizeof(cfg.device));
	cfg.stats_path[0] = 0;
	cfg.iolog_path[0] = 0;
	tr->e = g_ptr_array_new_with_free_func(tent_free);
	rc = sfs_bdev_open_file(img, SFS_BDEV_RDONLY, 0, &bd);
	if (rc) {
		g_snprintf(err, errlen, "cannot open %s: %s", img,
			   g_strerror(-rc));
		return rc;
	}
	uint64_t dev_bytes = sfs_bdev_size_bytes(bd);
	rc = sfs_fs_open(bd, &cfg, &fs, &msg);
	if (rc) {
		g_snprintf(err, errlen, "cannot open %s to read it: %s", img,
			   msg ? msg : g_strerror(-rc));
		g_free(msg);
		return rc;
	}
	tr->bs = sfs_fs_block_size(fs);
	g = g_new0(struct cb_gen, 1);
	rc = sfs_getattr(fs, SFS_ROOT_INO, &root);
	if (!rc)
		rc = tree_walk(fs, tr, SFS_ROOT_INO, root.generation, "", false,
			       dev_bytes, g, 0);
	if (rc)
		g_snprintf(err, errlen, "reading the tree of %s: %s", img,
			   g_strerror(-rc));
	g_free(g);
	sfs_fs_close(fs);
	return rc;
}

/* The whole tree as sorted lines: what two recoveries must agree on. */
char *crash_tree_canon(const struct tree *tr)
{
	GPtrArray *l = g_ptr_array_new_with_free_func(g_free);

	for (guint i = 0; i < tr->e->len; i++) {
		const struct tent *t = tr->e->pdata[i];
		bool dir = (t->mode & SFS_S_IFMT) == SFS_S_IFDIR;

		g_ptr_array_add(
		    l, g_strdup_printf("%s mode=%o ino=%u links=%u size=%llu "
				       "data=%016llx",
				       t->path, t->mode, t->ino, t->nlink,
				       dir ? 0ULL : (unsigned long long)t->size,
				       (unsigned long long)t->hash));
	}
	return crash_join_sorted(l);
}

uint64_t crash_ig_key(sfs_ino_t ino, uint32_t gen)
{
	return (uint64_t)ino << 32 | gen;
}

/* Model id of (ino, gen) as text, "?ino" if the model has none. */
static void id_text(GHashTable *idmap, sfs_ino_t ino, uint32_t gen, char *buf,
		    size_t len)
{
	uint64_t k = crash_ig_key(ino, gen);
	gpointer v = g_hash_table_lookup(idmap, &k);

	if (v)
		g_snprintf(buf, len, "%u", GPOINTER_TO_UINT(v) - 1);
	else
		g_snprintf(buf, len, "?%u", ino);
}

/* The /crash subtree as crash_model_canon writes it, objects named by id. */
char *crash_tree_ns_canon(const struct tree *tr, GHashTable *idmap, bool sizes)
{
	GPtrArray *l = g_ptr_array_new_with_free_func(g_free);

	for (guint i = 0; i < tr->e->len; i++) {
		const struct tent *t = tr->e->pdata[i];
		uint32_t type = t->mode & SFS_S_IFMT;
		char id[16], pid[16];

		if (!t->in_crash)
			continue;
		id_text(idmap, t->ino, t->gen, id, sizeof(id));
		if (strcmp(t->path, "/" CRASH_DIR) == 0) {
			g_ptr_array_add(l,
					g_strdup_printf("%s " CRASH_DIR " d %u",
							id, t->nlink));
			continue;
		}
		id_text(idmap, t->pino, t->pgen, pid, sizeof(pid));
		if (type == SFS_S_IFREG && !sizes) {
			g_ptr_array_add(l,
					g_strdup_printf("%s/%s f %s - %u", pid,
							t->name, id, t->nlink));
			continue;
		}
		g_ptr_array_add(
		    l, g_strdup_printf("%s/%s %c %s %llu %u", pid, t->name,
				       type == SFS_S_IFDIR   ? 'd'
				       : type == SFS_S_IFREG ? 'f'
							     : '?',
				       id,
				       type == SFS_S_IFDIR
					   ? 0ULL
					   : (unsigned long long)t->size,
				       t->nlink));
	}
	return crash_join_sorted(l);
}

/* First line of a missing from b (into buf), "" if none. */
void crash_first_missing(const char *a, const char *b, char *buf, size_t len)
{
	char **la = g_strsplit(a, "\n", -1);
	GHashTable *sb = g_hash_table_new(g_str_hash, g_str_equal);
	char **lb = g_strsplit(b, "\n", -1);

	buf[0] = 0;
	for (char **l = lb; *l; l++)
		g_hash_table_add(sb, *l);
	for (char **l = la; *l; l++) {
		if (**l && !g_hash_table_contains(sb, *l)) {
			g_strlcpy(buf, *l, len);
			break;
		}
	}
	g_hash_table_destroy(sb);
	g_strfreev(la);
	g_strfreev(lb);
}

/* The e2fsck binary: PATH, then the usual sbin directories. */
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

/* Does every line look like what a clean e2fsck run prints? */
static bool fsck_text_clean(const char *text)
{
	static GRegex *ok;
	char **lines;
	bool clean = true;

	if (!ok)
		ok = g_regex_new(
		    "^(e2fsck [0-9][^ ]* \\(.*\\)"
		    "|Pass [1-5]: [A-Za-z ,]+"
		    "|.+: [0-9]+/[0-9]+ files \\([0-9.]+% non-contiguous\\), "
		    "[0-9]+/[0-9]+ blocks"
		    "|)$",
		    G_REGEX_OPTIMIZE, 0, NULL);
	lines = g_strsplit(text ? text : "", "\n", -1);
	for (char **l = lines; *l; l++) {
		if (!g_regex_match(ok, *l, 0, NULL)) {
			clean = false;
			break;
		}
	}
	g_strfreev(lines);
	return clean;
}

/*
 * Run e2fsck with flags ("-fn", "-fy") on img.  *exit_out = its exit code;
 * *clean_out (may be NULL) = exit 0 and nothing but the lines of a clean
 * run (-n prints fixable problems and still exits 0: the text is read).
 * -ENOENT without e2fsck, -EIO if it could not run or died.
 */
int crash_run_e2fsck(const char *flags, const char *img, int *exit_out,
		     bool *clean_out, char **text_out)
{
	char *prog = find_e2fsck();
	char *argv[] = {prog, (char *)flags, (char *)img, NULL};
	char **envp;
	char *out = NULL, *errt = NULL;
	int status = -1, rc = 0;

	*exit_out = -1;
	if (clean_out)
		*clean_out = false;
	if (text_out)
		*text_out = NULL;
	if (!prog)
		return -ENOENT;
	envp = g_get_environ();
	envp = g_environ_setenv(envp, "LC_ALL", "C", TRUE);
	envp = g_environ_setenv(envp, "E2FSCK_CONFIG", "/dev/null", TRUE);
	if (!g_spawn_sync(NULL, argv, envp, G_SPAWN_DEFAULT, NULL, NULL, &out,
			  &errt, &status, NULL) ||
	    !WIFEXITED(status)) {
		rc = -EIO;
	} else {
		*exit_out = WEXITSTATUS(status);
		if (clean_out)
			*clean_out = *exit_out == 0 && fsck_text_clean(out) &&
				     fsck_text_clean(errt);
		if (text_out)
			*text_out =
			    g_strconcat(errt ? errt : "", out ? out : "", NULL);
	}
	g_free(out);
	g_free(errt);
	g_strfreev(envp);
	g_free(prog);
	return rc;
}

/* A short extract of e2fsck's complaint for a one-line message. */
void crash_fsck_gist(const char *text, char *buf, size_t len)
{
	char **lines = g_strsplit(text ? text : "", "\n", -1);

	buf[0] = 0;
	for (char **l = lines; *l; l++) {
		if (!**l || g_str_has_prefix(*l, "Pass ") ||
		    g_str_has_prefix(*l, "e2fsck "))
			continue;
		if (buf[0])
			g_strlcat(buf, " | ", len);
		g_strlcat(buf, *l, len);
		if (strlen(buf) > 120)
			break;
	}
	g_strfreev(lines);
}

/* Copy a regular file, keeping holes (and skipping zero runs). */
int crash_copy_image(const char *src, const char *dst)
{
	const size_t chunk = 256 << 10;
	int in, out, rc = 0;
	struct stat st;
	uint8_t *buf;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	if (fstat(in, &st) || !S_ISREG(st.st_mode)) {
		close(in);
		return -EINVAL;
	}
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	if (ftruncate(out, st.st_size)) {
		rc = -errno;
		goto out;
	}
	buf = g_malloc(chunk);
	for (off_t pos = 0; pos < st.st_size && !rc;) {
		off_t d = lseek(in, pos, SEEK_DATA), h;

		if (d < 0) {
			if (errno == ENXIO)
				break;
			d = pos; /* no SEEK_DATA: copy all */
			h = st.st_size;
		} else {
			h = lseek(in, d, SEEK_HOLE);
			if (h < 0)
				h = st.st_size;
		}
		for (off_t o = d; o < h && !rc;) {
			size_t n = (size_t)MIN((off_t)chunk, h - o);
			ssize_t got = pread(in, buf, n, o);

			if (got <= 0) {
				rc = got < 0 ? -errno : -EIO;
				break;
			}
			if (!crash_all_zero(buf, (size_t)got) &&
			    pwrite(out, buf, (size_t)got, o) != got)
				rc = -EIO;
			o += got;
		}
		pos = h;
	}
	g_free(buf);
out:
	if (close(out) && !rc)
		rc = -EIO;
	close(in);
	return rc;
}

/* The primary superblock of img into *sb; false (and *sb zeroed) if it
 * cannot be read. */
static bool image_super(const char *img, struct sfs_dsuper *sb)
{
	int fd = open(img, O_RDONLY | O_CLOEXEC);
	bool ok = fd >= 0 && pread(fd, sb, sizeof(*sb), SFS_SUPER_OFFSET) ==
				 (ssize_t)sizeof(*sb);

	if (fd >= 0)
		close(fd);
	if (!ok)
		memset(sb, 0, sizeof(*sb));
	return ok;
}

bool crash_image_needs_recovery(const char *img)
{
	struct sfs_dsuper sb;

	image_super(img, &sb);
	return sfs_le32(sb.s_feature_incompat) & SFS_FEATURE_INCOMPAT_RECOVER;
}

/* Does img say it was cleanly unmounted?  Then it must be consistent. */
bool crash_image_marked_clean(const char *img)
{
	struct sfs_dsuper sb;

	return image_super(img, &sb) && sfs_sb_marked_clean(&sb);
}

/* The journal policy a mount of img with cfg gets (as mount.c decides);
 * NULL for an unknown data= name. */
const struct sfs_jnl_ops *crash_mount_policy(const struct sfs_config *cfg,
					     const char *img)
{
	struct sfs_dsuper sb;

	if (cfg->journal[0] && strcmp(cfg->journal, "auto") != 0)
		return sfs_jnl_find(cfg->journal);
	image_super(img, &sb);
	return sfs_jnl_auto(sfs_le32(sb.s_feature_compat) &
			    SFS_FEATURE_COMPAT_HAS_JOURNAL);
}

const struct sfs_jnl_ops *sfs_crash_policy(const char *opts, const char *image,
					   char *err, size_t errlen)
{
	struct sfs_config cfg;

	const struct sfs_jnl_ops *ops;

	if (crash_parse_opts(opts, &cfg, err, errlen))
		return NULL;
	ops = crash_mount_policy(&cfg, image);
	if (!ops)
		g_snprintf(err, errlen, "unknown journal policy '%s'",
			   cfg.journal);
	return ops;
}

/* simfs recovery: open (replays the journal) and close.  0 or -errno. */
int crash_simfs_recover(const char *img, const struct sfs_config *cfg,
			char *err, size_t errlen)
{
	struct sfs_config c = *cfg;
	struct sfs_bdev *bd;
	struct sfs_fs *fs;
	char *msg = NULL;
	int rc;

	c.stats_path[0] = 0;
	c.iolog_path[0] = 0;
	rc = sfs_bdev_open_file(img, c.direct ? SFS_BDEV_DIRECT : 0, 0, &bd);
	if (rc) {
		g_snprintf(err, errlen, "cannot open %s: %s", img,
			   g_strerror(-rc));
		return rc;
	}
	rc = sfs_fs_open(bd, &c, &fs, &msg);
	if (rc) {
		g_snprintf(err, errlen, "%s", msg ? msg : g_strerror(-rc));
		g_free(msg);
		return rc;
	}
	rc = sfs_fs_close(fs);
	if (rc)
		g_snprintf(err, errlen, "close after recovery: %s",
			   g_strerror(-rc));
	return rc;
}
