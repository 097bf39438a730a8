/*
 * remount.c - changing the knobs of a live mount (sfs_fs_set_knobs, the
 * writes to /.simfs/config), and turning a config into what the cache and
 * the placement model take, at mount and at every change.  The kernel
 * changes the same things through three doors: `mount -o remount` for the
 * journal's commit interval (ext4_remount, fs/ext4/super.c), the vm.dirty_*
 * sysctls for write-back (mm/page-writeback.c), and /sys/fs/ext4/DEV/ for
 * mballoc's tunables (fs/ext4/sysfs.c).  Here one option string reaches
 * them all.
 *
 * Invariants:
 *  - all of an option string or none: the config layer parses it into a
 *    copy (sfs_config_parse_runtime refuses knobs that cannot change while
 *    mounted), the steps that can fail (write-back policy, the allocator's
 *    knobs, the device model) run first and each is undone if a later one
 *    fails, and only then do the clock mode and the journal's parameters
 *    change, which cannot fail;
 *  - fs->cfg always says what is in effect: it is replaced only once
 *    everything took (the "config" stats section and /.simfs/config read
 *    it through sfs_fs_get_config);
 *  - the clock's kind (virtual or real) and the presence of a timing
 *    device are fixed at mount (mount.c, setup_measurement): only a real
 *    clock swaps account and emulate, only a timing device takes a new
 *    disk model, whose counters carry on.
 */
#include <errno.h>
#include <string.h>

#include "clock.h"
#include "fs_priv.h"
#include "journal.h"
#include "timedev.h"

/* The write-back policy cfg asks for: a preset (vm=) with single knobs
 * overriding it.  0, or -EINVAL with *err. */
int sfs_fs_cache_policy(const struct sfs_config *cfg,
			struct sfs_cache_policy *p, char **err)
{
	int rc = sfs_cache_policy_preset(cfg->vm, p);

	if (rc) {
		*err = g_strdup_printf("unknown vm preset '%s' (valid: %s)",
				       cfg->vm, sfs_cache_policy_names());
		return rc;
	}
	if (cfg->dirty_ratio)
		p->dirty_ratio = cfg->dirty_ratio;
	if (cfg->dirty_background_ratio)
		p->dirty_background_ratio = cfg->dirty_background_ratio;
	if (cfg->dirty_bytes)
		p->dirty_bytes = cfg->dirty_bytes;
	if (cfg->dirty_background_bytes)
		p->dirty_background_bytes = cfg->dirty_background_bytes;
	if (cfg->dirty_expire_cs)
		p->dirty_expire_cs = cfg->dirty_expire_cs;
	if (cfg->dirty_writeback_cs)
		p->dirty_writeback_cs = cfg->dirty_writeback_cs;
	return 0;
}

/* Hand cfg's knobs of the running placement model to it (its configure
 * verb).  0, or -EINVAL with *err. */
int sfs_alloc_configure(struct sfs_fs *fs, const struct sfs_config *cfg,
			char **err)
{
	const struct sfs_alloc_ops *o = fs->alloc->ops;
	void *params;
	int rc;

	if (!o->configure)
		return 0;
	params = g_malloc0(o->params_size ? o->params_size : 1);
	rc = sfs_config_alloc_params(cfg, o, params, err);
	if (!rc)
		rc = o->configure(fs->alloc, params, err);
	g_free(params);
	return rc;
}

/*
 * Change knobs of the live mount (/.simfs/config): all of opts or none.
 * The config layer refuses knobs that cannot change while mounted; here
 * the clock must be real to switch account/emulate, and the device must be
 * a timing device to take a new model.  The model is built before anything
 * changes, so a bad spec leaves everything as it was.
 */
int sfs_fs_set_knobs(struct sfs_fs *fs, const char *opts, char **err)
{
	struct sfs_config next;
	enum sfs_timedev_mode mode;
	bool timed, new_mode, new_dev;
	int rc;

	if (!fs || !opts || !err)
		return -EINVAL;
	*err = NULL;
	sfs_lock(fs);
	next = fs->cfg;
	rc = sfs_config_parse_runtime(&next, opts, err);
	if (rc)
		goto out_unlock;
	timed = sfs_timedev_mode(fs->bd, &mode) == 0;
	new_mode = strcmp(next.clock, fs->cfg.clock) != 0;
	new_dev = strcmp(next.device, fs->cfg.device) != 0;
	/* a change this mount cannot make: -EPERM (config.h's errors) */
	rc = -EPERM;
	if (new_mode && (sfs_clock_is_virtual(fs->clock) ||
			 strcmp(next.clock, "virtual") == 0)) {
		*err = g_strdup_printf("clock=%s cannot change to clock=%s "
				       "while mounted (account and emulate "
				       "can swap)",
				       fs->cfg.clock, next.clock);
		goto out_unlock;
	}
	if ((new_mode || new_dev) && !timed) {
		*err = g_strdup("mounted with device=none: there is no "
				"timing device to change");
		goto out_unlock;
	}
	if (new_dev && strcmp(next.device, "none") == 0) {
		*err = g_strdup("device=none only at mount time");
		goto out_unlock;
	}
	if (new_mode && sfs_timedev_mode_parse(next.clock, &mode)) {
		rc = -EINVAL;
		*err = g_strdup_printf("unknown clock '%s'", next.clock);
		goto out_unlock;
	}
	/* the steps that can fail come first, each undone if a later one
	 * fails: the write-back policy, the allocator's knobs, the device */
	struct sfs_cache_policy oldpol, newpol;
	sfs_cache_get_policy(fs->cache, &oldpol);
	rc = sfs_fs_cache_policy(&next, &newpol, err);
	if (rc)
		goto out_unlock;
	rc = sfs_cache_set_policy(fs->cache, &newpol);
	if (rc) {
		*err = g_strdup("inconsistent write-back knobs (dirty ratios "
				"or bytes)");
		goto out_unlock;
	}
	rc = sfs_alloc_configure(fs, &next, err);
	if (rc) {
		sfs_cache_set_policy(fs->cache, &oldpol);
		goto out_unlock;
	}
	if (new_dev) {
		rc = sfs_timedev_set_model(fs->bd, next.device, err);
		if (rc) {
			char *e2 = NULL;

			sfs_cache_set_policy(fs->cache, &oldpol);
			/* the old values, accepted before */
			sfs_alloc_configure(fs, &fs->cfg, &e2);
			g_free(e2);
			goto out_unlock;
		}
	}
	if (new_mode)
		sfs_timedev_set_mode(fs->bd, mode);
	if (fs->jnl) {
		struct sfs_jnl_params jp = {
		    .commit_interval_ns =
			(sfs_ns_t)next.commit_s * SFS_NS_PER_S,
		    .max_txn_blocks = next.journal_max_txn,
		};
		sfs_jnl_set_params(fs->jnl, &jp);
	}
	fs->cfg = next;
	rc = 0;
out_unlock:
	sfs_unlock(fs);
	return rc;
}

void sfs_fs_get_config(struct sfs_fs *fs, struct sfs_config *out)
{
	sfs_lock(fs);
	*out = fs->cfg;
	sfs_unlock(fs);
}
