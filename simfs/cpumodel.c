/*
 * cpumodel.c - the CPU model's knob table, its presets and the cost
 * function (cpumodel.h).
 *
 * A spec "PRESET[,key=value...]" is resolved as a device model's is: every
 * knob starts at its default (0), the preset's settings are applied, then
 * the spec's own, so the spec wins.  The cost of a set of counts is
 *
 *   cost_ns = sum over the counts c of  c * per_<c>_ns
 *
 * computed in double and rounded once: exact for whole-ns knobs while the
 * sum stays below 2^53 ns, and the same on every machine.
 *
 * Presets are data (cpu_presets[] below); each number's reasoning and
 * public source is in doc/cpu-model.md (sections 2 and 3).  A new preset is one
 * row; a new count is one field in struct sfs_cpu_counts, one in struct
 * sfs_cpu_params, one knob row and one term in sfs_cpumodel_cost.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <glib.h>

#include "cpumodel.h"

struct sfs_cpumodel {
	char *name;		      /* the preset named by the spec */
	struct sfs_cpu_params params; /* every knob, in effect */
};

#define CPU_OFF(f) offsetof(struct sfs_cpu_params, f)
#define CPU_KNOB(k, field, text)                                               \
	{                                                                      \
		.key = (k), .type = SFS_KNOB_DOUBLE, .offset = CPU_OFF(field), \
		.def = "0", .min = 0, .max = 1e9, .help = (text)               \
	}

static const struct sfs_knob cpu_knobs[] = {
    CPU_KNOB("per_call_ns", per_call_ns,
	     "ns per engine call: system call entry/exit + VFS"),
    CPU_KNOB("per_path_step_ns", per_path_step_ns,
	     "ns per lookup (one path component through the dcache)"),
    CPU_KNOB("per_byte_ns", per_byte_ns,
	     "ns per byte copied between user buffer and cache"),
    CPU_KNOB("per_block_mapped_ns", per_block_mapped_ns,
	     "ns per logical block looked up or mapped in a file's map"),
    CPU_KNOB("per_block_alloc_ns", per_block_alloc_ns,
	     "ns per block allocated (bitmap, counters, dirtying)"),
    CPU_KNOB("per_bitmap_word_ns", per_bitmap_word_ns,
	     "ns per bitmap byte scanned by the allocator"),
    CPU_KNOB("per_extent_step_ns", per_extent_step_ns,
	     "ns per extent-tree node searched or mballoc extent measured"),
    CPU_KNOB("per_jnl_block_ns", per_jnl_block_ns,
	     "ns per block written to the journal"),
    CPU_KNOB("per_csum_byte_ns", per_csum_byte_ns,
	     "ns per byte checksummed (crc32c)"),
    CPU_KNOB("per_dir_entry_ns", per_dir_entry_ns,
	     "ns per directory record examined"),
    CPU_KNOB("per_io_req_ns", per_io_req_ns,
	     "ns per device request (block layer, driver, interrupt)"),
    {.key = NULL},
};

/* The presets; sources and reasoning: doc/cpu-model.md. */
static const struct sfs_cpu_preset cpu_presets[] = {
    {
	.name = "none",
	.params = "",
	.help = "no CPU time at all (work served from memory is free)",
    },
    {
	.name = "piii-1ghz",
	.params = "per_call_ns=1000,per_path_step_ns=800,per_byte_ns=2.3,"
		  "per_block_mapped_ns=300,per_block_alloc_ns=12000,"
		  "per_bitmap_word_ns=1.5,per_extent_step_ns=300,"
		  "per_jnl_block_ns=2500,per_csum_byte_ns=7,"
		  "per_dir_entry_ns=30,per_io_req_ns=20000",
	.help = "1 GHz Pentium III, PC133 SDRAM, Linux 2.4/2.6 (2002-2005: "
		"the dbench/bonnie comparisons)",
    },
    {
	.name = "core2-2009",
	.params = "per_call_ns=350,per_path_step_ns=300,per_byte_ns=0.44,"
		  "per_block_mapped_ns=150,per_block_alloc_ns=4000,"
		  "per_bitmap_word_ns=0.3,per_extent_step_ns=100,"
		  "per_jnl_block_ns=800,per_csum_byte_ns=2,"
		  "per_dir_entry_ns=10,per_io_req_ns=6000",
	.help = "2.4-3 GHz Core 2 (no SSE4.2), DDR2, 64-bit Linux 2.6 "
		"(2008-2009: the iozone/compilebench comparisons)",
    },
    {
	.name = "modern",
	.params = "per_call_ns=300,per_path_step_ns=100,per_byte_ns=0.2,"
		  "per_block_mapped_ns=50,per_block_alloc_ns=2500,"
		  "per_bitmap_word_ns=0.2,per_extent_step_ns=40,"
		  "per_jnl_block_ns=400,per_csum_byte_ns=0.03,"
		  "per_dir_entry_ns=4,per_io_req_ns=2000",
	.help = "a 2020s x86 core, DDR4/5, Linux 5.x/6.x with the default "
		"Meltdown/Spectre mitigations",
    },
    {.name = NULL},
};

const struct sfs_knob *sfs_cpumodel_knobs(void)
{
	return cpu_knobs;
}

const struct sfs_cpu_preset *sfs_cpumodel_nth_preset(unsigned i)
{
	return i < G_N_ELEMENTS(cpu_presets) - 1 ? &cpu_presets[i] : NULL;
}

const struct sfs_cpu_preset *sfs_cpumodel_find_preset(const char *name)
{
	const struct sfs_cpu_preset *p;

	for (unsigned i = 0; name && (p = sfs_cpumodel_nth_preset(i)); i++)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

/* "presets: none, ...; knobs: per_call_ns, ..." for messages (g_free). */
static char *cpu_names(void)
{
	GString *s = g_string_new("presets: ");
	const struct sfs_cpu_preset *p;

	for (unsigned i = 0; (p = sfs_cpumodel_nth_preset(i)); i++)
		g_string_append_printf(s, "%s%s", i ? ", " : "", p->name);
	g_string_append(s, "; knobs: ");
	for (const struct sfs_knob *k = cpu_knobs; k->key; k++)
		g_string_append_printf(s, "%s%s", k == cpu_knobs ? "" : ", ",
				       k->key);
	return g_string_free(s, FALSE);
}

int sfs_cpumodel_new(const char *spec, struct sfs_cpumodel **out, char **err)
{
	const struct sfs_cpu_preset *preset;
	struct sfs_cpumodel *m = NULL;
	gchar **items = NULL, **pitems = NULL;
	char *name, *names;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!spec || !*spec) {
		names = cpu_names();
		if (err)
			*err =
			    g_strdup_printf("empty CPU model spec (%s)", names);
		g_free(names);
		return -EINVAL;
	}
	items = g_strsplit(spec, ",", -1);
	name = g_strstrip(items[0]);
	preset = sfs_cpumodel_find_preset(name);
	if (!preset) {
		names = cpu_names();
		if (err)
			*err = g_strdup_printf("unknown CPU model '%s' (%s)",
					       name, names);
		g_free(names);
		rc = -EINVAL;
		goto out_free_items;
	}

	m = g_new0(struct sfs_cpumodel, 1);
	m->name = g_strdup(preset->name);
	rc = sfs_knobs_defaults("cpu", cpu_knobs, &m->params, err);
	if (rc)
		goto out_free_model;
	pitems = g_strsplit(preset->params, ",", -1);
	rc = sfs_knobs_set_all("cpu", cpu_knobs, &m->params, pitems, err);
	if (rc)
		goto out_free_model;
	rc = sfs_knobs_set_all("cpu", cpu_knobs, &m->params, items + 1, err);
	if (rc)
		goto out_free_model;
	*out = m;
	m = NULL;
out_free_model:
	sfs_cpumodel_free(m);
	g_strfreev(pitems);
out_free_items:
	g_strfreev(items);
	return rc;
}

void sfs_cpumodel_free(struct sfs_cpumodel *m)
{
	if (!m)
		return;
	g_free(m->name);
	g_free(m);
}

sfs_ns_t sfs_cpumodel_cost(const struct sfs_cpumodel *m,
			   const struct sfs_cpu_counts *d)
{
	const struct sfs_cpu_params *p;
	double ns;

	if (!m || !d)
		return 0;
	p = &m->params;
	ns = (double)d->calls * p->per_call_ns +
	     (double)d->path_steps * p->per_path_step_ns +
	     (double)d->bytes_copied * p->per_byte_ns +
	     (double)d->blocks_mapped * p->per_block_mapped_ns +
	     (double)d->blocks_alloc * p->per_block_alloc_ns +
	     (double)d->bitmap_words * p->per_bitmap_word_ns +
	     (double)d->extent_steps * p->per_extent_step_ns +
	     (double)d->jnl_blocks * p->per_jnl_block_ns +
	     (double)d->csum_bytes * p->per_csum_byte_ns +
	     (double)d->dir_entries * p->per_dir_entry_ns +
	     (double)d->io_reqs * p->per_io_req_ns;
	if (!(ns > 0)) /* also NaN, which no knob can hold */
		return 0;
	if (ns >= 0x1p64)
		return UINT64_MAX;
	return (sfs_ns_t)(ns + 0.5);
}

const char *sfs_cpumodel_name(const struct sfs_cpumodel *m)
{
	return m->name;
}

const struct sfs_cpu_params *sfs_cpumodel_params(const struct sfs_cpumodel *m)
{
	return &m->params;
}

void sfs_cpumodel_print(const struct sfs_cpumodel *m, FILE *out)
{
	fprintf(out, "%s: ", m->name);
	sfs_knobs_print_values(cpu_knobs, &m->params, out);
	fputc('\n', out);
}

void sfs_cpumodel_list(FILE *out)
{
	const struct sfs_cpu_preset *p;

	fputs("CPU models (cpu=PRESET[,knob=value...]; doc/cpu-model.md):\n",
	      out);
	for (unsigned i = 0; (p = sfs_cpumodel_nth_preset(i)); i++) {
		fprintf(out, "  %-11s %s\n", p->name, p->help);
		if (*p->params)
			fprintf(out, "  %-11s %s\n", "", p->params);
	}
	fputs("  knobs (all default 0):\n", out);
	sfs_knobs_print_help(cpu_knobs, out);
}

/* a - b, 0 if a counter went backwards (a model replaced at runtime). */
static uint64_t cpu_sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

void sfs_cpu_counts_sub(const struct sfs_cpu_counts *a,
			const struct sfs_cpu_counts *b,
			struct sfs_cpu_counts *out)
{
	out->calls = cpu_sub(a->calls, b->calls);
	out->path_steps = cpu_sub(a->path_steps, b->path_steps);
	out->bytes_copied = cpu_sub(a->bytes_copied, b->bytes_copied);
	out->blocks_mapped = cpu_sub(a->blocks_mapped, b->blocks_mapped);
	out->blocks_alloc = cpu_sub(a->blocks_alloc, b->blocks_alloc);
	out->bitmap_words = cpu_sub(a->bitmap_words, b->bitmap_words);
	out->extent_steps = cpu_sub(a->extent_steps, b->extent_steps);
	out->jnl_blocks = cpu_sub(a->jnl_blocks, b->jnl_blocks);
	out->csum_bytes = cpu_sub(a->csum_bytes, b->csum_bytes);
	out->dir_entries = cpu_sub(a->dir_entries, b->dir_entries);
	out->io_reqs = cpu_sub(a->io_reqs, b->io_reqs);
}
