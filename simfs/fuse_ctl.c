/*
 * fuse_ctl.c - the control directory /.simfs of a mount (fuse.c rule 7;
 * doc/measurement.md, "A live mount"): stats (JSON), stats.txt, config
 * (writable: sfs_fs_set_knobs), last_error and sync (write-only).  The
 * engine never sees these requests; fuse.c hands each one over at the top
 * of its handler (fuse_ctl.h, one entry point per request kind).
 *
 * Invariants:
 *  - The directory and its files have FUSE inode numbers SFS_CTL_INO +
 *    enum sfs_ctl, above any ext2 inode.  Lookup of ".simfs" in the root
 *    finds the directory, readdir of the root does not list it (only
 *    the engine's listing), and ".simfs" in any other directory is an
 *    ordinary name.
 *  - Reads are snapshots taken at open (direct_io, so the kernel asks for
 *    every byte); while a file is open its size is that of the latest
 *    snapshot (ctl_stat).  Each write(2) to config is one all-or-nothing
 *    sfs_fs_set_knobs; why the latest one was refused is last_error.
 *  - Nothing can be created, removed, renamed, linked, chmod'ed or
 *    touched in there: EPERM.
 *
 * Locking: ctl_lock protects ctl_size, ctl_open and last_error (any loop
 * thread); the rest is written before the loop.  Lock order: ctl_lock is
 * a leaf, never held across an engine call (the engine's lock) or a reply.
 */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fuse_lowlevel.h>
#include <glib.h>

#include "clock.h"
#include "fuse_ctl.h"
#include "lock.h"
#include "stats.h"

#define SFS_CTL_DIRNAME ".simfs"
#define SFS_CTL_MAX_WRITE 65536 /* bytes in one write to config */

enum sfs_ctl {
	SFS_CTL_DIR,
	SFS_CTL_STATS,	    /* JSON snapshot (sfs_stats_to_json) */
	SFS_CTL_STATS_TXT,  /* the same as the table */
	SFS_CTL_CONFIG,	    /* knobs as key=value lines; writable */
	SFS_CTL_LAST_ERROR, /* why the latest config write was refused */
	SFS_CTL_SYNC,	    /* write anything: sync the whole filesystem */
	SFS_CTL_N,
};

static const struct {
	const char *name;
	mode_t mode;
} ctl_files[SFS_CTL_N] = {
    [SFS_CTL_DIR] = {SFS_CTL_DIRNAME, S_IFDIR | 0555},
    [SFS_CTL_STATS] = {"stats", S_IFREG | 0444},
    [SFS_CTL_STATS_TXT] = {"stats.txt", S_IFREG | 0444},
    [SFS_CTL_CONFIG] = {"config", S_IFREG | 0644},
    [SFS_CTL_LAST_ERROR] = {"last_error", S_IFREG | 0444},
    [SFS_CTL_SYNC] = {"sync", S_IFREG | 0200},
};

struct sfs_fuse_ctl {
	struct sfs_fs *fs;		/* not owned; set before the loop */
	const char *(*note)(void *arg); /* stats.txt's last line, or NULL */
	void *note_arg;
	struct timespec ctl_time; /* time stamps of the control files */
	sfs_mutex ctl_lock;
	uint64_t ctl_size[SFS_CTL_N]; /* latest snapshot's size; ctl_lock */
	unsigned ctl_open[SFS_CTL_N]; /* open handles; ctl_lock */
	char *last_error;	      /* of a config write, or NULL; ctl_lock */
};

/* One open control file: its contents as of the open. */
struct sfs_ctl_handle {
	enum sfs_ctl which;
	char *data;
	size_t len;
};

/* ---- names and numbers ---- */

/* The control file with FUSE inode ino, or -1. */
static int ctl_of(fuse_ino_t ino)
{
	if (ino < SFS_CTL_INO || ino >= (fuse_ino_t)SFS_CTL_INO + SFS_CTL_N)
		return -1;
	return (int)(ino - SFS_CTL_INO);
}

/* Is (parent, name) the control directory's own entry in the root? */
static bool ctl_is_entry(fuse_ino_t parent, const char *name)
{
	return parent == FUSE_ROOT_ID && strcmp(name, SFS_CTL_DIRNAME) == 0;
}

/* Control files that take writes. */
static bool ctl_writable(int c)
{
	return c == SFS_CTL_CONFIG || c == SFS_CTL_SYNC;
}

/* Answer a request for control file ino with errno err (0: success);
 * false if ino is not one. */
static bool ctl_answer_err(fuse_req_t req, fuse_ino_t ino, int err)
{
	if (ctl_of(ino) < 0)
		return false;
	fuse_reply_err(req, err);
	return true;
}

/* ---- contents ---- */

/* Print into a memory buffer: *len_out bytes (free() the result). */
static char *ctl_print(struct sfs_fuse_ctl *ctl, enum sfs_ctl c,
		       size_t *len_out)
{
	struct sfs_config cfg;
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	if (!out) {
		*len_out = 0;
		return NULL;
	}
	switch (c) {
	case SFS_CTL_STATS_TXT:
		sfs_stats_print_table(sfs_fs_stats(ctl->fs), out);
		if (ctl->note)
			fprintf(out, "%s\n", ctl->note(ctl->note_arg));
		break;
	case SFS_CTL_CONFIG:
		sfs_fs_get_config(ctl->fs, &cfg);
		sfs_config_print(&cfg, out);
		break;
	default:
		break;
	}
	if (fclose(out) != 0) {
		free(text);
		*len_out = 0;
		return NULL;
	}
	*len_out = len;
	return text;
}

/* The contents of control file c now (g_free it); NULL on ENOMEM. */
static char *ctl_render(struct sfs_fuse_ctl *ctl, enum sfs_ctl c, size_t *len)
{
	char *text, *out;

	switch (c) {
	case SFS_CTL_STATS:
		text = sfs_stats_to_json(sfs_fs_stats(ctl->fs), true);
		out = g_strconcat(text, "\n", NULL);
		g_free(text);
		*len = strlen(out);
		return out;
	case SFS_CTL_STATS_TXT:
	case SFS_CTL_CONFIG:
		text = ctl_print(ctl, c, len);
		out = text ? g_memdup2(text, *len + 1) : NULL;
		free(text);
		return out;
	case SFS_CTL_LAST_ERROR:
		sfs_mutex_lock(&ctl->ctl_lock);
		out = ctl->last_error ? g_strconcat(ctl->last_error, "\n", NULL)
				      : g_strdup("");
		sfs_mutex_unlock(&ctl->ctl_lock);
		*len = strlen(out);
		return out;
	default:
		*len = 0;
		return g_strdup("");
	}
}

/*
 * Attributes of control file c.  The size of a file is that of the latest
 * snapshot an open took while one is open (fstat after open, as
 * g_file_get_contents does, then sees the size it will read), else that of
 * a fresh one.  attr_timeout is 0 for them, so the kernel always asks.
 */
static void ctl_stat(struct sfs_fuse_ctl *ctl, enum sfs_ctl c, struct stat *st)
{
	uint64_t size = 0;
	bool fresh;

	memset(st, 0, sizeof(*st));
	st->st_ino = SFS_CTL_INO + c;
	st->st_mode = ctl_files[c].mode;
	st->st_nlink = c == SFS_CTL_DIR ? 2 : 1;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_blksize = 4096;
	st->st_atim = st->st_mtim = st->st_ctim = ctl->ctl_time;
	if (c == SFS_CTL_DIR)
		return;
	sfs_mutex_lock(&ctl->ctl_lock);
	fresh = ctl->ctl_open[c] == 0;
	size = ctl->ctl_size[c];
	sfs_mutex_unlock(&ctl->ctl_lock);
	if (fresh) {
		size_t len = 0;
		char *text = ctl_render(ctl, c, &len);

		g_free(text);
		size = len;
	}
	st->st_size = (off_t)size;
}

static void ctl_reply_entry(struct sfs_fuse_ctl *ctl, fuse_req_t req,
			    enum sfs_ctl c)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = SFS_CTL_INO + c;
	e.generation = 1;
	ctl_stat(ctl, c, &e.attr);
	e.attr_timeout = 0;
	e.entry_timeout = SFS_FUSE_TIMEOUT;
	fuse_reply_entry(req, &e);
}

static struct sfs_ctl_handle *ctl_handle(struct fuse_file_info *fi)
{
	return fi ? (struct sfs_ctl_handle *)(uintptr_t)fi->fh : NULL;
}

/*
 * "key=value" lines (blank lines and '#' comments skipped; a line may hold
 * several comma-separated options) as one option string (g_free it), or
 * NULL with *err set for text that cannot be options.
 */
static char *ctl_config_opts(const char *buf, size_t size, char **err)
{
	GString *opts;
	char *text, **lines;

	if (memchr(buf, '\0', size)) {
		*err = g_strdup("a NUL byte in the text written");
		return NULL;
	}
	text = g_strndup(buf, size);
	lines = g_strsplit(text, "\n", -1);
	opts = g_string_new(NULL);
	for (char **l = lines; *l; l++) {
		g_strstrip(*l);
		if (**l == '\0' || **l == '#')
			continue;
		g_string_append_printf(opts, "%s%s", opts->len ? "," : "", *l);
	}
	g_strfreev(lines);
	g_free(text);
	return g_string_free(opts, FALSE);
}

/* Reply with an engine result, -errno (anything else is -EIO). */
static void ctl_reply_rc(fuse_req_t req, int rc)
{
	if (rc > 0 || rc < -4095)
		rc = -EIO;
	fuse_reply_err(req, -rc);
}

/*
 * A write to sync: what sync(2) does for a disk filesystem.  The kernel
 * does not pass sync(2) or syncfs(2) on to a FUSE daemon, so this is the
 * way to have every dirty block, delayed allocation and the journal on
 * the image (and the modelled drive's write cache emptied) without
 * unmounting.  The write returns when that is done, or with its error.
 */
static void ctl_sync(struct sfs_fuse_ctl *ctl, fuse_req_t req, size_t size)
{
	int rc = sfs_fs_sync(ctl->fs);

	if (rc < 0) {
		fuse_log(FUSE_LOG_WARNING, "/%s/sync: %s\n", SFS_CTL_DIRNAME,
			 g_strerror(-rc));
		ctl_reply_rc(req, rc);
	} else {
		fuse_reply_write(req, size);
	}
}

/* ---- the session ---- */

struct sfs_fuse_ctl *sfs_ctl_new(const char *(*note)(void *arg), void *arg)
{
	struct sfs_fuse_ctl *ctl = g_new0(struct sfs_fuse_ctl, 1);
	sfs_ns_t wall = sfs_clock_wall_ns();

	ctl->note = note;
	ctl->note_arg = arg;
	sfs_mutex_init(&ctl->ctl_lock);
	ctl->ctl_time.tv_sec = (time_t)(wall / SFS_NS_PER_S);
	ctl->ctl_time.tv_nsec = (long)(wall % SFS_NS_PER_S);
	return ctl;
}

void sfs_ctl_attach(struct sfs_fuse_ctl *ctl, struct sfs_fs *fs)
{
	ctl->fs = fs;
}

void sfs_ctl_free(struct sfs_fuse_ctl *ctl)
{
	if (!ctl)
		return;
	g_free(ctl->last_error);
	sfs_mutex_clear(&ctl->ctl_lock);
	g_free(ctl);
}

/* ---- requests ---- */

bool sfs_ctl_lookup(struct sfs_fuse_ctl *ctl, fuse_req_t req, fuse_ino_t parent,
		    const char *name)
{
	int p = ctl_of(parent);

	if (ctl_is_entry(parent, name)) {
		ctl_reply_entry(ctl, req, SFS_CTL_DIR);
		return true;
	}
	if (p < 0)
		return false;
	if (p != SFS_CTL_DIR) {
		fuse_reply_err(req, ENOTDIR);
		return true;
	}
	for (int c = SFS_CTL_DIR + 1; c < SFS_CTL_N; c++) {
		if (strcmp(name, ctl_files[c].name) == 0) {
			ctl_reply_entry(ctl, req, (enum sfs_ctl)c);
			return true;
		}
	}
	fuse_reply_err(req, ENOENT);
	return true;
}

bool sfs_ctl_getattr(struct sfs_fuse_ctl *ctl, fuse_req_t req, fuse_ino_t ino)
{
	struct stat st;

	if (!sfs_ctl_statx(ctl, ino, &st))
		return false;
	fuse_reply_attr(req, &st, 0);
	return true;
}

bool sfs_ctl_statx(struct sfs_fuse_ctl *ctl, fuse_ino_t ino, struct stat *st)
{
	int c = ctl_of(ino);

	if (c < 0)
		return false;
	ctl_stat(ctl, (enum sfs_ctl)c, st);
	return true;
}

bool sfs_ctl_setattr(struct sfs_fuse_ctl *ctl, fuse_req_t req, fuse_ino_t ino,
		     const struct stat *st, int to_set)
{
	int c = ctl_of(ino);
	struct stat cst;

	if (c < 0)
		return false;
	/* `echo x > config` may truncate first: a no-op; else EPERM */
	if (!ctl_writable(c) || (to_set & ~FUSE_SET_ATTR_SIZE) ||
	    st->st_size != 0) {
		fuse_reply_err(req, EPERM);
		return true;
	}
	ctl_stat(ctl, (enum sfs_ctl)c, &cst);
	fuse_reply_attr(req, &cst, 0);
	return true;
}

bool sfs_ctl_readlink(fuse_req_t req, fuse_ino_t ino)
{
	return ctl_answer_err(req, ino, EINVAL);
}

bool sfs_ctl_open(struct sfs_fuse_ctl *ctl, fuse_req_t req, fuse_ino_t ino,
		  struct fuse_file_info *fi)
{
	int c = ctl_of(ino);
	struct sfs_ctl_handle *h;
	int acc = fi->flags & O_ACCMODE;

	if (c < 0)
		return false;
	if (c == SFS_CTL_DIR) {
		fuse_reply_err(req, EISDIR);
		return true;
	}
	/* sync is write-only, config read-write, the rest read-only */
	bool allowed = c == SFS_CTL_SYNC ? acc == O_WRONLY
		       : c == SFS_CTL_CONFIG
			   ? true
			   : acc == O_RDONLY && !(fi->flags & O_TRUNC);
	if (!allowed) {
		fuse_reply_err(req, EACCES);
		return true;
	}
	h = g_new0(struct sfs_ctl_handle, 1);
	h->which = (enum sfs_ctl)c;
	if (acc != O_WRONLY) {
		h->data = ctl_render(ctl, h->which, &h->len);
		if (!h->data) {
			g_free(h);
			fuse_reply_err(req, ENOMEM);
			return true;
		}
	}
	sfs_mutex_lock(&ctl->ctl_lock);
	ctl->ctl_open[c]++;
	if (h->data)
		ctl->ctl_size[c] = h->len;
	sfs_mutex_unlock(&ctl->ctl_lock);
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fi->fh = (uint64_t)(uintptr_t)h;
	if (fuse_reply_open(req, fi) != 0) {
		sfs_mutex_lock(&ctl->ctl_lock);
		ctl->ctl_open[c]--;
		sfs_mutex_unlock(&ctl->ctl_lock);
		g_free(h->data);
		g_free(h);
	}
	return true;
}

bool sfs_ctl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		  struct fuse_file_info *fi)
{
	struct sfs_ctl_handle *h = ctl_handle(fi);

	if (ctl_of(ino) < 0)
		return false;
	if (!h || off < 0) {
		fuse_reply_err(req, h ? EINVAL : EBADF);
		return true;
	}
	if (!h->data) {
		fuse_reply_err(req, EBADF); /* opened write-only */
		return true;
	}
	if ((uint64_t)off >= h->len) {
		fuse_reply_buf(req, NULL, 0);
		return true;
	}
	/* Reply from a private copy: the kernel may send RELEASE (which
	 * frees h->data on another thread) as soon as it has the reply. */
	size_t n = MIN(size, h->len - (size_t)off);
	void *copy = g_memdup2(h->data + off, n);
	fuse_reply_buf(req, copy, n);
	g_free(copy);
	return true;
}

/* A write to config: each write(2) is one all-or-nothing change. */
bool sfs_ctl_write(struct sfs_fuse_ctl *ctl, fuse_req_t req, fuse_ino_t ino,
		   const char *buf, size_t size, struct fuse_file_info *fi)
{
	int c = ctl_of(ino);
	char *opts = NULL, *err = NULL;
	int rc = 0;

	if (c < 0)
		return false;
	if (!ctl_writable(c) || !ctl_handle(fi)) {
		fuse_reply_err(req, c == SFS_CTL_DIR ? EISDIR : EBADF);
		return true;
	}
	if (c == SFS_CTL_SYNC) {
		ctl_sync(ctl, req, size);
		return true;
	}
	if (size > SFS_CTL_MAX_WRITE) {
		err = g_strdup_printf("more than %d bytes in one write",
				      SFS_CTL_MAX_WRITE);
		rc = -EINVAL;
	} else {
		opts = ctl_config_opts(buf, size, &err);
		if (!opts)
			rc = -EINVAL;
		else if (*opts)
			rc = sfs_fs_set_knobs(ctl->fs, opts, &err);
	}
	sfs_mutex_lock(&ctl->ctl_lock);
	g_free(ctl->last_error);
	ctl->last_error = NULL;
	if (rc < 0)
		ctl->last_error = g_strdup(err ? err : g_strerror(-rc));
	sfs_mutex_unlock(&ctl->ctl_lock);
	if (rc < 0) {
		fuse_log(FUSE_LOG_WARNING, "/%s/config: write refused: %s\n",
			 SFS_CTL_DIRNAME, err ? err : g_strerror(-rc));
		ctl_reply_rc(req, rc);
	} else {
		fuse_reply_write(req, size);
	}
	g_free(opts);
	g_free(err);
	return true;
}

bool sfs_ctl_release(struct sfs_fuse_ctl *ctl, fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi)
{
	int c = ctl_of(ino);
	struct sfs_ctl_handle *h = ctl_handle(fi);

	if (c < 0)
		return false;
	if (h && c > SFS_CTL_DIR) {
		sfs_mutex_lock(&ctl->ctl_lock);
		if (ctl->ctl_open[c])
			ctl->ctl_open[c]--;
		sfs_mutex_unlock(&ctl->ctl_lock);
		g_free(h->data);
		g_free(h);
	}
	fuse_reply_err(req, 0);
	return true;
}

bool sfs_ctl_fsync(fuse_req_t req, fuse_ino_t ino)
{
	return ctl_answer_err(req, ino, 0); /* nothing to write back */
}

bool sfs_ctl_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int c = ctl_of(ino);

	if (c < 0)
		return false;
	if (c != SFS_CTL_DIR) {
		fuse_reply_err(req, ENOTDIR);
		return true;
	}
	fi->fh = 0;
	fi->cache_readdir = 0;
	fuse_reply_open(req, fi);
	return true;
}

/* The control directory's listing: ".", "..", then the files. */
bool sfs_ctl_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off)
{
	int c = ctl_of(ino);
	char *buf;
	size_t pos = 0;

	if (c < 0)
		return false;
	if (c != SFS_CTL_DIR) {
		fuse_reply_err(req, ENOTDIR);
		return true;
	}
	buf = g_try_malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return true;
	}
	for (off_t i = off < 0 ? 0 : off; i < SFS_CTL_N + 1; i++) {
		struct stat st;
		const char *name;
		size_t need;

		memset(&st, 0, sizeof(st));
		if (i == 0) {
			name = ".";
			st.st_ino = SFS_CTL_INO;
			st.st_mode = S_IFDIR;
		} else if (i == 1) {
			name = "..";
			st.st_ino = FUSE_ROOT_ID;
			st.st_mode = S_IFDIR;
		} else {
			name = ctl_files[i - 1].name;
			st.st_ino = SFS_CTL_INO + (fuse_ino_t)(i - 1);
			st.st_mode = ctl_files[i - 1].mode & S_IFMT;
		}
		need = fuse_add_direntry(req, NULL, 0, name, NULL, 0);
		if (pos + need > size)
			break;
		fuse_add_direntry(req, buf + pos, size - pos, name, &st, i + 1);
		pos += need;
	}
	fuse_reply_buf(req, buf, pos);
	g_free(buf);
	return true;
}

bool sfs_ctl_setxattr(fuse_req_t req, fuse_ino_t ino)
{
	return ctl_answer_err(req, ino, EPERM);
}

bool sfs_ctl_getxattr(fuse_req_t req, fuse_ino_t ino)
{
	return ctl_answer_err(req, ino, ENODATA);
}

/* The control files have no extended attributes: an empty list. */
bool sfs_ctl_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	if (ctl_of(ino) < 0)
		return false;
	if (size == 0)
		fuse_reply_xattr(req, 0);
	else
		fuse_reply_buf(req, NULL, 0);
	return true;
}

bool sfs_ctl_removexattr(fuse_req_t req, fuse_ino_t ino)
{
	return sfs_ctl_setxattr(req, ino);
}

/* ---- names ---- */

bool sfs_ctl_remove(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (ctl_of(parent) < 0 && !ctl_is_entry(parent, name))
		return false;
	fuse_reply_err(req, EPERM);
	return true;
}

int sfs_ctl_new_name(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (ctl_of(parent) >= 0) {
		fuse_reply_err(req, EPERM);
		return 1;
	}
	return ctl_is_entry(parent, name) ? -EEXIST : 0;
}

int sfs_ctl_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		 const char *newname)
{
	if (ctl_of(ino) >= 0) {
		fuse_reply_err(req, EPERM);
		return 1;
	}
	return sfs_ctl_new_name(req, newparent, newname);
}

int sfs_ctl_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		   fuse_ino_t newparent, const char *newname, int err)
{
	if (ctl_of(parent) >= 0 || ctl_of(newparent) >= 0) {
		fuse_reply_err(req, err);
		return 1;
	}
	if (ctl_is_entry(parent, name) || ctl_is_entry(newparent, newname))
		return -err;
	return 0;
}

int sfs_ctl_tmpfile(fuse_ino_t parent)
{
	return ctl_of(parent) >= 0 ? -EPERM : 0;
}
