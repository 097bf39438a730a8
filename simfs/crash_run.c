/*
 * crash_run.c - one run of a workload over a crash device
 * (crash_priv.h: crash_run_workload), on the image it is given (the
 * caller copies it first): the engine over a borrowing device over the
 * crash device over the file; /crash, the setup part, sync, then the
 * device armed (the dry run: logging every request, never crashing) and
 * the scripted part.
 */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "crash_priv.h"

void crash_run_free(struct run *r)
{
	crash_model_free(r->m);
	if (r->ops)
		g_array_free(r->ops, TRUE);
	if (r->req_op)
		g_byte_array_free(r->req_op, TRUE);
	memset(r, 0, sizeof(*r));
}

int crash_parse_opts(const char *opts, struct sfs_config *cfg, char *err,
		     size_t errlen)
{
	char *msg = NULL;
	int rc;

	sfs_config_defaults(cfg);
	rc = sfs_config_parse(cfg, opts ? opts : "", NULL, &msg);
	if (rc)
		g_snprintf(err, errlen, "bad options '%s': %s",
			   opts ? opts : "", msg ? msg : "?");
	g_free(msg);
	return rc;
}

/* The scripted ops and the requests each issued, with their fates. */
static void trace_run(FILE *f, struct sfs_bdev *cd, const GArray *ops,
		      uint32_t n_setup, const struct sfs_crashdev_counters *ctr)
{
	size_t n;
	const struct sfs_crashdev_rec *log = sfs_crashdev_log(cd, &n);
	guint k = n_setup;

	fprintf(f, "# cut after request %llu; %llu writes dropped%s\n",
		(unsigned long long)ctr->crash_point,
		(unsigned long long)ctr->writes_dropped,
		ctr->writes_torn ? ", one torn" : "");
	for (size_t i = 0; i <= n; i++) {
		while (k < ops->len &&
		       g_array_index(ops, struct wop, k).start <= i) {
			const struct wop *op =
			    &g_array_index(ops, struct wop, k);
			char d[64];

			crash_wop_desc(op, d, sizeof(d));
			fprintf(f, "# op %u: %s -> %d (requests %llu..%llu)\n",
				k - n_setup + 1, d, op->rc,
				(unsigned long long)op->start + 1,
				(unsigned long long)op->end);
			k++;
		}
		if (i == n)
			break;
		fprintf(f, "#   %6zu %-5s %-8s %10llu +%-7llu %s", i + 1,
			sfs_io_op_name(log[i].req.op),
			sfs_io_cat_name(log[i].req.cat),
			(unsigned long long)log[i].req.off_bytes,
			(unsigned long long)log[i].req.len_bytes,
			sfs_crash_fate_name(log[i].fate));
		if (log[i].fate == SFS_CRASH_TORN)
			fprintf(f, " (%llu bytes kept)",
				(unsigned long long)log[i].kept_bytes);
		fprintf(f, "%s\n",
			i + 1 == ctr->crash_point ? "   <- cut" : "");
	}
}

/*
 * Run p's workload on the image at img (modified in place).  dry: arm
 * nothing that crashes and log every request; else arm (p->mode, point,
 * dev_seed).  0 or -errno with out->err; an op failing before the cut is
 * not an error here (out->err is set, the caller decides).
 */
int crash_run_workload(const struct sfs_crash_params *p, const char *img,
		       bool dry, uint64_t point, uint64_t dev_seed,
		       struct run *out)
{
	const struct workload *wl = crash_workload_find(p->workload);
	struct sfs_config cfg;
	struct sfs_bdev *file, *cd, *shim;
	struct sfs_fs *fs = NULL;
	struct wctx w = {0};
	struct sfs_attr at;
	char *msg = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!wl) {
		g_snprintf(out->err, sizeof(out->err), "unknown workload '%s'",
			   p->workload ? p->workload : "");
		return -EINVAL;
	}
	rc = crash_parse_opts(p->opts, &cfg, out->err, sizeof(out->err));
	if (rc)
		return rc;
	rc =
	    sfs_bdev_open_file(img, cfg.direct ? SFS_BDEV_DIRECT : 0, 0, &file);
	if (rc) {
		g_snprintf(out->err, sizeof(out->err), "cannot open %s: %s",
			   img, g_strerror(-rc));
		return rc;
	}
	cd = sfs_crashdev_new(file);
	/* the crash device outlives the engine: its counters are read after
	 * unmount */
	shim = sfs_bdev_borrow_new(cd);
	rc = sfs_fs_open(shim, &cfg, &fs, &msg);
	if (rc) {
		g_snprintf(out->err, sizeof(out->err),
			   "cannot open the image with '%s': %s",
			   p->opts ? p->opts : "", msg ? msg : g_strerror(-rc));
		g_free(msg);
		sfs_bdev_close(cd);
		return rc;
	}
	w.fs = fs;
	w.cd = cd;
	w.m = crash_model_new();
	w.ops = g_array_new(FALSE, TRUE, sizeof(struct wop));
	w.bs = sfs_fs_block_size(fs);
	w.buf = g_malloc((size_t)WMAXBLK * w.bs);
	w.rand = g_rand_new_with_seed((guint32)(p->seed ^ (p->seed >> 32)));
	w.long_ops = p->long_ops ? p->long_ops : CRASH_LONG_OPS;
	w.run_to_end = p->run_to_end;
	if (w.bs > CB_MAXSECT * SFS_CRASH_SECTOR) {
		g_snprintf(w.err, sizeof(w.err),
			   "block size %u: the checker handles up to 4096",
			   w.bs);
		goto out_close;
	}
	rc = sfs_mkdir(fs, SFS_ROOT_INO, CRASH_DIR, 0755, 0, 0, &at);
	if (rc) {
		g_snprintf(w.err, sizeof(w.err),
			   "cannot make /" CRASH_DIR " in the image: %s%s",
			   g_strerror(-rc),
			   rc == -EEXIST ? " (use a fresh image)" : "");
		goto out_close;
	}
	crash_obj(w.m, 0)->ino = at.ino;
	crash_obj(w.m, 0)->gen = at.generation;
	w.setup = true;
	if (wl->setup)
		wl->setup(&w);
	if (!w.err[0]) {
		rc = sfs_fs_sync(fs);
		if (rc)
			g_snprintf(w.err, sizeof(w.err),
				   "sync after setup failed: %s",
				   g_strerror(-rc));
	}
	w.setup = false;
	out->n_setup = w.ops->len;
	if (!w.err[0]) {
		if (dry) {
			sfs_crashdev_set_logging(cd, true);
			sfs_crashdev_arm(cd, SFS_CRASH_CUT, UINT64_MAX, 0);
		} else {
			sfs_crashdev_set_logging(cd, p->trace != NULL);
			sfs_crashdev_arm(cd, p->mode, point, dev_seed);
			if (sfs_crashdev_crashed(cd) && !w.run_to_end)
				w.stop = true;
		}
		wl->script(&w);
		if (ALIVE(&w)) {
			struct wop op = {.kind = W_UNMOUNT};

			crash_w_issue(&w, &op);
		}
	}
out_close:
	if (w.fs)
		sfs_fs_abort(w.fs);
	if (!dry)
		sfs_crashdev_crash_now(cd);
	sfs_crashdev_counters(cd, &out->ctr);
	if (p->trace && !dry)
		trace_run(p->trace, cd, w.ops, out->n_setup, &out->ctr);
	if (dry) {
		size_t n;
		const struct sfs_crashdev_rec *log = sfs_crashdev_log(cd, &n);

		out->req_op = g_byte_array_sized_new((guint)n);
		for (size_t i = 0; i < n; i++) {
			uint8_t op = (uint8_t)log[i].req.op;

			g_byte_array_append(out->req_op, &op, 1);
		}
	}
	sfs_bdev_close(cd);
	out->m = w.m;
	out->ops = w.ops;
	out->bs = w.bs;
	if (w.err[0])
		g_strlcpy(out->err, w.err, sizeof(out->err));
	g_free(w.buf);
	g_rand_free(w.rand);
	return 0;
}
