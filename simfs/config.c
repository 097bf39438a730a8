/*
 * config.c - the knob table and the mount-option parser.
 *
 * Every knob is one row of cfg_knobs[], or of a model's knob table that a
 * row stands for (below): name, type, default (as text, parsed by the same
 * code as user input), range, help, and the offset of its field in struct
 * sfs_config.  sfs_config_defaults, sfs_config_parse/set, sfs_config_print
 * and sfs_config_print_help all walk that table, so a new knob is one field
 * in config.h plus one row here or in its model's table.
 *
 * Option strings use the mount(8) style: comma-separated "key" or
 * "key=value" tokens.  Booleans accept "key", "nokey" and key=1/0, yes/no,
 * on/off, true/false.  A row may be an alias of another ("journal" is
 * "data") or its inverse ("rw" is "ro" negated).  Parsing works on a copy:
 * on any error the caller's config is left as it was and *err gets one line.
 *
 * Choices are checked against the registry that owns them: alloc= against
 * models/alloc/registry.c, data= against the journal registry (the one
 * place a new journal policy is listed until its registry exists), device=
 * against the device models and presets (devmodel.h), sched= against the
 * I/O schedulers (sched.h), cpu= against the CPU model's presets
 * (cpumodel.h).  cpu= and cpus= describe the machine, not the filesystem:
 * no preset sets them.
 *
 * Spec knobs (device=, sched=, cpu=) take "NAME[,key=value...]".  Since an
 * option string is itself comma separated, "device=hdd,rpm=7200,mem=1G" is
 * read as: a token "key=value" whose key is no simfs knob but is a knob of
 * the model named by the latest spec knob (else of an earlier one) is
 * appended to that spec; everything else is handled as usual (mem=1G is
 * simfs's).  A spec is checked whole, by building the model once, after the
 * whole string is read.
 *
 * Knobs flagged CFG_RUNTIME may change while mounted
 * (sfs_config_parse_runtime, used by the engine's sfs_fs_set_knobs).
 *
 * The allocators' knobs are no rows of cfg_knobs[]: each placement model
 * declares them in its own table (struct sfs_knob, devmodel.h, as device
 * models do), and the row flagged CFG_ALLOC_ROWS stands for all of them,
 * in registry order, wherever the table is walked (parsing, --help, the
 * man page, printing, suggestions).  Their values are kept as text in
 * cfg->alloc_knobs, checked by the owner's table when set; a live knob of
 * the table may change while mounted.
 *
 * The journal's knobs (commit=, journal_max_txn=) are declared in the same
 * way, in models/journal/knobs.c, and so are the page cache's (vm=, the
 * dirty_* knobs, mem=), in simfs/cache_knobs.c; a row flagged
 * CFG_MODEL_ROWS stands for each table.  Their values are fields of struct
 * sfs_config (the engine reads them there), so cfg_row hands each out as an
 * ordinary row of this table (live = CFG_RUNTIME; an enum is a CFG_CHOICE
 * kept as its name) and every walker treats it as one.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "alloc.h"
#include "config.h"
#include "cpumodel.h"
#include "devmodel.h"
#include "journal.h"
#include "sched.h"

enum cfg_type {
	CFG_BOOL,   /* bool field */
	CFG_SIZE,   /* uint64_t bytes, K/M/G/T suffixes */
	CFG_UINT,   /* uint32_t, decimal */
	CFG_CHOICE, /* char[SFS_NAME_LEN], one of a list of names */
	CFG_SPEC,   /* char[SFS_SPEC_LEN], "NAME[,key=value...]" of a model */
	CFG_PATH,   /* char[SFS_PATH_LEN], a file name; "" = none */
};

/* Flags of a knob row. */
#define CFG_INVERT 0x1	/* bool stored negated ("rw" sets ro = false) */
#define CFG_ALIAS 0x2	/* another name of a row: not printed */
#define CFG_RUNTIME 0x4 /* may change while mounted */
#define CFG_ALLOC_ROWS 0x8 /* stands for the allocators' knob tables */
#define CFG_MODEL_ROWS 0x10 /* stands for a model's knob table (.table) */

struct cfg_knob {
	const char *name;
	enum cfg_type type;
	size_t offset;	 /* of the field in struct sfs_config */
	const char *def; /* default, as option text; NULL for aliases */
	uint64_t min;	 /* SIZE/UINT: smallest accepted value */
	uint64_t max;	 /* SIZE/UINT: largest accepted value */
	/* CHOICE: is name valid?  CHOICE, SPEC: names() appends the valid
	 * ones.  A CHOICE without them takes one of choices ("a|b"). */
	bool (*valid)(const char *name);
	void (*names)(GString *out);
	const char *choices;
	/* SPEC: check a whole spec (0, or -EINVAL and *err); the knob table
	 * of the model called name (NULL if none), for attaching options. */
	int (*check)(const char *spec, char **err);
	const struct sfs_knob *(*subknobs)(const char *name);
	/* BOOL spelling of a CHOICE field ("oldalloc" for dirs=oldalloc):
	 * the value stored for on / off; NULL for a plain bool. */
	const char *on_value;
	const char *off_value;
	unsigned flags;	     /* CFG_* */
	const char *metavar; /* for --help: "NAME", "SIZE", ... */
	const char *help;
	/* CFG_MODEL_ROWS: the model's knob table, whose offsets are into
	 * struct sfs_config */
	const struct sfs_knob *const *table;
};

/* Journal policies: "auto" (ordered if the image has a journal, else
 * none) or a policy of the journal registry (simfs/journal.h). */
static bool cfg_journal_valid(const char *name)
{
	return strcmp(name, "auto") == 0 || sfs_jnl_find(name) != NULL;
}

static void cfg_journal_list(GString *out)
{
	const struct sfs_jnl_ops *o;

	g_string_append(out, "auto");
	for (unsigned i = 0; (o = sfs_jnl_nth(i)); i++)
		g_string_append_printf(out, ", %s", o->name);
}

static bool cfg_alloc_valid(const char *name)
{
	return sfs_alloc_find(name) != NULL || strcmp(name, "delalloc") == 0;
}

static void cfg_alloc_list(GString *out)
{
	g_string_append(out, sfs_alloc_names());
	g_string_append(out, ", delalloc (= mballoc + delalloc)");
}

static const char *const cfg_clock_names[] = {
    "virtual",
    "account",
    "emulate",
    NULL,
};

static bool cfg_clock_valid(const char *name)
{
	return g_strv_contains((const char *const *)cfg_clock_names, name);
}

static void cfg_clock_list(GString *out)
{
	for (size_t i = 0; cfg_clock_names[i]; i++)
		g_string_append_printf(out, "%s%s", i ? ", " : "",
				       cfg_clock_names[i]);
}

/* Directory placement (fs.c find_inode_group). */
static const char *const cfg_dirs_names[] = {"orlov", "oldalloc", NULL};
/* atime policy (inode.c sfs_read). */
static const char *const cfg_atime_names[] = {"relatime", "atime", "noatime",
					      NULL};

static bool cfg_dirs_valid(const char *name)
{
	return g_strv_contains((const char *const *)cfg_dirs_names, name);
}

static void cfg_dirs_list(GString *out)
{
	g_string_append(out, "orlov, oldalloc");
}

static bool cfg_atime_valid(const char *name)
{
	return g_strv_contains((const char *const *)cfg_atime_names, name);
}

static void cfg_atime_list(GString *out)
{
	g_string_append(out, "relatime, atime, noatime");
}

/*
 * The historical systems as data: option text applied before the rest of
 * the string (doc/allocators.md).  They set filesystem knobs and the one
 * block-layer default of their era that changes what the disk sees, the
 * I/O scheduler: CFQ, Linux's default from 2.6.18, for the systems of
 * 2.6.18 and later (ext2rs, ext3rs, ext3rs-ordered, ext3i, ext4,
 * ext4-nojournal); the
 * elevator (C-LOOK with deadlines, as 2.4's and the early 2.6 schedulers
 * without CFQ's per-process slices) for the classic ones.  Under CFQ an
 * O_DIRECT write is its process's synchronous request, as from Linux
 * 2.6.29 (sync_writes=on); 2.6.18 to 2.6.28 queued such writes
 * asynchronously, one queue for all processes (sync_writes=off), which no
 * preset sets: over the modelled drive it takes the window presets to
 * within 1.2x of ext4 with eight writers, further from the 2009
 * comparison (doc/benchmarks.md, "Check 1 against table A").  sched=
 * after the preset overrides it.  The other kernel-wide knobs (vm=, atime=) are
 * left to the user, since the published comparisons ran every filesystem
 * on one kernel.
 */
/*
 * The on-disk features each preset's era formatted with (simfs run --mkfs
 * preset; the sources are in doc/user-guide.md's preset table):
 *   MKFS_OLD   mke2fs before e2fsprogs 1.39 (2006), which had no
 *              mke2fs.conf: sparse_super and filetype, 128-byte inodes
 *              (large_file and ext_attr, which simfs mkfs always sets,
 *              came with the kernel's first large file or xattr)
 *   MKFS_1_41  e2fsprogs 1.41's built-in profile (2008, misc/
 *              default_profile.c): sparse_super, filetype, resize_inode,
 *              dir_index, ext_attr and 256-byte inodes for every type
 *   MKFS_EXT4  1.41's ext4 type: has_journal, extent, huge_file, flex_bg,
 *              uninit_bg, dir_nlink, extra_isize
 */
#define MKFS_OLD "-I 128"
#define MKFS_1_41 "-I 256 -O resize_inode,dir_index"
#define MKFS_EXT4 "extent,huge_file,flex_bg,uninit_bg,dir_nlink,extra_isize"

static const struct sfs_config_preset cfg_presets[] = {
    {"ext2", "data=none,alloc=blockmap,nodelalloc,dirs=orlov,sched=elevator",
     "classic ext2: no journal, block-by-block bitmap search, Orlov "
     "directories",
     false, NULL, MKFS_OLD},
    {"ext2rs",
     "data=none,alloc=reservation,reservation_window=8,"
     "reservation_max=1027,nodelalloc,dirs=orlov,sched=cfq",
     "ext2 with ext3's reservation windows, as Linux has it since "
     "2.6.24 (the 2009 iozone comparison's ext2)",
     false, NULL, MKFS_1_41},
    {"ext3", "data=ordered,alloc=blockmap,nodelalloc,dirs=orlov,sched=elevator",
     "classic ext3 (2.4, 2.6 before ~2.6.10): ordered journal, ext2's "
     "block-by-block placement",
     true, NULL, MKFS_OLD " -O has_journal"},
    {"ext3-writeback",
     "data=writeback,alloc=blockmap,nodelalloc,"
     "dirs=orlov,sched=elevator",
     "classic ext3, data=writeback", true, NULL, MKFS_OLD " -O has_journal"},
    {"ext3-journal",
     "data=journal,alloc=blockmap,nodelalloc,dirs=orlov,sched=elevator",
     "classic ext3, data=journal", true, NULL, MKFS_OLD " -O has_journal"},
    {"ext3rs",
     "data=writeback,alloc=reservation,reservation_window=8,"
     "reservation_max=1027,nodelalloc,dirs=orlov,sched=cfq",
     "ext3 with reservation windows mounted data=writeback, as the "
     "2005 comparison that named ext3rs ran it (Cao et al., OLS 2005)",
     true, NULL, MKFS_OLD " -O has_journal"},
    {"ext3rs-ordered",
     "data=ordered,alloc=reservation,reservation_window=8,"
     "reservation_max=1027,nodelalloc,dirs=orlov,sched=cfq",
     "ext3 with reservation windows, ordered journal: Linux's default "
     "since ~2.6.10 (8 blocks, max 1027; the 2009 iozone comparison's "
     "ext3)",
     true, NULL, MKFS_1_41 ",has_journal"},
    {"ext3i", "data=ordered,alloc=mballoc,delalloc,dirs=orlov,sched=cfq",
     "ext3 journal with extents + mballoc + delayed allocation (early "
     "ext4dev)",
     true, "mballoc", MKFS_1_41 ",has_journal,extent"},
    {"ext4", "data=ordered,alloc=mballoc,delalloc,dirs=orlov,sched=cfq",
     "ext4: extents + mballoc + delayed allocation, ordered journal", true,
     "mballoc", MKFS_1_41 ",has_journal," MKFS_EXT4},
    {"ext4-nojournal", "data=none,alloc=mballoc,delalloc,dirs=orlov,sched=cfq",
     "ext4's allocator and delayed allocation without a journal "
     "(-O ^has_journal)",
     false, "mballoc", MKFS_1_41 "," MKFS_EXT4},
};

const struct sfs_config_preset *sfs_config_preset_nth(unsigned i)
{
	return i < G_N_ELEMENTS(cfg_presets) ? &cfg_presets[i] : NULL;
}

const struct sfs_config_preset *sfs_config_preset_find(const char *name)
{
	for (size_t i = 0; name && i < G_N_ELEMENTS(cfg_presets); i++)
		if (strcmp(cfg_presets[i].name, name) == 0)
			return &cfg_presets[i];
	return NULL;
}

void sfs_config_list_presets(FILE *out)
{
	fputs("presets (-o preset=NAME; later options override):\n", out);
	for (size_t i = 0; i < G_N_ELEMENTS(cfg_presets); i++) {
		const struct sfs_config_preset *p = &cfg_presets[i];

		fprintf(out, "  %-15s %s\n", p->name, p->opts);
		fprintf(out, "  %-15s %s%s%s%s\n", "", p->help,
			p->journaled ? "; needs a journal (simfs mkfs "
				       "--preset NAME)"
				     : "",
			p->needs_alloc && !sfs_alloc_find(p->needs_alloc)
			    ? "; needs alloc="
			    : "",
			p->needs_alloc && !sfs_alloc_find(p->needs_alloc)
			    ? p->needs_alloc
			    : "");
		fprintf(out,
			"  %-15s its era's mkfs (simfs run --mkfs preset): "
			"%s\n",
			"", p->mkfs);
	}
}

static bool cfg_preset_valid(const char *name)
{
	return sfs_config_preset_find(name) != NULL;
}

static void cfg_preset_list(GString *out)
{
	for (size_t i = 0; i < G_N_ELEMENTS(cfg_presets); i++)
		g_string_append_printf(out, "%s%s", i ? ", " : "",
				       cfg_presets[i].name);
}

/* device=none stacks no timing device at all (mount.c setup_measurement). */
#define CFG_DEVICE_NONE "none"

static int cfg_device_check(const char *spec, char **err)
{
	struct sfs_devmodel *m = NULL;
	int rc;

	if (strcmp(spec, CFG_DEVICE_NONE) == 0)
		return 0;
	rc = sfs_devmodel_new(spec, &m, err);
	sfs_devmodel_free(m);
	return rc;
}

static const struct sfs_knob *cfg_device_knobs(const char *name)
{
	const struct sfs_devmodel_preset *p = sfs_devmodel_find_preset(name);
	const struct sfs_devmodel_ops *ops =
	    sfs_devmodel_find(p ? p->model : name);

	return ops ? ops->knobs : NULL;
}

static void cfg_device_list(GString *out)
{
	const struct sfs_devmodel_ops *ops;
	const struct sfs_devmodel_preset *p;

	g_string_append(out, CFG_DEVICE_NONE);
	for (unsigned i = 0; (ops = sfs_devmodel_nth(i)); i++)
		g_string_append_printf(out, ", %s", ops->name);
	for (unsigned i = 0; (p = sfs_devmodel_nth_preset(i)); i++)
		if (!sfs_devmodel_find(p->name))
			g_string_append_printf(out, ", %s", p->name);
}

static int cfg_sched_check(const char *spec, char **err)
{
	struct sfs_sched *s = NULL;
	int rc = sfs_sched_new(spec, &s, err);

	if (s)
		sfs_sched_free(s);
	return rc;
}

static void cfg_sched_list(GString *out)
{
	const char *name;

	for (unsigned i = 0; (name = sfs_sched_nth(i, NULL)); i++)
		g_string_append_printf(out, "%s%s", out->len ? ", " : "", name);
}

/* cpu=: a CPU model spec (cpumodel.h). */
static int cfg_cpu_check(const char *spec, char **err)
{
	struct sfs_cpumodel *m = NULL;
	int rc = sfs_cpumodel_new(spec, &m, err);

	sfs_cpumodel_free(m);
	return rc;
}

static const struct sfs_knob *cfg_cpu_knobs(const char *name)
{
	return sfs_cpumodel_find_preset(name) ? sfs_cpumodel_knobs() : NULL;
}

static void cfg_cpu_list(GString *out)
{
	const struct sfs_cpu_preset *p;

	for (unsigned i = 0; (p = sfs_cpumodel_nth_preset(i)); i++)
		g_string_append_printf(out, "%s%s", i ? ", " : "", p->name);
}

/* A knob table's enum choices "a|b|c" as "a, b, c" (g_free it). */
static char *cfg_choices_list(const char *choices)
{
	gchar **v = g_strsplit(choices, "|", -1);
	char *list = g_strjoinv(", ", v);

	g_strfreev(v);
	return list;
}

/* The valid values of a CHOICE knob, "a, b, c" (g_free it). */
static char *cfg_knob_choices(const struct cfg_knob *k)
{
	GString *s;

	if (!k->names)
		return cfg_choices_list(k->choices);
	s = g_string_new(NULL);
	k->names(s);
	return g_string_free(s, FALSE);
}

/* Is name one of CHOICE knob k's values? */
static bool cfg_choice_valid(const struct cfg_knob *k, const char *name)
{
	gchar **v;
	bool ok;

	if (k->valid)
		return k->valid(name);
	v = g_strsplit(k->choices, "|", -1);
	ok = g_strv_contains((const char *const *)v, name);
	g_strfreev(v);
	return ok;
}

#define KNOB_OFF(field) offsetof(struct sfs_config, field)

static const struct cfg_knob cfg_knobs[] = {
    {
	.name = "alloc",
	.type = CFG_CHOICE,
	.offset = KNOB_OFF(alloc),
	.def = "blockmap",
	.valid = cfg_alloc_valid,
	.names = cfg_alloc_list,
	.metavar = "NAME",
	.help = "block placement and file mapping model",
    },
    {
	.name = "data",
	.type = CFG_CHOICE,
	.offset = KNOB_OFF(journal),
	.def = "auto",
	.valid = cfg_journal_valid,
	.names = cfg_journal_list,
	.metavar = "MODE",
	.help = "journal policy (none: ext2, no journal; doc/journal.md); "
		"auto = ordered if the image has a journal (also journal=)",
    },
    {
	/* commit=, journal_max_txn=: models/journal/knobs.c */
	.name = "journal knobs",
	.flags = CFG_MODEL_ROWS,
	.table = &sfs_jnl_knobs,
    },
    {
	.name = "journal_dev",
	.type = CFG_PATH,
	.offset = KNOB_OFF(journal_dev),
	.def = "",
	.metavar = "FILE",
	.help = "external journal device or image",
    },
    {
	/* vm=, dirty_*, mem=: simfs/cache_knobs.c */
	.name = "cache knobs",
	.flags = CFG_MODEL_ROWS,
	.table = &sfs_cache_knobs,
    },
    {
	.name = "journal",
	.type = CFG_CHOICE,
	.offset = KNOB_OFF(journal),
	.valid = cfg_journal_valid,
	.names = cfg_journal_list,
	.flags = CFG_ALIAS,
	.metavar = "MODE",
	.help = "alias of data=",
    },
    {
	.name = "direct",
	.type = CFG_BOOL,
	.offset = KNOB_OFF(direct),
	.def = "off",
	.help = "open the backing device with O_DIRECT",
    },
    {
	.name = "ro",
	.type = CFG_BOOL,
	.offset = KNOB_OFF(ro),
	.def = "off",
	.help = "read-only: nothing is written (rw: the opposite)",
    },
    {
	.name = "rw",
	.type = CFG_BOOL,
	.offset = KNOB_OFF(ro),
	.flags = CFG_INVERT | CFG_ALIAS,
	.help = "read-write (the opposite of ro)",
    },
    {
	.name = "device",
	.type = CFG_SPEC,
	.offset = KNOB_OFF(device),
	.def = "ideal",
	.names = cfg_device_list,
	.check = cfg_device_check,
	.subknobs = cfg_device_knobs,
	.flags = CFG_RUNTIME,
	.metavar = "SPEC",
	.help = "modelled disk: MODEL|PRESET[,knob=value...] "
		"(simfs mount --list-devices)",
    },
    {
	.name = "sched",
	.type = CFG_SPEC,
	.offset = KNOB_OFF(sched),
	.def = "elevator",
	.names = cfg_sched_list,
	.check = cfg_sched_check,
	.subknobs = sfs_sched_knobs,
	.metavar = "SPEC",
	.help = "I/O scheduler: NAME[,knob=value...]",
    },
    {
	.name = "clock",
	.type = CFG_CHOICE,
	.offset = KNOB_OFF(clock),
	.def = "virtual",
	.valid = cfg_clock_valid,
	.names = cfg_clock_list,
	.flags = CFG_RUNTIME,
	.metavar = "MODE",
	.help = "virtual time, or real time that only accounts or "
		"emulates the modelled disk (simfs mount: account)",
    },
    {
	.name = "cpu",
	.type = CFG_SPEC,
	.offset = KNOB_OFF(cpu),
	.def = "core2-2009",
	.names = cfg_cpu_list,
	.check = cfg_cpu_check,
	.subknobs = cfg_cpu_knobs,
	.metavar = "SPEC",
	.help = "simfs run's CPU model: PRESET[,knob=value...] "
		"(doc/cpu-model.md; a mount uses the real CPU)",
    },
    {
	.name = "cpus",
	.type = CFG_UINT,
	.offset = KNOB_OFF(cpus),
	.def = "1",
	.min = 1,
	.max = 1024,
	.metavar = "N",
	.help = "processors simfs run's clients share",
    },
    {
	.name = "stats",
	.type = CFG_PATH,
	.offset = KNOB_OFF(stats_path),
	.def = "",
	.metavar = "FILE",
	.help = "write the statistics as JSON to FILE at unmount",
    },
    {
	.name = "iolog",
	.type = CFG_PATH,
	.offset = KNOB_OFF(iolog_path),
	.def = "",
	.metavar = "FILE",
	.help = "log every device request to FILE (simfs plot iolog)",
    },
    {
	.name = "trace",
	.type = CFG_PATH,
	.offset = KNOB_OFF(trace_path),
	.def = "",
	.metavar = "FILE",
	.help = "record every operation of a mount to FILE, the written "
		"bytes to FILE.data (traces/README.md; replay: simfs run "
		"--trace FILE)",
    },
    {
	.name = "preset",
	.type = CFG_CHOICE,
	.offset = KNOB_OFF(preset),
	.def = "",
	.valid = cfg_preset_valid,
	.names = cfg_preset_list,
	.metavar = "NAME",
	.help = "historical system, applied before the other options "
		"(simfs mount --list-presets)",
    },
    {
	/* every allocator's own knobs, from its table (alloc.h), here */
	.name = "(allocator knobs)",
	.flags = CFG_ALLOC_ROWS,
    },
    {
	.name = "dirs",
	.type = CFG_CHOICE,
	.offset = KNOB_OFF(dirs),
	.def = "orlov",
	.valid = cfg_dirs_valid,
	.names = cfg_dirs_list,
	.metavar = "POLICY",
	.help = "directory placement: orlov (ext3 default) or oldalloc "
		"(also the booleans orlov, oldalloc)",
    },
    {
	.name = "orlov",
	.type = CFG_BOOL,
	.offset = KNOB_OFF(dirs),
	.on_value = "orlov",
	.off_value = "oldalloc",
	.flags = CFG_ALIAS,
	.help = "dirs=orlov",
    },
    {
	.name = "oldalloc",
	.type = CFG_BOOL,
	.offset = KNOB_OFF(dirs),
	.on_value = "oldalloc",
	.off_value = "orlov",
	.flags = CFG_ALIAS,
	.help = "dirs=oldalloc",
    },
    {
	.name = "atime_policy",
	.type = CFG_CHOICE,
	.offset = KNOB_OFF(atime),
	.def = "relatime",
	.valid = cfg_atime_valid,
	.names = cfg_atime_list,
	.flags = CFG_RUNTIME,
	.metavar = "POLICY",
	.help = "access time on read: relatime, atime (always) or noatime "
		"(also the mount(8) spellings atime, strictatime, relatime, "
		"noatime)",
    },
    {
	.name = "atime",
	.type = CFG_BOOL,
	.offset = KNOB_OFF(atime),
	.on_value = "atime",
	.off_value = "noatime",
	.flags = CFG_ALIAS,
	.help = "atime_policy=atime",
    },
    {
	.name = "strictatime",
	.type = CFG_BOOL,
	.offset = KNOB_OFF(atime),
	.on_value = "atime",
	.off_value = "relatime",
	.flags = CFG_ALIAS,
	.help = "atime_policy=atime",
    },
    {
	.name = "relatime",
	.type = CFG_BOOL,
	.offset = KNOB_OFF(atime),
	.on_value = "relatime",
	.off_value = "atime",
	.flags = CFG_ALIAS,
	.help = "atime_policy=relatime",
    },
    {
	.name = "noatime",
	.type = CFG_BOOL,
	.offset = KNOB_OFF(atime),
	.on_value = "noatime",
	.off_value = "relatime",
	.flags = CFG_ALIAS,
	.help = "atime_policy=noatime",
    },
    {
	.name = "diratime",
	.type = CFG_BOOL,
	.offset = KNOB_OFF(no_diratime),
	.def = "on",
	.flags = CFG_INVERT | CFG_RUNTIME,
	.help = "reads of a directory update its atime as atime_policy= "
		"says (nodiratime: never, as ext4's nodiratime)",
    },
    {
	.name = "delalloc",
	.type = CFG_BOOL,
	.offset = KNOB_OFF(delalloc),
	.def = "off",
	.help = "delayed allocation: reserve space at write, place blocks at "
		"write-back (nodelalloc: place at write)",
    },
    {
	.name = "auto_da_alloc",
	.type = CFG_BOOL,
	.offset = KNOB_OFF(no_auto_da_alloc),
	.def = "on",
	.flags = CFG_INVERT,
	.help = "with delalloc, place a file's data when it is renamed over "
		"another or closed after truncation to zero",
    },
    {
	.name = "user_xattr",
	.type = CFG_BOOL,
	.offset = KNOB_OFF(no_user_xattr),
	.def = "on",
	.flags = CFG_INVERT,
	.help = "allow user.* extended attributes (nouser_xattr: "
		"EOPNOTSUPP)",
    },
    {
	.name = "acl",
	.type = CFG_BOOL,
	.offset = KNOB_OFF(no_acl),
	.def = "on",
	.flags = CFG_INVERT,
	.help = "POSIX access and default ACLs, enforced by the kernel "
		"(noacl: system.posix_acl_* give EOPNOTSUPP)",
    },
    {
	.name = "shared_mmap",
	.type = CFG_BOOL,
	.offset = KNOB_OFF(no_shared_mmap),
	.def = "on",
	.flags = CFG_INVERT,
	.help = "ask the kernel to allow mmap(MAP_SHARED) of files (Linux "
		"6.6+; noshared_mmap, or an older kernel: ENODEV)",
    },
    {
	.name = "dir_index",
	.type = CFG_BOOL,
	.offset = KNOB_OFF(no_dir_index),
	.def = "on",
	.flags = CFG_INVERT,
	.help = "on an image with dir_index, look names up and insert them "
		"through htree indexes and index directories that outgrow a "
		"block (nodir_index: linear, and a name added to an indexed "
		"directory clears its index flag)",
    },
};

#define CFG_NKNOBS (sizeof(cfg_knobs) / sizeof(cfg_knobs[0]))

/* A knob of a model's table (the journal's, the cache's) as a row of this
 * one, in *buf. */
static const struct cfg_knob *cfg_model_row(const struct sfs_knob *mk,
					    struct cfg_knob *buf)
{
	memset(buf, 0, sizeof(*buf));
	buf->name = mk->key;
	/* the types both tables have (test_config checks the models'): an
	 * enum is kept as its name, in a char[SFS_NAME_LEN] */
	buf->type = mk->type == SFS_KNOB_BOOL	? CFG_BOOL
		    : mk->type == SFS_KNOB_SIZE ? CFG_SIZE
		    : mk->type == SFS_KNOB_ENUM ? CFG_CHOICE
						: CFG_UINT;
	buf->offset = mk->offset;
	buf->def = mk->def;
	buf->choices = mk->choices;
	buf->min = (uint64_t)mk->min;
	/* (double)UINT64_MAX is 2^64, one past what a uint64_t holds */
	buf->max = mk->max >= 0x1p64 ? UINT64_MAX : (uint64_t)mk->max;
	buf->flags = mk->live ? CFG_RUNTIME : 0;
	buf->metavar = mk->metavar;
	buf->help = mk->help;
	return buf;
}

/*
 * Row i of the table as its walkers see it: the knobs of a model's table
 * (models/journal/knobs.c, simfs/cache_knobs.c) in place of its row, each
 * made a row in *buf (valid until buf is reused); the allocators' row as
 * it is.  NULL past the end.
 */
static const struct cfg_knob *cfg_row(size_t i, struct cfg_knob *buf)
{
	for (size_t r = 0; r < CFG_NKNOBS; r++) {
		const struct sfs_knob *table;
		size_t n = 0;

		if (!(cfg_knobs[r].flags & CFG_MODEL_ROWS)) {
			if (i-- == 0)
				return &cfg_knobs[r];
			continue;
		}
		table = *cfg_knobs[r].table;
		while (table[n].key)
			n++;
		if (i < n)
			return cfg_model_row(&table[i], buf);
		i -= n;
	}
	return NULL;
}

static int cfg_preset_apply(struct sfs_config *cfg, const char *name,
			    char **err);

static int cfg_parse_uint(const char *text, uint64_t *out);

/* The row called name (in *buf if it is one of the journal's), or NULL. */
static const struct cfg_knob *cfg_knob_find(const char *name,
					    struct cfg_knob *buf)
{
	const struct cfg_knob *k;

	for (size_t i = 0; (k = cfg_row(i, buf)); i++)
		if (!(k->flags & CFG_ALLOC_ROWS) && strcmp(k->name, name) == 0)
			return k;
	return NULL;
}

/* Knob i of all the allocators' tables, in registry order, with the
 * placement model that owns it; NULL past the end. */
static const struct sfs_knob *cfg_aknob_nth(unsigned i,
					    const struct sfs_alloc_ops **owner)
{
	const struct sfs_alloc_ops *o;

	for (unsigned j = 0; (o = sfs_alloc_place_nth(j)); j++)
		for (const struct sfs_knob *k = o->knobs; k && k->key; k++)
			if (i-- == 0) {
				if (owner)
					*owner = o;
				return k;
			}
	return NULL;
}

/* Append the names of the rows of the table (the allocators' knobs in
 * place of their row); only the runtime ones when runtime is set. */
static void cfg_append_names(GString *s, bool runtime)
{
	const struct sfs_knob *ak;
	const struct cfg_knob *k;
	struct cfg_knob buf;

	for (size_t i = 0; (k = cfg_row(i, &buf)); i++) {
		if (!(k->flags & CFG_ALLOC_ROWS)) {
			if (!runtime || (k->flags & CFG_RUNTIME))
				g_string_append_printf(
				    s, "%s%s", s->len ? ", " : "", k->name);
			continue;
		}
		for (unsigned j = 0; (ak = cfg_aknob_nth(j, NULL)); j++)
			if (!runtime || ak->live)
				g_string_append_printf(
				    s, "%s%s", s->len ? ", " : "", ak->key);
	}
}

/* "alloc, data, journal, mem, direct, ro, rw" (g_free it). */
static char *cfg_knob_names(void)
{
	GString *s = g_string_new(NULL);

	cfg_append_names(s, false);
	return g_string_free(s, FALSE);
}

/* An allocator knob's value in cfg ("key=value" items of alloc_knobs),
 * or NULL if cfg does not set it (g_free it). */
static char *cfg_aknob_setting(const struct sfs_config *cfg, const char *key)
{
	gchar **items = g_strsplit(cfg->alloc_knobs, ",", -1);
	size_t len = strlen(key);
	char *val = NULL;

	for (gchar **it = items; *it; it++)
		if (strncmp(*it, key, len) == 0 && (*it)[len] == '=') {
			g_free(val);
			val = g_strdup(*it + len + 1);
		}
	g_strfreev(items);
	return val;
}

int sfs_config_alloc_params(const struct sfs_config *cfg,
			    const struct sfs_alloc_ops *place, void *params,
			    char **err)
{
	int rc = sfs_knobs_defaults(place->name, place->knobs, params, err);

	for (const struct sfs_knob *k = place->knobs; !rc && k && k->key; k++) {
		char *val = cfg_aknob_setting(cfg, k->key);

		if (val)
			rc = sfs_knobs_set(place->name, place->knobs, params,
					   k->key, val, err);
		g_free(val);
	}
	return rc;
}

/*
 * Set allocator knob k of model o in cfg from text: checked by the model's
 * table, kept in canonical form.  0, -EINVAL (does not parse, no value) or
 * -ERANGE (a number out of range) with *err.
 */
static int cfg_aknob_apply(struct sfs_config *cfg,
			   const struct sfs_alloc_ops *o,
			   const struct sfs_knob *k, const char *value,
			   char **err)
{
	void *params;
	char *why = NULL, *canon;
	GString *s;
	gchar **items;
	uint64_t v;
	int rc;

	if (!value || !*value) {
		*err =
		    g_strdup_printf("option '%s' needs a value (%s=%s)", k->key,
				    k->key, k->metavar ? k->metavar : "VALUE");
		return -EINVAL;
	}
	params = g_malloc0(o->params_size ? o->params_size : 1);
	rc = sfs_knobs_defaults(o->name, o->knobs, params, &why);
	if (!rc)
		rc = sfs_knobs_set(o->name, o->knobs, params, k->key, value,
				   &why);
	if (rc) {
		bool number =
		    (k->type == SFS_KNOB_U32 || k->type == SFS_KNOB_U64) &&
		    cfg_parse_uint(value, &v) == 0;

		number |=
		    k->type == SFS_KNOB_SIZE && sfs_parse_size(value, &v) == 0;
		*err = g_strdup_printf("%s=%s is refused (%s)", k->key, value,
				       why ? why : "bad value");
		g_free(why);
		g_free(params);
		return number ? -ERANGE : -EINVAL;
	}
	canon = sfs_knob_format(k, params);
	g_free(params);
	s = g_string_new(NULL);
	items = g_strsplit(cfg->alloc_knobs, ",", -1);
	for (gchar **it = items; *it; it++)
		if (**it && !(g_str_has_prefix(*it, k->key) &&
			      (*it)[strlen(k->key)] == '='))
			g_string_append_printf(s, "%s%s", s->len ? "," : "",
					       *it);
	g_strfreev(items);
	g_string_append_printf(s, "%s%s=%s", s->len ? "," : "", k->key, canon);
	g_free(canon);
	rc = 0;
	if (s->len >= SFS_KNOBS_LEN) {
		*err = g_strdup_printf("option '%s': allocator knobs longer "
				       "than %d bytes",
				       k->key, SFS_KNOBS_LEN - 1);
		rc = -EINVAL;
	} else {
		g_strlcpy(cfg->alloc_knobs, s->str, SFS_KNOBS_LEN);
	}
	g_string_free(s, TRUE);
	return rc;
}

/* The value in effect of allocator knob k of model o (g_free it). */
static char *cfg_aknob_value(const struct sfs_config *cfg,
			     const struct sfs_alloc_ops *o,
			     const struct sfs_knob *k)
{
	void *params = g_malloc0(o->params_size ? o->params_size : 1);
	char *err = NULL, *val;

	/* every value in alloc_knobs was checked when it was set */
	if (sfs_config_alloc_params(cfg, o, params, &err) != 0)
		val = g_strdup("?");
	else
		val = sfs_knob_format(k, params);
	g_free(err);
	g_free(params);
	return val;
}

bool sfs_parse_only(void)
{
	const char *v = getenv("SIMFS_PARSE_ONLY");

	return v && *v && strcmp(v, "0") != 0;
}

int sfs_parse_size(const char *text, uint64_t *out)
{
	uint64_t v = 0, mult = 1;
	const char *p = text;

	if (!text || !g_ascii_isdigit(*p))
		return -EINVAL; /* empty, sign, space or junk first */
	for (; g_ascii_isdigit(*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL; /* overflow */
		v = v * 10 + d;
	}
	switch (*p) {
	case '\0':
		break;
	case 'k':
	case 'K':
		mult = 1ull << 10;
		break;
	case 'm':
	case 'M':
		mult = 1ull << 20;
		break;
	case 'g':
	case 'G':
		mult = 1ull << 30;
		break;
	case 't':
	case 'T':
		mult = 1ull << 40;
		break;
	default:
		return -EINVAL;
	}
	if (*p && p[1] != '\0')
		return -EINVAL; /* "12KB", "1M2" */
	if (v > UINT64_MAX / mult)
		return -EINVAL;
	*out = v * mult;
	return 0;
}

/* Format a byte count with the largest unit that divides it exactly. */
static void cfg_format_size(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (u < 3 && v != 0 && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		g_snprintf(buf, len, "%" G_GUINT64_FORMAT, v);
	else
		g_snprintf(buf, len, "%" G_GUINT64_FORMAT "%c", v, units[u]);
}

static int cfg_parse_bool(const char *text, bool *out)
{
	static const char *const yes[] = {"1", "yes", "on", "true"};
	static const char *const no[] = {"0", "no", "off", "false"};

	for (size_t i = 0; i < G_N_ELEMENTS(yes); i++) {
		if (g_ascii_strcasecmp(text, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (g_ascii_strcasecmp(text, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

static int cfg_parse_uint(const char *text, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = text;

	if (!g_ascii_isdigit(*p))
		return -EINVAL;
	for (; g_ascii_isdigit(*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	if (*p)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Check a whole spec for knob k and store it in field. */
static int cfg_spec_apply(char *field, const struct cfg_knob *k,
			  const char *spec, char **err)
{
	char *why = NULL;

	if (strlen(spec) >= SFS_SPEC_LEN) {
		*err = g_strdup_printf("option '%s': spec longer than %d bytes",
				       k->name, SFS_SPEC_LEN - 1);
		return -EINVAL;
	}
	if (k->check(spec, &why) < 0) {
		*err = g_strdup_printf("bad %s=%s: %s", k->name, spec,
				       why ? why : "refused");
		g_free(why);
		return -EINVAL;
	}
	g_free(why);
	g_strlcpy(field, spec, SFS_SPEC_LEN);
	return 0;
}

/*
 * Apply one knob to cfg.  value is NULL for a bare "key"; negate is set for
 * "nokey" (booleans only, see cfg_knob_resolve).  Returns 0, -EINVAL (a
 * value that does not parse) or -ERANGE (a number out of range) with *err
 * set; cfg may be partly changed on error (callers work on a copy).
 */
static int cfg_knob_apply(struct sfs_config *cfg, const struct cfg_knob *k,
			  const char *value, bool negate, char **err)
{
	char *field = (char *)cfg + k->offset;
	char lo[32], hi[32];
	uint64_t v;
	bool b;

	if (k->type != CFG_BOOL && value == NULL) {
		*err = g_strdup_printf("option '%s' needs a value (%s=%s)",
				       k->name, k->name,
				       k->metavar ? k->metavar : "VALUE");
		return -EINVAL;
	}
	if (value && *value == '\0' && k->type != CFG_PATH) {
		*err =
		    g_strdup_printf("option '%s=' has an empty value", k->name);
		return -EINVAL;
	}

	switch (k->type) {
	case CFG_BOOL:
		if (value && negate) {
			*err = g_strdup_printf(
			    "option 'no%s' takes no value (got 'no%s=%s')",
			    k->name, k->name, value);
			return -EINVAL;
		}
		b = true;
		if (value && cfg_parse_bool(value, &b) < 0) {
			*err = g_strdup_printf(
			    "bad value '%s' for %s (valid: 1, 0, yes, no, "
			    "on, off, true, false)",
			    value, k->name);
			return -EINVAL;
		}
		if (negate)
			b = !b;
		if (k->flags & CFG_INVERT)
			b = !b;
		if (k->on_value) {
			g_strlcpy(field, b ? k->on_value : k->off_value,
				  SFS_NAME_LEN);
			return 0;
		}
		*(bool *)field = b;
		return 0;

	case CFG_SIZE:
		if (sfs_parse_size(value, &v) < 0) {
			cfg_format_size(k->min, lo, sizeof(lo));
			cfg_format_size(k->max, hi, sizeof(hi));
			*err = g_strdup_printf(
			    "bad size '%s' for %s (a number with an "
			    "optional K, M, G or T suffix, %s%s%s%s)",
			    value, k->name,
			    k->max == UINT64_MAX ? "at least " : "", lo,
			    k->max == UINT64_MAX ? "" : " to ",
			    k->max == UINT64_MAX ? "" : hi);
			return -EINVAL;
		}
		goto check_range;

	case CFG_UINT:
		if (cfg_parse_uint(value, &v) < 0) {
			if (k->max == UINT64_MAX)
				*err = g_strdup_printf(
				    "bad number '%s' for %s (a decimal "
				    "integer, at least %" G_GUINT64_FORMAT ")",
				    value, k->name, k->min);
			else
				*err = g_strdup_printf(
				    "bad number '%s' for %s (a decimal "
				    "integer, %" G_GUINT64_FORMAT
				    " to %" G_GUINT64_FORMAT ")",
				    value, k->name, k->min, k->max);
			return -EINVAL;
		}
		goto check_range;

	case CFG_CHOICE:
		if (strlen(value) >= SFS_NAME_LEN ||
		    !cfg_choice_valid(k, value)) {
			char *names = cfg_knob_choices(k);

			*err = g_strdup_printf("bad value '%s' for %s "
					       "(valid: %s)",
					       value, k->name, names);
			g_free(names);
			return -EINVAL;
		}
		if (k->offset == KNOB_OFF(alloc) &&
		    strcmp(value, "delalloc") == 0) {
			/* ext4's shorthand: mballoc + delayed allocation */
			g_strlcpy(field, "mballoc", SFS_NAME_LEN);
			cfg->delalloc = true;
			return 0;
		}
		g_strlcpy(field, value, SFS_NAME_LEN);
		return 0;

	case CFG_SPEC:
		return cfg_spec_apply(field, k, value, err);

	case CFG_PATH:
		if (strlen(value) >= SFS_PATH_LEN) {
			*err = g_strdup_printf("option '%s': file name longer "
					       "than %d bytes",
					       k->name, SFS_PATH_LEN - 1);
			return -EINVAL;
		}
		g_strlcpy(field, value, SFS_PATH_LEN);
		return 0;
	}
	*err =
	    g_strdup_printf("option '%s': internal error (knob type)", k->name);
	return -EINVAL;

check_range:
	if (v < k->min || v > k->max) {
		if (k->type == CFG_SIZE) {
			cfg_format_size(k->min, lo, sizeof(lo));
			cfg_format_size(k->max, hi, sizeof(hi));
		} else {
			g_snprintf(lo, sizeof(lo), "%" G_GUINT64_FORMAT,
				   k->min);
			g_snprintf(hi, sizeof(hi), "%" G_GUINT64_FORMAT,
				   k->max);
		}
		if (k->max == UINT64_MAX)
			*err = g_strdup_printf("%s=%s is below the minimum %s",
					       k->name, value, lo);
		else
			*err = g_strdup_printf("%s=%s is out of range (%s to "
					       "%s)",
					       k->name, value, lo, hi);
		return -ERANGE;
	}
	if (k->type == CFG_SIZE)
		*(uint64_t *)field = v;
	else
		*(uint32_t *)field = (uint32_t)v;
	return 0;
}

/*
 * Resolve key to a knob: the knob itself, or "noKEY" for a boolean KEY
 * (*negate set).  NULL if key names no knob.
 */
static const struct cfg_knob *cfg_knob_resolve(const char *key, bool *negate,
					       struct cfg_knob *buf)
{
	const struct cfg_knob *k = cfg_knob_find(key, buf);

	*negate = false;
	if (k)
		return k;
	if (strncmp(key, "no", 2) == 0) {
		k = cfg_knob_find(key + 2, buf);
		if (k && k->type == CFG_BOOL) {
			*negate = true;
			return k;
		}
	}
	return NULL;
}

/* Optimal string alignment distance (edits, adjacent swaps) of a and b. */
static size_t cfg_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), d[3][SFS_NAME_LEN + 1];

	if (la > SFS_NAME_LEN || lb > SFS_NAME_LEN)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *cur = d[i % 3], *prev = d[(i - 1) % 3],
		       *pprev = d[(i + 1) % 3];

		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1];

			cur[j] = MIN(MIN(prev[j] + 1, cur[j - 1] + 1),
				     prev[j - 1] + cost);
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1])
				cur[j] = MIN(cur[j], pprev[j - 2] + 1);
		}
	}
	return d[la % 3][lb];
}

/* Keep name in *best if it is closer to key than *best_d. */
static void cfg_suggest_one(const char *key, const char *name,
			    const char **best, size_t *best_d)
{
	size_t d = cfg_edit_distance(key, name);

	if (d < *best_d) {
		*best_d = d;
		*best = name;
	}
}

/* Every model name a spec knob's names() lists ("a, b, c"). */
static char **cfg_spec_names(const struct cfg_knob *k)
{
	GString *list = g_string_new(NULL);
	char **names;

	k->names(list);
	names = g_strsplit(list->str, ", ", -1);
	g_string_free(list, TRUE);
	return names;
}

const char *sfs_config_suggest(const char *key)
{
	/* FUSE's own mount options and mount(8)'s generic ones (simfs
	 * mount drops those): never "corrected" */
	static const char *const fuse_opts[] = {
	    "allow_other", "allow_root",    "auto_unmount",
	    "blkdev",	   "blksize",	    "max_read",
	    "dev",	   "nodev",	    "suid",
	    "nosuid",	   "exec",	    "noexec",
	    "async",	   "sync",	    "dirsync",
	    "context",	   "fscontext",
	    "defcontext",  "rootcontext",   "symfollow",
	    "nosymfollow", "nostrictatime", "default_permissions",
	    "fsname",	   "subtype",	    "user_id",
	    "group_id",	   "defaults",	    "auto",
	    "noauto",	   "user",	    "nouser",
	    "users",	   "owner",	    "group",
	    "nofail",	   "_netdev",	    "norelatime",
	    "lazytime",	   "nolazytime",    "loud",
	    "silent",	   "nomand",	    "iversion",
	    "noiversion",
	};
	const char *best = NULL;
	size_t best_d = SIZE_MAX, len = strlen(key);
	const struct cfg_knob *k;
	struct cfg_knob buf;

	for (size_t i = 0; i < G_N_ELEMENTS(fuse_opts); i++)
		if (strcmp(key, fuse_opts[i]) == 0)
			return NULL;
	for (size_t i = 0; (k = cfg_row(i, &buf)); i++) {
		char **names;

		if (k->flags & CFG_ALLOC_ROWS) {
			const struct sfs_knob *ak;

			for (unsigned j = 0; (ak = cfg_aknob_nth(j, NULL)); j++)
				cfg_suggest_one(key, ak->key, &best, &best_d);
			continue;
		}
		cfg_suggest_one(key, k->name, &best, &best_d);
		if (k->type != CFG_SPEC || !k->names || !k->subknobs)
			continue;
		/* a model's knobs: rpm= of device=hdd, ... */
		names = cfg_spec_names(k);
		for (char **n = names; *n; n++)
			for (const struct sfs_knob *kn = k->subknobs(*n);
			     kn && kn->key; kn++)
				cfg_suggest_one(key, kn->key, &best, &best_d);
		g_strfreev(names);
	}
	/* one edit for a short name, two for a longer one */
	if (best_d == 0 || best_d > (len <= 4 ? 1u : 2u))
		return NULL;
	return best;
}

static int cfg_unknown_error(const char *key, char **err)
{
	const char *close = sfs_config_suggest(key);
	char *names;

	if (close) {
		*err = g_strdup_printf("unknown option '%s' (did you mean "
				       "%s?)",
				       key, close);
		return -ENOKEY;
	}
	names = cfg_knob_names();
	*err = g_strdup_printf("unknown option '%s' (valid: %s)", key, names);
	g_free(names);
	return -ENOKEY;
}

void sfs_config_defaults(struct sfs_config *cfg)
{
	const struct cfg_knob *k;
	struct cfg_knob buf;

	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; (k = cfg_row(i, &buf)); i++) {
		char *err = NULL;

		if (!k->def || (k->flags & CFG_ALLOC_ROWS))
			continue; /* allocator knobs: "" = every default */
		/* Defaults are checked like user input; an alloc default
		 * missing from the registry is kept verbatim. */
		if (cfg_knob_apply(cfg, k, k->def, false, &err) < 0) {
			g_free(err);
			if (k->type == CFG_CHOICE)
				g_strlcpy((char *)cfg + k->offset, k->def,
					  SFS_NAME_LEN);
		}
	}
}

int sfs_config_set(struct sfs_config *cfg, const char *key, const char *value,
		   char **err)
{
	struct sfs_config tmp;
	const struct cfg_knob *k;
	struct cfg_knob buf;
	bool negate;
	int rc;

	if (!cfg || !key || !err)
		return -EINVAL;
	*err = NULL;
	if (*key == '\0') {
		*err = g_strdup_printf("option '=%s' has no name",
				       value ? value : "");
		return -EINVAL;
	}
	k = cfg_knob_resolve(key, &negate, &buf);
	if (!k) {
		const struct sfs_alloc_ops *o;
		const struct sfs_knob *ak = sfs_alloc_knob_find(key, &o);

		if (!ak)
			return cfg_unknown_error(key, err);
		tmp = *cfg;
		rc = cfg_aknob_apply(&tmp, o, ak, value, err);
		if (rc == 0)
			*cfg = tmp;
		return rc;
	}
	tmp = *cfg;
	if (k->offset == KNOB_OFF(preset) && value && *value)
		rc = cfg_preset_apply(&tmp, value, err);
	else
		rc = cfg_knob_apply(&tmp, k, value, negate, err);
	if (rc == 0)
		*cfg = tmp;
	return rc;
}

/*
 * Split opts at commas not escaped by a backslash (libfuse's escaping, so
 * FUSE options such as fsname=a\,b pass through whole).  Empty tokens are
 * kept so the caller can refuse them.
 */
static GPtrArray *cfg_split_opts(const char *opts)
{
	GPtrArray *toks = g_ptr_array_new_with_free_func(g_free);
	GString *cur = g_string_new(NULL);

	for (const char *p = opts;; p++) {
		if (*p == '\\' && p[1] != '\0') {
			g_string_append_c(cur, *p++);
			g_string_append_c(cur, *p);
		} else if (*p == ',' || *p == '\0') {
			g_ptr_array_add(toks, g_strdup(cur->str));
			g_string_truncate(cur, 0);
			if (*p == '\0')
				break;
		} else {
			g_string_append_c(cur, *p);
		}
	}
	g_string_free(cur, TRUE);
	return toks;
}

/* A spec knob given in the option string, with the options attached. */
struct cfg_group {
	const struct cfg_knob *k;
	GString *spec;
};

/* Is key a knob of the model named by the spec's first item? */
static bool cfg_group_has(const struct cfg_group *g, const char *key)
{
	const char *comma = strchr(g->spec->str, ',');
	char *name =
	    g_strndup(g->spec->str,
		      comma ? (size_t)(comma - g->spec->str) : g->spec->len);
	const struct sfs_knob *kn = g->k->subknobs(name);
	bool found = false;

	for (; kn && kn->key && !found; kn++)
		found = strcmp(kn->key, key) == 0;
	g_free(name);
	return found;
}

/* "a\,b" -> "a,b": a spec needs no escaping once out of the string. */
static char *cfg_unescape(const char *v)
{
	GString *s = g_string_new(NULL);

	for (; *v; v++) {
		if (*v == '\\' && v[1])
			v++;
		g_string_append_c(s, *v);
	}
	return g_string_free(s, FALSE);
}

static char *cfg_runtime_names(void)
{
	GString *s = g_string_new(NULL);

	cfg_append_names(s, true);
	return g_string_free(s, FALSE);
}

static int cfg_parse(struct sfs_config *cfg, const char *opts, char **unknown,
		     bool runtime, char **err);

/*
 * Apply preset `name` to cfg: its option text, then its name.  -EINVAL with
 * *err for an unknown preset or one whose allocator is not registered.
 */
static int cfg_preset_apply(struct sfs_config *cfg, const char *name,
			    char **err)
{
	const struct sfs_config_preset *p = sfs_config_preset_find(name);
	int rc;

	if (!p) {
		GString *names = g_string_new(NULL);

		cfg_preset_list(names);
		*err = g_strdup_printf("unknown preset '%s' (valid: %s)", name,
				       names->str);
		g_string_free(names, TRUE);
		return -EINVAL;
	}
	if (p->needs_alloc && !sfs_alloc_find(p->needs_alloc)) {
		*err = g_strdup_printf("preset %s needs alloc=%s (extents; "
				       "mballoc/delalloc), not available yet",
				       p->name, p->needs_alloc);
		return -EINVAL;
	}
	rc = cfg_parse(cfg, p->opts, NULL, false, err);
	if (rc < 0)
		return rc;
	g_strlcpy(cfg->preset, p->name, SFS_NAME_LEN);
	return 0;
}

/*
 * The parser behind sfs_config_parse (runtime false) and
 * sfs_config_parse_runtime (only CFG_RUNTIME knobs, nothing unknown).
 */
static int cfg_parse(struct sfs_config *cfg, const char *opts, char **unknown,
		     bool runtime, char **err)
{
	struct cfg_group groups[CFG_NKNOBS];
	size_t ngroups = 0;
	struct sfs_config tmp;
	GString *unk = NULL;
	GPtrArray *toks;
	int rc = 0;

	if (!cfg || !opts || !err)
		return -EINVAL;
	*err = NULL;
	if (*opts == '\0')
		return 0;

	tmp = *cfg;
	toks = cfg_split_opts(opts);
	/* presets first, wherever they stand: the rest overrides them */
	for (guint i = 0; !runtime && i < toks->len; i++) {
		const char *tok = g_ptr_array_index(toks, i);

		if (g_str_has_prefix(tok, "preset=") && tok[7]) {
			rc = cfg_preset_apply(&tmp, tok + 7, err);
			if (rc < 0)
				goto out_free;
		}
	}
	for (guint i = 0; i < toks->len; i++) {
		char *tok = g_ptr_array_index(toks, i);
		char *eq = strchr(tok, '=');
		const char *value = NULL;
		const struct cfg_knob *k;
		struct cfg_knob buf; /* k of a journal knob */
		const struct sfs_knob *ak;
		const struct sfs_alloc_ops *owner;
		struct cfg_group *g = NULL;
		bool negate;

		if (*tok == '\0') {
			*err = g_strdup_printf("empty option in '%s'", opts);
			rc = -EINVAL;
			goto out_free;
		}
		if (eq == tok) {
			*err = g_strdup_printf("option '%s' has no name", tok);
			rc = -EINVAL;
			goto out_free;
		}
		if (eq) {
			*eq = '\0';
			value = eq + 1;
		}
		k = cfg_knob_resolve(tok, &negate, &buf);
		if (!k && (ak = sfs_alloc_knob_find(tok, &owner))) {
			if (runtime && !ak->live) {
				char *names = cfg_runtime_names();

				*err = g_strdup_printf(
				    "option '%s' cannot change while mounted "
				    "(these can: %s)",
				    tok, names);
				g_free(names);
				rc = -EPERM;
				goto out_free;
			}
			rc = cfg_aknob_apply(&tmp, owner, ak, value, err);
			if (rc < 0)
				goto out_free;
			continue;
		}
		if (k && runtime && !(k->flags & CFG_RUNTIME)) {
			char *names = cfg_runtime_names();

			*err = g_strdup_printf("option '%s' cannot change "
					       "while mounted (these can: %s)",
					       tok, names);
			g_free(names);
			rc = -EPERM;
			goto out_free;
		}
		if (k && k->type == CFG_SPEC) {
			char *spec;

			if (!value || !*value) {
				rc =
				    cfg_knob_apply(&tmp, k, value, negate, err);
				goto out_free; /* needs a value: refused */
			}
			/* a repeated spec knob starts over, as the latest */
			for (size_t j = 0; j < ngroups; j++) {
				if (groups[j].k->offset != k->offset)
					continue;
				g_string_free(groups[j].spec, TRUE);
				memmove(&groups[j], &groups[j + 1],
					(ngroups - j - 1) * sizeof(groups[0]));
				ngroups--;
				break;
			}
			spec = cfg_unescape(value);
			groups[ngroups].k = k;
			groups[ngroups++].spec = g_string_new(spec);
			g_free(spec);
			continue;
		}
		if (k && k->offset == KNOB_OFF(preset) && value) {
			if (!*value)
				tmp.preset[0] = '\0'; /* "preset=": none */
			continue;		      /* else applied above */
		}
		if (k) {
			rc = cfg_knob_apply(&tmp, k, value, negate, err);
			if (rc < 0)
				goto out_free;
			continue;
		}
		/* a knob of the latest spec's model (else an earlier one's) */
		for (size_t j = ngroups; eq && j-- > 0 && !g;)
			if (cfg_group_has(&groups[j], tok))
				g = &groups[j];
		if (g) {
			char *v = cfg_unescape(value);

			g_string_append_printf(g->spec, ",%s=%s", tok, v);
			g_free(v);
			continue;
		}
		/* a near miss of a knob is a typo, not a FUSE option */
		if (!unknown || sfs_config_suggest(tok)) {
			rc = cfg_unknown_error(tok, err);
			goto out_free;
		}
		if (eq)
			*eq = '=';
		if (!unk)
			unk = g_string_new(NULL);
		g_string_append_printf(unk, "%s%s", unk->len ? "," : "", tok);
	}
	for (size_t j = 0; j < ngroups; j++) {
		const struct cfg_knob *k = groups[j].k;

		rc = cfg_spec_apply((char *)&tmp + k->offset, k,
				    groups[j].spec->str, err);
		if (rc < 0)
			goto out_free;
	}

	*cfg = tmp;
	if (unk) {
		if (*unknown && **unknown) {
			char *joined =
			    g_strconcat(*unknown, ",", unk->str, NULL);

			g_free(*unknown);
			*unknown = joined;
		} else {
			g_free(*unknown);
			*unknown = g_strdup(unk->str);
		}
	}
out_free:
	for (size_t j = 0; j < ngroups; j++)
		g_string_free(groups[j].spec, TRUE);
	if (unk)
		g_string_free(unk, TRUE);
	g_ptr_array_unref(toks);
	return rc;
}

int sfs_config_parse(struct sfs_config *cfg, const char *opts, char **unknown,
		     char **err)
{
	return cfg_parse(cfg, opts, unknown, false, err);
}

int sfs_config_parse_runtime(struct sfs_config *cfg, const char *opts,
			     char **err)
{
	return cfg_parse(cfg, opts, NULL, true, err);
}

/* The value of knob k in cfg as option text (g_free it). */
static char *cfg_knob_value(const struct sfs_config *cfg,
			    const struct cfg_knob *k)
{
	const char *field = (const char *)cfg + k->offset;
	char buf[64];
	bool b;

	switch (k->type) {
	case CFG_BOOL:
		b = *(const bool *)field;
		if (k->flags & CFG_INVERT)
			b = !b;
		return g_strdup(b ? "on" : "off");
	case CFG_SIZE:
		cfg_format_size(*(const uint64_t *)field, buf, sizeof(buf));
		return g_strdup(buf);
	case CFG_UINT:
		return g_strdup_printf("%u", *(const uint32_t *)field);
	case CFG_CHOICE:
		return g_strndup(field, SFS_NAME_LEN);
	case CFG_SPEC:
		return g_strndup(field, SFS_SPEC_LEN);
	case CFG_PATH:
		return g_strndup(field, SFS_PATH_LEN);
	}
	return g_strdup("?");
}

/* The allocators' knobs for --help, in the form of the table's rows. */
static void cfg_aknobs_help(FILE *out)
{
	const struct sfs_alloc_ops *o;
	const struct sfs_knob *ak;

	for (unsigned j = 0; (ak = cfg_aknob_nth(j, &o)); j++) {
		char form[64];
		char *want = sfs_knob_want(ak);

		g_snprintf(form, sizeof(form), "%s=%s", ak->key,
			   ak->metavar ? ak->metavar : "VALUE");
		fprintf(out, "  %-14s%s%s (default %s; %s)\n", form,
			strlen(form) < 14 ? " " : "  ", ak->help, ak->def,
			want);
		g_free(want);
	}
}

void sfs_config_print_help(FILE *out)
{
	const struct cfg_knob *k;
	struct cfg_knob buf;

	for (size_t i = 0; (k = cfg_row(i, &buf)); i++) {
		char form[64], lo[32];
		char *names = NULL;
		GString *extra = g_string_new(NULL);

		if (k->flags & CFG_ALIAS)
			goto next; /* named in its main row's help */
		if (k->flags & CFG_ALLOC_ROWS) {
			cfg_aknobs_help(out);
			goto next;
		}
		if (k->type == CFG_BOOL)
			g_snprintf(form, sizeof(form), "[no]%s", k->name);
		else
			g_snprintf(form, sizeof(form), "%s=%s", k->name,
				   k->metavar ? k->metavar : "VALUE");
		if (k->type == CFG_CHOICE || k->type == CFG_SPEC) {
			names = cfg_knob_choices(k);
			g_string_append_printf(extra, "; one of: %s", names);
		}
		if (k->type == CFG_SIZE && k->min) {
			cfg_format_size(k->min, lo, sizeof(lo));
			g_string_append_printf(extra, "; at least %s", lo);
		}
		fprintf(out, "  %-14s%s%s (default %s%s)\n", form,
			strlen(form) < 14 ? " " : "  ", k->help,
			*k->def ? k->def : "none", extra->str);
	next:
		g_free(names);
		g_string_free(extra, TRUE);
	}
}

/* An allocator knob as documentation. */
static void cfg_aknob_doc(const struct sfs_knob *ak, struct sfs_config_doc *out)
{
	static const char *const metavars[] = {
	    [SFS_KNOB_DOUBLE] = "X",  [SFS_KNOB_U64] = "N",
	    [SFS_KNOB_U32] = "N",     [SFS_KNOB_SIZE] = "SIZE",
	    [SFS_KNOB_ENUM] = "NAME",
	};

	memset(out, 0, sizeof(*out));
	out->name = ak->key;
	out->metavar = ak->type == SFS_KNOB_BOOL ? NULL
		       : ak->metavar		 ? ak->metavar
						 : metavars[ak->type];
	out->help = ak->help;
	out->def = ak->def;
	out->runtime = ak->live;
	out->has_range = ak->type == SFS_KNOB_U32 || ak->type == SFS_KNOB_U64 ||
			 ak->type == SFS_KNOB_SIZE;
	out->is_size = ak->type == SFS_KNOB_SIZE;
	out->min = (uint64_t)ak->min;
	out->max = (uint64_t)ak->max;
	if (ak->type == SFS_KNOB_ENUM)
		out->choices = cfg_choices_list(ak->choices);
}

bool sfs_config_doc_nth(unsigned i, struct sfs_config_doc *out)
{
	const struct cfg_knob *k = NULL, *rk;
	struct cfg_knob buf;
	unsigned row = 0;

	/* row i of the table with the allocators' knobs in their row */
	for (size_t r = 0; !k && (rk = cfg_row(r, &buf)); r++) {
		if (rk->flags & CFG_ALLOC_ROWS) {
			const struct sfs_knob *ak;

			for (unsigned j = 0; (ak = cfg_aknob_nth(j, NULL)); j++)
				if (row++ == i) {
					cfg_aknob_doc(ak, out);
					return true;
				}
			continue;
		}
		if (row++ == i)
			k = rk;
	}
	if (!k)
		return false;
	memset(out, 0, sizeof(*out));
	out->name = k->name;
	out->metavar = k->type == CFG_BOOL ? NULL
					   : (k->metavar ? k->metavar : "VALUE");
	out->help = k->help;
	out->def = (k->flags & CFG_ALIAS) ? NULL : k->def;
	out->runtime = k->flags & CFG_RUNTIME;
	if (k->flags & CFG_ALIAS)
		for (size_t j = 0; j < CFG_NKNOBS && !out->alias_of; j++)
			if (cfg_knobs[j].offset == k->offset &&
			    !(cfg_knobs[j].flags &
			      (CFG_ALIAS | CFG_MODEL_ROWS)))
				out->alias_of = cfg_knobs[j].name;
	out->has_range = k->type == CFG_SIZE || k->type == CFG_UINT;
	out->is_size = k->type == CFG_SIZE;
	out->min = k->min;
	out->max = k->max;
	if ((k->type == CFG_CHOICE || k->type == CFG_SPEC) &&
	    (k->names || k->choices))
		out->choices = cfg_knob_choices(k);
	return true;
}

void sfs_config_each(const struct sfs_config *cfg, bool with_paths,
		     void (*fn)(void *ctx, const char *name, const char *value),
		     void *ctx)
{
	static const char *const paths[] = {"stats", "iolog", "trace",
					    "journal_dev", NULL};
	const struct cfg_knob *k;
	struct cfg_knob buf;

	for (size_t i = 0; (k = cfg_row(i, &buf)); i++) {
		char *val;

		if ((k->flags & CFG_ALIAS) ||
		    (!with_paths &&
		     g_strv_contains((const char *const *)paths, k->name)))
			continue;
		if (k->flags & CFG_ALLOC_ROWS) {
			const struct sfs_alloc_ops *o;
			const struct sfs_knob *ak;

			for (unsigned j = 0; (ak = cfg_aknob_nth(j, &o)); j++) {
				val = cfg_aknob_value(cfg, o, ak);
				fn(ctx, ak->key, val);
				g_free(val);
			}
			continue;
		}
		val = cfg_knob_value(cfg, k);
		fn(ctx, k->name, val);
		g_free(val);
	}
}

static void cfg_print_one(void *ctx, const char *name, const char *value)
{
	fprintf(ctx, "%s=%s\n", name, value);
}

void sfs_config_print(const struct sfs_config *cfg, FILE *out)
{
	sfs_config_each(cfg, true, cfg_print_one, out);
}

char *sfs_config_get(const struct sfs_config *cfg, const char *key)
{
	struct cfg_knob buf;
	const struct cfg_knob *k = cfg_knob_find(key, &buf);
	const struct sfs_alloc_ops *o;
	const struct sfs_knob *ak;

	if (k && !(k->flags & CFG_ALIAS))
		return cfg_knob_value(cfg, k);
	ak = sfs_alloc_knob_find(key, &o);
	return ak ? cfg_aknob_value(cfg, o, ak) : NULL;
}
