/*
 * kernelref.c - `simfs bench --reference kernel`: one cell on the host's
 * kernel, beside the model (doc/kernel-reference.md says which rows
 * compare with which presets, and why they differ).
 *
 * sfs_kref_cell, in order (each step undone by the label named for it):
 *   1. plan      the cell's -o text through the knob table (config.h):
 *                alloc= picks block maps or extents (kref_allocs), data=
 *                a journal, delalloc the ext4 driver; mke2fs arguments and
 *                mount options follow from those, nothing from a name
 *   2. image     CELLDIR/kernel/image.img, sparse, the cell's size; mke2fs
 *                on the file with the inode tables and journal zeroed now
 *                (no lazy init thread writing behind the workload's back)
 *   3. losetup   --find --show; the device's stat file is read after the
 *                mount, so the counters hold the workload and unmount only
 *   4. mount     -t ext2/ext3/ext4 -o ...; an ext2/ext3 type the kernel
 *                does not register is retried as ext4
 *   5. run       `simfs run --path MNT -w SPEC --seed N --results CSV`
 *   6. syncfs, jbd2's info (it goes away at umount), umount, the stat
 *      file again, losetup -d, the image removed
 *   7. rows      appended to CELLDIR/kernel/results.csv (phase "all")
 * Invariant: whatever fails, steps 6's umount and detach run for what was
 * set up, and the image is removed; the error is the first one seen.
 * Host caches are not dropped: the counters are taken at the loop device,
 * above the host's page cache, and a fresh mount has a cold cache of its
 * own.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "config.h"
#include "kernelref.h"
#include "mkfs.h"
#include "workload.h"

#define KREF_DEFAULT_SIZE (1ULL << 30) /* simfs run's default --size */
#define KREF_SECTOR_BYTES 512ULL       /* stat's unit, whatever the device */
#define KREF_STAT_FIELDS 17	       /* Documentation/block/stat.rst */

/* simfs's allocators and what the kernel's image needs for them. */
struct kref_alloc {
	const char *name; /* alloc= */
	bool extents;	  /* files mapped by extent trees: -t ext4 */
};

static const struct kref_alloc kref_allocs[] = {
    {"blockmap", false},
    {"reservation", false},
    {"extent", true},
    {"mballoc", true},
};

/* atime= as a mount(8) option. */
struct kref_atime {
	const char *name;
	const char *mount_opt;
};

static const struct kref_atime kref_atimes[] = {
    {"atime", "strictatime"},
    {"relatime", "relatime"},
    {"noatime", "noatime"},
};

/* What one cell does on the kernel. */
struct kref_plan {
	char *spec;		/* -w SPEC */
	char *loadfile;		/* --loadfile FILE, or NULL */
	char *wl_name;		/* the workload's name (CSV column 1) */
	uint64_t seed;		/* --seed */
	uint64_t size_bytes;	/* image size */
	const char *mkfs_type;	/* "ext2", "ext3", "ext4" */
	const char *mount_type; /* the same, or "ext4" for delalloc */
	GPtrArray *mkfs_args;	/* mke2fs's argv after the tool, no image */
	GString *mount_opts;	/* -o text */
	GString *not_kernel;	/* knobs the mount cannot express */
	bool journaled;		/* the image has a journal */
};

/* The counters, as deltas over the run. */
struct kref_counts {
	uint64_t bytes_written;
	uint64_t bytes_read;
	uint64_t write_reqs;
	uint64_t read_reqs;
	uint64_t flushes;
	uint64_t jbd2_txns;
	bool have_flushes; /* the kernel's stat file has fields 16-17 */
};

/* One snapshot of /sys/block/loopN/stat. */
struct kref_dstat {
	uint64_t f[KREF_STAT_FIELDS];
	unsigned n; /* fields present: 11, 15 or 17 by kernel version */
};

static void kref_plan_free(struct kref_plan *p)
{
	g_free(p->spec);
	g_free(p->loadfile);
	g_free(p->wl_name);
	if (p->mkfs_args)
		g_ptr_array_free(p->mkfs_args, TRUE);
	if (p->mount_opts)
		g_string_free(p->mount_opts, TRUE);
	if (p->not_kernel)
		g_string_free(p->not_kernel, TRUE);
}

/* The value of option `s`/`l` at argv[*i] ("-w X", "-wX", "--workload X",
 * "--workload=X"), advancing *i past it; NULL if argv[*i] is another. */
static const char *kref_opt(char **argv, unsigned *i, const char *s,
			    const char *l)
{
	const char *a = argv[*i];
	size_t ll = strlen(l);

	if (s && strcmp(a, s) == 0)
		return argv[*i + 1] ? argv[++*i] : NULL;
	if (s && strncmp(a, s, strlen(s)) == 0 && strlen(a) > strlen(s) &&
	    s[1] != '-')
		return a + strlen(s);
	if (strcmp(a, l) == 0)
		return argv[*i + 1] ? argv[++*i] : NULL;
	if (strncmp(a, l, ll) == 0 && a[ll] == '=')
		return a + ll + 1;
	return NULL;
}

/* Append "key" or "key=value" to a comma-separated list. */
static void kref_list_add(GString *s, const char *item)
{
	if (s->len)
		g_string_append_c(s, ',');
	g_string_append(s, item);
}

/* Append a note to a "; "-separated list. */
static void kref_note_add(GString *s, const char *note)
{
	if (s->len)
		g_string_append(s, "; ");
	g_string_append(s, note);
}

static int kref_size(const char *text, const char *what, uint64_t *out,
		     char **err)
{
	if (sfs_parse_size(text, out) < 0 || *out == 0) {
		*err = g_strdup_printf("bad %s '%s'", what, text);
		return -EINVAL;
	}
	return 0;
}

/*
 * Step 1: read the cell's simfs run arguments and turn its knobs into
 * mke2fs arguments and mount options.  0, or -EINVAL with *err for a
 * workload or knob the kernel cannot run.
 */
static int kref_plan(const struct sfs_experiment *x,
		     const struct sfs_xp_cell *cell, struct kref_plan *p,
		     char **err)
{
	GString *opts = g_string_new(NULL);
	const char *jsize = cell->sys && cell->sys->journal_size
				? cell->sys->journal_size
				: x->journal_size;
	const char *size =
	    cell->sys && cell->sys->size ? cell->sys->size : x->size;
	const struct kref_alloc *al = NULL;
	struct sfs_workload *w = NULL;
	struct sfs_mkfs_params mp;
	struct sfs_config cfg;
	char *unknown = NULL;
	const char *mode;
	int rc = 0;

	p->seed = cell->seed;
	for (unsigned i = 0; cell->argv && cell->argv[i]; i++) {
		char **a = cell->argv;
		const char *v;

		if ((v = kref_opt(a, &i, "-w", "--workload"))) {
			g_free(p->spec);
			p->spec = g_strdup(v);
		} else if ((v = kref_opt(a, &i, NULL, "--loadfile"))) {
			g_free(p->loadfile);
			p->loadfile = g_strdup(v);
		} else if ((v = kref_opt(a, &i, "-o", "--options"))) {
			kref_list_add(opts, v);
		} else if ((v = kref_opt(a, &i, NULL, "--size"))) {
			size = v;
		} else if ((v = kref_opt(a, &i, NULL, "--journal-size"))) {
			jsize = v;
		} else if ((v = kref_opt(a, &i, NULL, "--seed"))) {
			p->seed = g_ascii_strtoull(v, NULL, 10);
		}
	}
	/* the parser's own view of the cell, where it gives one */
	if (cell->spec) {
		g_free(p->spec);
		p->spec = g_strdup(cell->spec);
	}
	if (cell->options) {
		g_string_truncate(opts, 0);
		g_string_append(opts, cell->options);
	}
	if (cell->size)
		size = cell->size;
	if (cell->journal_size)
		jsize = cell->journal_size;
	if (!p->spec && p->loadfile)
		p->spec = g_strdup_printf("dbench,loadfile=%s", p->loadfile);
	if (!p->spec) {
		*err = g_strdup_printf("cell %s: no workload (-w) to run on "
				       "the kernel",
				       cell->id ? cell->id : "?");
		rc = -EINVAL;
		goto out;
	}
	rc = sfs_workload_new(p->spec, &w, err);
	if (rc)
		goto out;
	p->wl_name = g_strdup(sfs_workload_ops_of(w)->name);
	sfs_workload_free(w);

	p->size_bytes = KREF_DEFAULT_SIZE;
	if (size && (rc = kref_size(size, "size", &p->size_bytes, err)))
		goto out;

	sfs_config_defaults(&cfg);
	rc = sfs_config_parse(&cfg, opts->str, &unknown, err);
	if (rc)
		goto out;
	for (size_t k = 0; k < G_N_ELEMENTS(kref_allocs); k++)
		if (strcmp(kref_allocs[k].name, cfg.alloc) == 0)
			al = &kref_allocs[k];
	if (!al) {
		*err = g_strdup_printf("alloc=%s has no kernel counterpart",
				       cfg.alloc);
		rc = -EINVAL;
		goto out;
	}
	if (cfg.journal_dev[0]) {
		*err = g_strdup_printf("journal_dev=%s: an external journal "
				       "has no kernel reference here",
				       cfg.journal_dev);
		rc = -EINVAL;
		goto out;
	}
	p->journaled = cfg.journal[0] && strcmp(cfg.journal, "none") != 0;
	mode = strcmp(cfg.journal, "auto") == 0 ? "ordered" : cfg.journal;
	p->mkfs_type = al->extents ? "ext4" : p->journaled ? "ext3" : "ext2";
	/* delalloc is the ext4 driver's; it mounts ext2/ext3 images too */
	p->mount_type = cfg.delalloc ? "ext4" : p->mkfs_type;

	/* the geometry simfs run's own mkfs uses (cmd_run.c make_image) */
	sfs_mkfs_defaults(&mp);
	p->mkfs_args = g_ptr_array_new_with_free_func(g_free);
	g_ptr_array_add(p->mkfs_args, g_strdup("-F"));
	g_ptr_array_add(p->mkfs_args, g_strdup("-q"));
	g_ptr_array_add(p->mkfs_args, g_strdup("-t"));
	g_ptr_array_add(p->mkfs_args, g_strdup(p->mkfs_type));
	g_ptr_array_add(p->mkfs_args,
			g_strdup_printf("-b%u", (unsigned)mp.block_size));
	g_ptr_array_add(p->mkfs_args,
			g_strdup_printf("-I%u", (unsigned)mp.inode_size));
	g_ptr_array_add(p->mkfs_args,
			g_strdup_printf("-i%u", (unsigned)mp.inode_ratio));
	g_ptr_array_add(p->mkfs_args,
			g_strdup_printf("-m%u", (unsigned)mp.reserved_pct));
	g_ptr_array_add(p->mkfs_args, g_strdup("-E"));
	g_ptr_array_add(p->mkfs_args,
			g_strdup("lazy_itable_init=0,lazy_journal_init=0,"
				 "nodiscard"));
	/* ext2 had no htree; the ext4 driver would index an ext2 image */
	if (strcmp(p->mkfs_type, "ext2") == 0) {
		g_ptr_array_add(p->mkfs_args, g_strdup("-O"));
		g_ptr_array_add(p->mkfs_args, g_strdup("^dir_index"));
	}
	if (al->extents && !p->journaled) {
		g_ptr_array_add(p->mkfs_args, g_strdup("-O"));
		g_ptr_array_add(p->mkfs_args, g_strdup("^has_journal"));
	}
	if (p->journaled && jsize) {
		uint64_t jb;

		rc = kref_size(jsize, "journal size", &jb, err);
		if (rc)
			goto out;
		g_ptr_array_add(p->mkfs_args, g_strdup("-J"));
		g_ptr_array_add(p->mkfs_args,
				g_strdup_printf("size=%" PRIu64,
						(jb + (1 << 20) - 1) >> 20));
	}

	p->mount_opts = g_string_new(NULL);
	p->not_kernel = g_string_new(NULL);
	for (size_t k = 0; k < G_N_ELEMENTS(kref_atimes); k++)
		if (strcmp(kref_atimes[k].name, cfg.atime) == 0)
			kref_list_add(p->mount_opts, kref_atimes[k].mount_opt);
	if (p->journaled) {
		char *d = g_strdup_printf("data=%s", mode);

		kref_list_add(p->mount_opts, d);
		g_free(d);
		if (cfg.commit_s) {
			d = g_strdup_printf("commit=%u",
					    (unsigned)cfg.commit_s);
			kref_list_add(p->mount_opts, d);
			g_free(d);
		}
	}
	if (strcmp(p->mount_type, "ext4") == 0) {
		kref_list_add(p->mount_opts,
			      cfg.delalloc ? "delalloc" : "nodelalloc");
		if (cfg.no_auto_da_alloc)
			kref_list_add(p->mount_opts, "noauto_da_alloc");
		kref_list_add(p->mount_opts, "noinit_itable");
	}
	if (p->mount_opts->len == 0)
		kref_list_add(p->mount_opts, "defaults");
	/* knobs with no per-mount counterpart in the kernel, for setup.txt */
	if (strcmp(cfg.alloc, "reservation") == 0 ||
	    strcmp(cfg.alloc, "blockmap") == 0)
		kref_note_add(p->not_kernel, "alloc= (the kernel places blocks "
					     "with its own allocator)");
	if (strcmp(cfg.dirs, "oldalloc") == 0)
		kref_note_add(p->not_kernel, "dirs=oldalloc (removed from "
					     "the kernel: Orlov always)");
	if (cfg.journal_max_txn)
		kref_note_add(p->not_kernel, "journal_max_txn=");
	kref_note_add(p->not_kernel, "mem=, vm=, dirty_* (the host's page "
				     "cache and sysctls), device=, sched=, "
				     "cpu=, cpus= (the host's hardware)");
out:
	g_free(unknown);
	g_string_free(opts, TRUE);
	return rc;
}

/* The path of tool `name`: PATH first, then the sbin folders root's PATH
 * usually has (a test's PATH may not).  Free with g_free. */
static char *kref_which(const char *name)
{
	static const char *const dirs[] = {"/usr/sbin", "/sbin", "/usr/bin",
					   "/bin"};
	char *p = g_find_program_in_path(name);

	for (size_t i = 0; !p && i < G_N_ELEMENTS(dirs); i++) {
		char *c = g_build_filename(dirs[i], name, NULL);

		if (g_file_test(c, G_FILE_TEST_IS_EXECUTABLE))
			p = c;
		else
			g_free(c);
	}
	return p ? p : g_strdup(name);
}

/* The last non-empty line of text, or "" (a tool's reason). */
static char *kref_last_line(const char *text)
{
	char **lines = g_strsplit(text ? text : "", "\n", -1);
	char *line = NULL;

	for (int i = (int)g_strv_length(lines) - 1; i >= 0 && !line; i--)
		if (*g_strstrip(lines[i]))
			line = g_strdup(lines[i]);
	g_strfreev(lines);
	return line ? line : g_strdup("");
}

/*
 * Run argv (argv[0] a tool name, looked up with kref_which) and wait.
 * 0 when it exits 0; otherwise -EIO with "TOOL: reason" in *err (unless
 * err is NULL).  Its stdout goes to *out (g_free it) when out is given.
 */
static int kref_tool(const char *const *argv, char **out, char **err)
{
	GPtrArray *av = g_ptr_array_new_with_free_func(g_free);
	char *so = NULL, *se = NULL, *why;
	GError *gerr = NULL;
	int status = 0, rc = 0;

	g_ptr_array_add(av, kref_which(argv[0]));
	for (unsigned i = 1; argv[i]; i++)
		g_ptr_array_add(av, g_strdup(argv[i]));
	g_ptr_array_add(av, NULL);
	if (!g_spawn_sync(NULL, (char **)av->pdata, NULL, G_SPAWN_DEFAULT, NULL,
			  NULL, &so, &se, &status, &gerr)) {
		if (err)
			*err =
			    g_strdup_printf("%s: %s", argv[0], gerr->message);
		g_error_free(gerr);
		rc = -EIO;
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		why = kref_last_line(se && *se ? se : so);
		if (err)
			*err = g_strdup_printf(
			    "%s failed (%s %d)%s%s", argv[0],
			    WIFEXITED(status) ? "exit" : "signal",
			    WIFEXITED(status) ? WEXITSTATUS(status)
					      : WTERMSIG(status),
			    *why ? ": " : "", why);
		g_free(why);
		rc = -EIO;
	}
	if (out)
		*out = so;
	else
		g_free(so);
	g_free(se);
	g_ptr_array_free(av, TRUE);
	return rc;
}

/* Read /sys/block/DEV/stat.  0, or -EIO with *err. */
static int kref_read_stat(const char *dev, struct kref_dstat *st, char **err)
{
	char *path = g_strdup_printf("/sys/block/%s/stat", dev);
	char *text = NULL, **tok;
	GError *gerr = NULL;
	int rc = 0;

	memset(st, 0, sizeof(*st));
	if (!g_file_get_contents(path, &text, NULL, &gerr)) {
		*err =
		    g_strdup_printf("cannot read %s: %s", path, gerr->message);
		g_error_free(gerr);
		g_free(path);
		return -EIO;
	}
	tok = g_strsplit_set(g_strstrip(text), " \t\n", -1);
	for (unsigned i = 0; tok[i] && st->n < KREF_STAT_FIELDS; i++)
		if (*tok[i])
			st->f[st->n++] = g_ascii_strtoull(tok[i], NULL, 10);
	if (st->n < 11) {
		*err = g_strdup_printf("%s: %u fields, expected 11 to 17", path,
				       st->n);
		rc = -EIO;
	}
	g_strfreev(tok);
	g_free(text);
	g_free(path);
	return rc;
}

/* Transactions jbd2 committed since the mount, from its info file's first
 * line ("N transactions (M requested), each up to B blocks"); false when
 * the device has no journal (no such file). */
static bool kref_jbd2_txns(const char *dev, uint64_t *out)
{
	char *path = g_strdup_printf("/proc/fs/jbd2/%s-8/info", dev);
	char *text = NULL;
	bool ok = g_file_get_contents(path, &text, NULL, NULL);

	*out = ok ? g_ascii_strtoull(text, NULL, 10) : 0;
	g_free(text);
	g_free(path);
	return ok;
}

/* One device counter's delta, 0 if the counter went backwards (reset). */
static uint64_t kref_delta(const struct kref_dstat *a,
			   const struct kref_dstat *b, unsigned field)
{
	return b->f[field] >= a->f[field] ? b->f[field] - a->f[field] : 0;
}

/* The rows both sides share (kernelref.h). */
static void kref_write_rows(FILE *out, const char *wl,
			    const struct kref_counts *c)
{
	sfs_wl_metric_row(out, wl, "all", "dev_bytes_written",
			  (double)c->bytes_written, "B");
	sfs_wl_metric_row(out, wl, "all", "dev_bytes_read",
			  (double)c->bytes_read, "B");
	sfs_wl_metric_row(out, wl, "all", "dev_write_requests",
			  (double)c->write_reqs, "requests");
	sfs_wl_metric_row(out, wl, "all", "dev_read_requests",
			  (double)c->read_reqs, "requests");
	if (c->have_flushes)
		sfs_wl_metric_row(out, wl, "all", "dev_flushes",
				  (double)c->flushes, "requests");
	sfs_wl_metric_row(out, wl, "all", "jbd2_transactions",
			  (double)c->jbd2_txns, "transactions");
}

/* Append the rows to csv, with the header first if the file is new or
 * empty (simfs run --path may not have written one).  0 or -EIO. */
static int kref_append_rows(const char *csv, const char *wl,
			    const struct kref_counts *c, char **err)
{
	struct stat st;
	bool fresh = stat(csv, &st) != 0 || st.st_size == 0;
	FILE *f = fopen(csv, "a");

	if (!f) {
		*err = g_strdup_printf("cannot write %s: %s", csv,
				       g_strerror(errno));
		return -EIO;
	}
	if (fresh)
		fputs("workload,phase,metric,value,unit\n", f);
	kref_write_rows(f, wl, c);
	if (fclose(f) != 0) {
		*err = g_strdup_printf("cannot write %s: %s", csv,
				       g_strerror(errno));
		return -EIO;
	}
	return 0;
}

/* Step 5: the workload through `simfs run --path`, its output to
 * stdout.txt.  0, or -EIO with the run's last line of error. */
static int kref_run(const struct kref_plan *p, const char *simfs_path,
		    const char *mnt, const char *kdir, const char *csv,
		    char **err)
{
	char *seed = g_strdup_printf("%" PRIu64, p->seed);
	const char *argv[] = {simfs_path,  "run",   "--path", mnt,
			      "-w",	   p->spec, "--seed", seed,
			      "--results", csv,	    NULL};
	char *so = NULL, *se = NULL, *out_path, *why;
	GError *gerr = NULL;
	GString *text;
	int status = 0, rc = 0;

	if (!g_spawn_sync(kdir, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL,
			  NULL, &so, &se, &status, &gerr)) {
		*err = g_strdup_printf("cannot run %s: %s", simfs_path,
				       gerr->message);
		g_error_free(gerr);
		g_free(seed);
		return -EIO;
	}
	text = g_string_new(so);
	if (se && *se)
		g_string_append_printf(text, "--- stderr ---\n%s", se);
	out_path = g_build_filename(kdir, "stdout.txt", NULL);
	g_file_set_contents(out_path, text->str, (gssize)text->len, NULL);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		why = kref_last_line(se && *se ? se : so);
		*err = g_strdup_printf(
		    "simfs run --path %s -w %s failed "
		    "(%s %d)%s%s",
		    mnt, p->spec, WIFEXITED(status) ? "exit" : "signal",
		    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
		    *why ? ": " : "", why);
		g_free(why);
		rc = -EIO;
	}
	g_free(out_path);
	g_string_free(text, TRUE);
	g_free(so);
	g_free(se);
	g_free(seed);
	return rc;
}

/* Flush the mounted filesystem (data, metadata, the journal's commit). */
static int kref_syncfs(const char *mnt, char **err)
{
	int fd = open(mnt, O_RDONLY | O_DIRECTORY);
	int rc = 0;

	if (fd < 0 || syncfs(fd) < 0) {
		*err = g_strdup_printf("syncfs %s: %s", mnt, g_strerror(errno));
		rc = -EIO;
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Create path as a sparse file of size bytes.  0 or -errno with *err. */
static int kref_make_file(const char *path, uint64_t size, char **err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0) {
		int e = errno;

		*err = g_strdup_printf("cannot create %s: %s", path,
				       g_strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	close(fd);
	return 0;
}

/* Which driver serves the mount: the ext4 driver registers every
 * filesystem it mounts under /sys/fs/ext4/. */
static const char *kref_driver(const char *dev, const char *type)
{
	char *p = g_strdup_printf("/sys/fs/ext4/%s", dev);
	bool ext4 = g_file_test(p, G_FILE_TEST_IS_DIR);

	g_free(p);
	return ext4 ? "ext4" : type;
}

/* setup.txt: how the kernel side was made, for the report. */
static void kref_write_setup(const char *kdir, const struct kref_plan *p,
			     const char *image, const char *dev,
			     const char *mount_type, const char *mnt)
{
	char *path = g_build_filename(kdir, "setup.txt", NULL);
	char *kernel = NULL, *sched = NULL, *sp;
	GString *s = g_string_new(NULL);

	g_file_get_contents("/proc/sys/kernel/osrelease", &kernel, NULL, NULL);
	sp = g_strdup_printf("/sys/block/%s/queue/scheduler", dev);
	g_file_get_contents(sp, &sched, NULL, NULL);
	g_string_append_printf(s, "kernel: %s\n",
			       kernel ? g_strstrip(kernel) : "?");
	g_string_append(s, "mke2fs:");
	for (unsigned i = 0; i < p->mkfs_args->len; i++)
		g_string_append_printf(s, " %s",
				       (char *)p->mkfs_args->pdata[i]);
	g_string_append_printf(s, " %s\n", image);
	g_string_append_printf(
	    s, "mount: -t %s -o %s%s /dev/%s %s\n", mount_type,
	    p->mount_opts->str,
	    strcmp(mount_type, p->mount_type) != 0 ? ",nodelalloc" : "", dev,
	    mnt);
	if (strcmp(mount_type, p->mount_type) != 0)
		g_string_append_printf(s,
				       "note: -t %s refused, retried as "
				       "ext4\n",
				       p->mount_type);
	g_string_append_printf(s, "driver: %s\n", kref_driver(dev, mount_type));
	g_string_append_printf(s, "scheduler: %s\n",
			       sched ? g_strstrip(sched) : "?");
	g_string_append_printf(s, "workload: %s (seed %" PRIu64 ")\n", p->spec,
			       p->seed);
	g_string_append_printf(s, "not on the kernel side: %s\n",
			       p->not_kernel->str);
	g_file_set_contents(path, s->str, (gssize)s->len, NULL);
	g_string_free(s, TRUE);
	g_free(sp);
	g_free(sched);
	g_free(kernel);
	g_free(path);
}

/* Step 2's mke2fs on the image file.  0 or -EIO with its reason. */
static int kref_mkfs(const struct kref_plan *p, const char *image, char **err)
{
	GPtrArray *av = g_ptr_array_new();
	int rc;

	g_ptr_array_add(av, (char *)"mke2fs");
	for (unsigned i = 0; i < p->mkfs_args->len; i++)
		g_ptr_array_add(av, p->mkfs_args->pdata[i]);
	g_ptr_array_add(av, (char *)image);
	g_ptr_array_add(av, NULL);
	rc = kref_tool((const char *const *)av->pdata, NULL, err);
	g_ptr_array_free(av, TRUE);
	return rc;
}

/* Step 4: mount, retrying an ext2/ext3 type the kernel lacks as ext4.
 * The type used goes to *type_out.  0 or -EIO with mount's reason. */
static int kref_mount(const struct kref_plan *p, const char *dev,
		      const char *mnt, const char **type_out, char **err)
{
	const char *argv[] = {
	    "mount", "-t", p->mount_type, "-o", p->mount_opts->str,
	    dev,     mnt,  NULL};
	char *err2 = NULL, *fallback;
	bool ok;
	int rc;

	*type_out = p->mount_type;
	rc = kref_tool(argv, NULL, err);
	if (rc == 0 || strcmp(p->mount_type, "ext4") == 0)
		return rc;
	/* as ext4, an ext2/ext3 image would get delalloc by default */
	fallback = g_strdup_printf("%s,nodelalloc", p->mount_opts->str);
	argv[2] = "ext4";
	argv[4] = fallback;
	ok = kref_tool(argv, NULL, &err2) == 0;
	g_free(fallback);
	if (ok) {
		g_free(*err);
		*err = NULL;
		*type_out = "ext4";
		return 0;
	}
	g_free(err2);
	return rc;
}

/* Step 6's umount: plain, then lazy if the mount is busy.  0 or -EIO. */
static int kref_umount(const char *mnt, char **err)
{
	const char *argv[] = {"umount", mnt, NULL};
	const char *lazy[] = {"umount", "-l", mnt, NULL};
	int rc = kref_tool(argv, NULL, err);

	if (rc)
		kref_tool(lazy, NULL, NULL);
	return rc;
}

int sfs_kref_cell(const struct sfs_experiment *x,
		  const struct sfs_xp_cell *cell, const char *celldir,
		  const char *simfs_path, char **err)
{
	struct kref_plan plan = {0};
	struct kref_counts c = {0};
	struct kref_dstat before, after;
	char *kdir = NULL, *image = NULL, *mnt = NULL, *csv = NULL;
	char *dev = NULL, *uerr = NULL, *simfs = NULL;
	const char *devname, *mount_type;
	const char *setup[] = {"losetup", "--find", "--show", NULL, NULL};
	const char *detach[] = {"losetup", "-d", NULL, NULL};
	int rc;

	if (!x || !cell || !celldir || !simfs_path || !err)
		return -EINVAL;
	*err = NULL;
	if (geteuid() != 0) {
		*err = g_strdup("the kernel reference needs root (losetup, "
				"mount)");
		return -EPERM;
	}
	if (!g_file_test("/dev/loop-control", G_FILE_TEST_EXISTS) &&
	    !g_file_test("/dev/loop0", G_FILE_TEST_EXISTS)) {
		*err = g_strdup("no loop devices (/dev/loop-control missing: "
				"modprobe loop)");
		return -ENODEV;
	}
	rc = kref_plan(x, cell, &plan, err);
	if (rc)
		goto out;
	/* the run starts in kdir: a relative path would no longer hold */
	if (strchr(simfs_path, '/'))
		simfs = g_canonicalize_filename(simfs_path, NULL);
	else
		simfs = kref_which(simfs_path);

	kdir = g_build_filename(celldir, "kernel", NULL);
	mnt = g_build_filename(kdir, "mnt", NULL);
	image = g_build_filename(kdir, "image.img", NULL);
	csv = g_build_filename(kdir, "results.csv", NULL);
	if (g_mkdir_with_parents(mnt, 0755) < 0) {
		rc = -errno;
		*err = g_strdup_printf("cannot create %s: %s", mnt,
				       g_strerror(errno));
		goto out;
	}
	g_unlink(csv);
	rc = kref_make_file(image, plan.size_bytes, err);
	if (rc)
		goto out_rm_image;
	rc = kref_mkfs(&plan, image, err);
	if (rc)
		goto out_rm_image;

	setup[3] = image;
	rc = kref_tool(setup, &dev, err);
	if (rc == 0 && dev)
		g_strstrip(dev);
	if (rc == 0 && (!dev || !g_str_has_prefix(dev, "/dev/"))) {
		*err = g_strdup_printf("losetup --find --show gave '%s'",
				       dev ? dev : "");
		rc = -EIO;
	}
	if (rc) {
		if (rc == -EIO && *err && strstr(*err, "find an unused"))
			rc = -ENODEV;
		g_free(dev);
		dev = NULL;
		goto out_rm_image;
	}
	devname = dev + strlen("/dev/");

	rc = kref_mount(&plan, dev, mnt, &mount_type, err);
	if (rc)
		goto out_detach;
	kref_write_setup(kdir, &plan, image, devname, mount_type, mnt);
	rc = kref_read_stat(devname, &before, err);
	if (rc)
		goto out_umount;
	rc = kref_run(&plan, simfs, mnt, kdir, csv, err);
	if (rc)
		goto out_umount;
	rc = kref_syncfs(mnt, err);
	if (rc)
		goto out_umount;
	kref_jbd2_txns(devname, &c.jbd2_txns);

out_umount:
	if (kref_umount(mnt, &uerr) && rc == 0) {
		*err = uerr;
		uerr = NULL;
		rc = -EIO;
	}
	if (rc == 0) {
		rc = kref_read_stat(devname, &after, err);
		c.read_reqs = kref_delta(&before, &after, 0);
		c.bytes_read =
		    kref_delta(&before, &after, 2) * KREF_SECTOR_BYTES;
		c.write_reqs = kref_delta(&before, &after, 4);
		c.bytes_written =
		    kref_delta(&before, &after, 6) * KREF_SECTOR_BYTES;
		c.have_flushes = before.n >= 17 && after.n >= 17;
		c.flushes =
		    c.have_flushes ? kref_delta(&before, &after, 15) : 0;
	}
out_detach:
	detach[2] = dev;
	if (kref_tool(detach, NULL, rc ? NULL : &uerr) && rc == 0) {
		*err = uerr;
		uerr = NULL;
		rc = -EIO;
	}
out_rm_image:
	g_unlink(image);
	g_rmdir(mnt);
	if (rc == 0)
		rc = kref_append_rows(csv, plan.wl_name, &c, err);
out:
	g_free(simfs);
	g_free(uerr);
	g_free(dev);
	g_free(csv);
	g_free(image);
	g_free(mnt);
	g_free(kdir);
	kref_plan_free(&plan);
	return rc;
}

/* ------------------------------------------------------------------ */
/* the simfs side                                                      */
/* ------------------------------------------------------------------ */

/* The unsigned integer at dotted path in o ("submitted.write.bytes"). */
static bool kref_json_u64(JsonObject *o, const char *path, uint64_t *out)
{
	char **parts = g_strsplit(path, ".", -1);
	JsonNode *n = NULL;
	bool ok = true;

	for (unsigned i = 0; ok && parts[i]; i++) {
		if (!o || !json_object_has_member(o, parts[i])) {
			ok = false;
			break;
		}
		n = json_object_get_member(o, parts[i]);
		o = JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
	}
	ok = ok && n && JSON_NODE_HOLDS_VALUE(n) &&
	     json_node_get_value_type(n) == G_TYPE_INT64 &&
	     json_node_get_int(n) >= 0;
	if (ok)
		*out = (uint64_t)json_node_get_int(n);
	g_strfreev(parts);
	return ok;
}

int sfs_kref_simfs_rows(const char *stats_json, FILE *out, const char *workload)
{
	JsonParser *parser;
	JsonObject *root, *dev, *jnl = NULL;
	struct kref_counts c = {.have_flushes = true};
	GError *gerr = NULL;
	bool timed, ok;
	int rc = 0;

	if (!stats_json || !out || !workload)
		return -EINVAL;
	if (!g_file_test(stats_json, G_FILE_TEST_EXISTS))
		return -ENOENT;
	parser = json_parser_new();
	if (!json_parser_load_from_file(parser, stats_json, &gerr)) {
		g_error_free(gerr);
		rc = -EINVAL;
		goto out;
	}
	if (!JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser))) {
		rc = -EINVAL;
		goto out;
	}
	root = json_node_get_object(json_parser_get_root(parser));
	if (!json_object_has_member(root, "simfs_stats_version") ||
	    !json_object_has_member(root, "device") ||
	    !JSON_NODE_HOLDS_OBJECT(json_object_get_member(root, "device"))) {
		rc = -EINVAL;
		goto out;
	}
	dev = json_object_get_object_member(root, "device");
	/* a timing device reports what the engine submitted and what the
	 * scheduler served after merging; a plain device only the former */
	timed = json_object_has_member(dev, "submitted");
	if (timed) {
		ok =
		    kref_json_u64(dev, "submitted.write.bytes",
				  &c.bytes_written) &&
		    kref_json_u64(dev, "submitted.read.bytes", &c.bytes_read) &&
		    kref_json_u64(dev, "submitted.flush.requests", &c.flushes);
		if (!kref_json_u64(dev, "served.write", &c.write_reqs))
			ok =
			    ok && kref_json_u64(dev, "submitted.write.requests",
						&c.write_reqs);
		if (!kref_json_u64(dev, "served.read", &c.read_reqs))
			ok = ok && kref_json_u64(dev, "submitted.read.requests",
						 &c.read_reqs);
	} else {
		ok = kref_json_u64(dev, "write.bytes", &c.bytes_written) &&
		     kref_json_u64(dev, "read.bytes", &c.bytes_read) &&
		     kref_json_u64(dev, "write.requests", &c.write_reqs) &&
		     kref_json_u64(dev, "read.requests", &c.read_reqs) &&
		     kref_json_u64(dev, "flush.requests", &c.flushes);
	}
	if (!ok) {
		rc = -EINVAL;
		goto out;
	}
	if (json_object_has_member(root, "journal") &&
	    JSON_NODE_HOLDS_OBJECT(json_object_get_member(root, "journal")))
		jnl = json_object_get_object_member(root, "journal");
	if (jnl && !kref_json_u64(jnl, "commits_total", &c.jbd2_txns))
		c.jbd2_txns = 0;
	kref_write_rows(out, workload, &c);
out:
	g_object_unref(parser);
	return rc;
}
