/*
 * crash_priv.h - what the parts of the crash checker (crash.h) share;
 * not for use outside simfs/crash_*.c.  Every name here starts with
 * crash_ (libsimfs is one namespace); statics inside a part keep short
 * names.
 *
 * Parts, in the order a check runs through them:
 *  crash_data.c      data blocks that name themselves (crash_cb_*);
 *  crash_model.c     the model: the workload's namespace and per-block
 *                    versions, advanced one op at a time (crash_model_*);
 *  crash_workload.c  the workloads (wl_*), written against helpers (w_*)
 *                    that issue an op to the engine (crash_w_issue), note
 *                    the crash device's request count around it and
 *                    apply it to the model;
 *  crash_run.c       one run of a workload over a crash device
 *                    (crash_run_workload);
 *  crash_image.c     reading an image back through the engine
 *                    (crash_tree_*), e2fsck, image copies, the policy a
 *                    mount gets;
 *  crash_check.c     the check of one crash point against the policy's
 *                    promise (journal.h: sfs_jnl_promise);
 *  crash_sweep.c     plans and sweeps in forked processes.
 * The front end, simfs crash, is simfs/cmd_crash.c and sees crash.h only.
 *
 * Invariants:
 *  1. A workload's choices depend only on its seed and the model, never on
 *     what the engine returns, so the dry run and every crashed run issue
 *     the same ops and, up to the cut, the same requests.
 *  2. The model applies an op even when the engine call failed after the
 *     cut: the checker treats every op begun before the cut as maybe done.
 *  3. Versions of (file, block) only grow, across truncates too, so a
 *     version number alone says how old a block is.
 *  4. The workload lives in /crash, made by the run itself: the model and
 *     the namespace check cover that subtree; the tree comparison of the
 *     two recovered images covers the whole image.
 */
#ifndef SFS_CRASH_PRIV_H
#define SFS_CRASH_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include "config.h"
#include "crash.h"
#include "format.h"
#include "fs.h"

#define CRASH_DIR "crash"     /* the workload's directory in the image */
#define CRASH_LONG_OPS 3000u  /* default length of "long" */
#define CRASH_MAX_FILE_BLK 64 /* longest file of the long workload */

#define CB_MAXSECT 8u /* 4 KiB blocks */

enum { SK_ZERO = 0, SK_DATA, SK_GARBAGE };

/* What one sector holds. */
struct stag {
	uint8_t kind; /* SK_* */
	uint32_t id, idx, ver;
};

/* What one block holds, sector by sector. */
struct bsum {
	uint8_t nsect;
	struct stag s[CB_MAXSECT];
};

/* A one-block cache of generated contents. */
struct cb_gen {
	uint32_t bs, id, idx, ver;
	bool valid;
	uint8_t buf[CB_MAXSECT * SFS_CRASH_SECTOR];
};

#define WNAME 24

enum wop_kind {
	W_CREATE = 0,
	W_MKDIR,
	W_WRITE,
	W_TRUNC,
	W_RENAME,
	W_UNLINK,
	W_RMDIR,
	W_FSYNC,
	W_SYNC,
	W_UNMOUNT,
	W_OPEN,	 /* an open reference: the file outlives its last name */
	W_CLOSE, /* its release */
};

/* One op of a workload, as issued (plain data). */
struct wop {
	uint8_t kind;	  /* enum wop_kind */
	bool setup;	  /* part of the setup (before arming) */
	uint32_t a;	  /* dir id (namespace ops) or file id */
	uint32_t c;	  /* rename: destination dir id */
	uint32_t id;	  /* create / mkdir: the new object's id */
	uint32_t blk, n;  /* write: first block, count; trunc: size, blocks */
	char name[WNAME]; /* entry name in a */
	char name2[WNAME];
	sfs_ino_t ino; /* create / mkdir: result */
	uint32_t gen;
	uint64_t start, end; /* crash device requests seen before / after */
	int rc;
};

/* A file or directory of the model, by id (id 0 = /crash). */
struct mobj {
	bool dir;
	bool live;
	sfs_ino_t ino; /* from the run (0: unknown) */
	uint32_t gen;
	uint32_t parent;
	char name[WNAME];
	uint32_t nblk;	  /* file size in blocks */
	GArray *ver;	  /* uint32 per block: current version, 0 = hole */
	GArray *maxver;	  /* uint32 per block: newest version written */
	GArray *floor;	  /* uint32 per block: fsync'd version, or NULL */
	uint32_t nsub;	  /* dir: subdirectories */
	GHashTable *ents; /* dir: name -> GUINT_TO_POINTER(id + 1) */
};

struct model {
	GPtrArray *o; /* struct mobj *, index = id */
};

#define WMAXBLK 8 /* blocks per write op */

struct wctx {
	struct sfs_fs *fs; /* NULL after unmount */
	struct sfs_bdev *cd;
	struct model *m;
	GArray *ops; /* struct wop */
	bool setup;  /* issuing setup ops */
	bool stop;   /* the cut happened: issue nothing more */
	bool run_to_end;
	uint32_t bs;
	uint8_t *buf; /* WMAXBLK blocks */
	GRand *rand;
	uint32_t seq; /* unique names */
	uint32_t long_ops;
	char err[256]; /* first op that failed before the cut */
};

#define ALIVE(w) (!(w)->stop && !(w)->err[0])

struct workload {
	const char *name;
	const char *help;
	void (*setup)(struct wctx *w); /* may be NULL */
	void (*script)(struct wctx *w);
};

struct run {
	struct model *m;
	GArray *ops;	  /* struct wop: setup ops, then scripted ones */
	uint32_t n_setup; /* ops before arming */
	uint32_t bs;
	struct sfs_crashdev_counters ctr;
	GByteArray *req_op; /* dry run: op of each request */
	char err[320];
};

struct tent {
	char *path; /* "/crash/a/f" */
	char *name;
	sfs_ino_t ino, pino;
	uint32_t gen, pgen;
	uint32_t mode, nlink;
	uint64_t size;
	uint64_t hash; /* contents (files, symlinks) */
	bool in_crash; /* under /crash (or it) */
	uint32_t nblk;
	struct bsum *blk; /* [nblk]: files under /crash */
};

struct tree {
	GPtrArray *e; /* struct tent * */
	uint32_t bs;
};

/* crash_data.c */
uint64_t crash_cb_mix(uint64_t x);
void crash_cb_fill(uint8_t *b, uint32_t bs, uint32_t id, uint32_t idx,
		   uint32_t ver);
bool crash_all_zero(const uint8_t *p, size_t n);
void crash_cb_classify(struct cb_gen *g, const uint8_t *b, uint32_t bs,
		       struct bsum *out);

/* crash_model.c */
uint32_t crash_u32_get(const GArray *a, uint32_t i);
struct model *crash_model_new(void);
void crash_model_free(struct model *m);
struct mobj *crash_obj(const struct model *m, uint32_t id);
uint32_t crash_model_lookup(const struct model *m, uint32_t dir,
			    const char *name);
void crash_floor_take(struct mobj *o);
void crash_model_apply(struct model *m, const struct wop *op, bool durable);
void crash_wop_desc(const struct wop *op, char *buf, size_t len);
char *crash_join_sorted(GPtrArray *l);
char *crash_model_canon(const struct model *m, uint32_t bs, bool sizes);

/* crash_workload.c */
int crash_w_issue(struct wctx *w, struct wop *op);
const struct workload *crash_workload_find(const char *name);

/* crash_run.c */
void crash_run_free(struct run *r);
int crash_parse_opts(const char *opts, struct sfs_config *cfg, char *err,
		     size_t errlen);
int crash_run_workload(const struct sfs_crash_params *p, const char *img,
		       bool dry, uint64_t point, uint64_t dev_seed,
		       struct run *out);

/* crash_image.c */
void crash_tree_free(struct tree *t);
int crash_tree_load(const char *img, const struct sfs_config *base,
		    struct tree *tr, char *err, size_t errlen);
char *crash_tree_canon(const struct tree *tr);
uint64_t crash_ig_key(sfs_ino_t ino, uint32_t gen);
char *crash_tree_ns_canon(const struct tree *tr, GHashTable *idmap, bool sizes);
void crash_first_missing(const char *a, const char *b, char *buf, size_t len);
int crash_run_e2fsck(const char *flags, const char *img, int *exit_out,
		     bool *clean_out, char **text_out);
void crash_fsck_gist(const char *text, char *buf, size_t len);
int crash_copy_image(const char *src, const char *dst);
bool crash_image_needs_recovery(const char *img);
bool crash_image_marked_clean(const char *img);
const struct sfs_jnl_ops *crash_mount_policy(const struct sfs_config *cfg,
					     const char *img);
int crash_simfs_recover(const char *img, const struct sfs_config *cfg,
			char *err, size_t errlen);

/* crash_check.c */
/* A fresh directory name (a mkdtemp template) under p->workdir, else
 * $TMPDIR, /dev/shm or /tmp: 0 and *dir_out (g_free it), or -errno and
 * a reason in err. */
int crash_workdir_make(const struct sfs_crash_params *p, const char *name,
		       char **dir_out, char *err, size_t errlen);
void crash_rm_dir(const char *dir, const char *const *files);

#endif /* SFS_CRASH_PRIV_H */
