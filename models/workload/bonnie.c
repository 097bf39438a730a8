/*
 * bonnie.c - bonnie++ as a `simfs run` workload (workload.h): the block
 * I/O tests on one file, then the file creation tests in one directory.
 *
 *   bonnie,size=512M,chunk=8K,seeks=8000,seekers=3,files=16
 *
 * Client 0 does every test in bonnie++'s order: block write (size in
 * chunk writes to a new file), rewrite (read a chunk, write it back at
 * the same offset), block read, then, with the other seekers, random
 * seeks (read a chunk at a random chunk offset; every tenth one of each
 * seeker is written back), then sequential create / stat / delete of
 * files*1024 empty files and random create / stat / delete.  Clients 1..
 * seekers-1 only seek: they wait at a barrier for client 0 to finish the
 * block read, and the seek test ends at a barrier too.  The per-char
 * (putc/getc) tests are never run (bonnie++ -f).
 *
 * Invariants: bytes written by the block write = size; the seek test
 * reads exactly seeks chunks (seeker c does seeks/seekers, the first
 * seeks%seekers one more) and writes back floor(n_c/10) of them; every
 * create, stat and unlink expects 0.  All names and offsets come from a
 * generator seeded with seed (and the client), so a run is repeatable.
 * The report is bonnie++ 1.03's table and CSV line, from the phases.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>

#include <glib.h>

#include "workload.h"

#define BON_MAX_FILES 1024u	     /* files=, in 1024s: a million files */
#define BON_MIN_TIME_NS 500000000ULL /* bonnie++ prints +++ below 0.5 s */
#define BON_UPDATE_SEEK 10	     /* every 10th seek is written back */
#define BON_DIR "Bonnie.0"	     /* the creation tests' directory */
#define BON_FILE "Bonnie.0.data"     /* the block tests' file */

enum {
	BP_SIZE,
	BP_CHUNK,
	BP_SEEKS,
	BP_SEEKERS,
	BP_FILES,
	BP_DIRS,
	BP_FSYNC,
	BP_DIRECT,
	BP_MACHINE,
	BP_SEED,
};

/* The steps of a client, in order; a step with nothing to do is skipped. */
enum bon_step {
	S_START_WAIT, /* seekers 1..: wait for client 0's block read */
	S_W_OPEN,
	S_W_WRITE,
	S_W_CLOSE,
	S_RW_OPEN,
	S_RW_IO, /* read, write back: two ops per chunk */
	S_RW_CLOSE,
	S_R_OPEN,
	S_R_READ,
	S_R_CLOSE,
	S_SK_WAIT,
	S_SK_OPEN,
	S_SK_IO, /* read, and every 10th a write back */
	S_SK_CLOSE,
	S_SK_END_WAIT, /* client 0: wait for the other seekers */
	S_UNLINK,
	S_MKDIR,
	S_SC_CREATE, /* open + close per file */
	S_SS_READDIR,
	S_SS_STAT,
	S_SD_READDIR,
	S_SD_UNLINK,
	S_RC_CREATE,
	S_RS_STAT,
	S_RD_UNLINK,
	S_RMDIR,
	S_DONE,
};

struct bon_name {
	uint32_t dir; /* subdirectory, 0 when dirs <= 1 */
	uint8_t len;  /* random characters, 0..12 */
	char rnd[12]; /* the random characters */
};

struct bon_client {
	enum bon_step step;
	uint64_t i;	       /* index within the step */
	unsigned sub;	       /* op within the index (read, then write) */
	uint64_t nseeks;       /* this seeker's share */
	uint64_t seeked_chunk; /* offset of the seek in flight, chunks */
	struct sfs_wl_rng rng;
	char path[256];
};

struct bon_state {
	uint64_t size_bytes;
	uint64_t chunk_bytes;
	uint64_t nchunks;
	uint64_t seeks;
	unsigned seekers;
	unsigned clients;
	uint64_t nfiles; /* files * 1024 */
	uint64_t files_k;
	uint32_t dirs;
	bool fsync;
	bool direct;
	char *machine;
	uint64_t seed;
	struct bon_name *seq; /* nfiles names of the sequential tests */
	struct bon_name *rnd; /* ... and of the random tests */
	uint32_t *del_order;  /* random delete: a permutation of nfiles */
	struct bon_client *c;
};

static const char bon_alnum[] =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

static void bon_name_fill(struct bon_name *n, struct sfs_wl_rng *r,
			  uint32_t dir)
{
	n->dir = dir;
	n->len = (uint8_t)sfs_wl_rng_below(r, 13);
	for (unsigned k = 0; k < n->len; k++)
		n->rnd[k] =
		    bon_alnum[sfs_wl_rng_below(r, sizeof(bon_alnum) - 1)];
}

/* "Bonnie.0[/00003]/0000012abc" (sequential) or ".../abc0000012". */
static void bon_name_path(const struct bon_state *s, const struct bon_name *n,
			  uint64_t i, bool random_first, char *buf, size_t sz)
{
	char sub[16] = "";

	if (s->dirs > 1)
		g_snprintf(sub, sizeof(sub), "/%05u", n->dir);
	if (random_first)
		g_snprintf(buf, sz, "%s%s/%.*s%07" PRIu64, BON_DIR, sub, n->len,
			   n->rnd, i);
	else
		g_snprintf(buf, sz, "%s%s/%07" PRIu64 "%.*s", BON_DIR, sub, i,
			   n->len, n->rnd);
}

static void bon_fini(void *st)
{
	struct bon_state *s = st;

	if (!s)
		return;
	g_free(s->seq);
	g_free(s->rnd);
	g_free(s->del_order);
	g_free(s->c);
	g_free(s->machine);
	g_free(s);
}

static int bon_init(const struct sfs_wl_value *v, void **st_out, char **err)
{
	struct bon_state *s;
	uint64_t chunk = v[BP_CHUNK].u;

	*st_out = NULL;
	if (chunk < 256 || chunk > (1u << 20) || (chunk & (chunk - 1))) {
		*err = g_strdup_printf("chunk=%" PRIu64 ": bonnie++ wants a "
				       "power of two from 256 to 1M",
				       chunk);
		return -EINVAL;
	}
	if (v[BP_DIRECT].u && chunk < 512) {
		*err =
		    g_strdup_printf("chunk=%" PRIu64 " with direct: O_DIRECT "
				    "wants whole 512-byte sectors",
				    chunk);
		return -EINVAL;
	}
	if (v[BP_SIZE].u % chunk) {
		*err = g_strdup_printf("size=%s is not a whole number of "
				       "chunks of %" PRIu64 " bytes",
				       v[BP_SIZE].s, chunk);
		return -EINVAL;
	}
	if (v[BP_SIZE].u && (v[BP_SEEKERS].u < 1 || v[BP_SEEKERS].u > 64)) {
		*err = g_strdup_printf("seekers=%" PRIu64 ": from 1 to 64",
				       v[BP_SEEKERS].u);
		return -EINVAL;
	}
	if (v[BP_SIZE].u && v[BP_SEEKS].u < v[BP_SEEKERS].u) {
		*err = g_strdup_printf("seeks=%" PRIu64 " is fewer than "
				       "seekers=%" PRIu64,
				       v[BP_SEEKS].u, v[BP_SEEKERS].u);
		return -EINVAL;
	}
	if (v[BP_FILES].u > BON_MAX_FILES) {
		*err = g_strdup_printf("files=%" PRIu64 " (in 1024s) is more "
				       "than %u",
				       v[BP_FILES].u, BON_MAX_FILES);
		return -EINVAL;
	}
	if (v[BP_DIRS].u > v[BP_FILES].u * 1024) {
		*err = g_strdup_printf("dirs=%" PRIu64 " is more than the "
				       "%" PRIu64 " files",
				       v[BP_DIRS].u, v[BP_FILES].u * 1024);
		return -EINVAL;
	}
	if (!v[BP_SIZE].u && !v[BP_FILES].u) {
		*err = g_strdup("size=0 and files=0: no test left to run");
		return -EINVAL;
	}
	if (strlen(v[BP_MACHINE].s) == 0 || strchr(v[BP_MACHINE].s, ',')) {
		*err = g_strdup("machine= wants a name without commas");
		return -EINVAL;
	}

	s = g_new0(struct bon_state, 1);
	s->size_bytes = v[BP_SIZE].u;
	s->chunk_bytes = chunk;
	s->nchunks = s->size_bytes / chunk;
	s->seeks = s->size_bytes ? v[BP_SEEKS].u : 0;
	s->seekers = s->size_bytes ? (unsigned)v[BP_SEEKERS].u : 1;
	s->clients = s->seekers;
	s->files_k = v[BP_FILES].u;
	s->nfiles = s->files_k * 1024;
	s->dirs = (uint32_t)v[BP_DIRS].u;
	s->fsync = v[BP_FSYNC].u;
	s->direct = v[BP_DIRECT].u;
	s->machine = g_strdup(v[BP_MACHINE].s);
	s->seed = v[BP_SEED].u;
	s->c = g_new0(struct bon_client, s->clients);
	if (s->nfiles) {
		s->seq = g_try_new(struct bon_name, s->nfiles);
		s->rnd = g_try_new(struct bon_name, s->nfiles);
		s->del_order = g_try_new(uint32_t, s->nfiles);
		if (!s->seq || !s->rnd || !s->del_order) {
			bon_fini(s);
			*err = g_strdup("no memory for the file names");
			return -ENOMEM;
		}
	}

	struct sfs_wl_rng r;
	sfs_wl_rng_seed(&r, s->seed ^ 0xb0111e5ULL);
	uint32_t nd = s->dirs > 1 ? s->dirs : 1;
	for (uint64_t i = 0; i < s->nfiles; i++) {
		/* sequential: the directories filled one after the other */
		bon_name_fill(&s->seq[i], &r, (uint32_t)(i * nd / s->nfiles));
		bon_name_fill(&s->rnd[i], &r,
			      (uint32_t)sfs_wl_rng_below(&r, nd));
		s->del_order[i] = (uint32_t)i;
	}
	for (uint64_t i = s->nfiles; i > 1; i--) { /* Fisher-Yates */
		uint64_t j = sfs_wl_rng_below(&r, i);
		uint32_t t = s->del_order[i - 1];
		s->del_order[i - 1] = s->del_order[j];
		s->del_order[j] = t;
	}
	for (unsigned c = 0; c < s->clients; c++) {
		struct bon_client *cl = &s->c[c];
		cl->step = c == 0 ? S_W_OPEN : S_START_WAIT;
		cl->nseeks =
		    s->seeks / s->seekers + (c < s->seeks % s->seekers);
		sfs_wl_rng_seed(&cl->rng, s->seed * 1000003ULL + c + 1);
	}
	*st_out = s;
	return 0;
}

static unsigned bon_clients(void *st)
{
	return ((struct bon_state *)st)->clients;
}

/* The phase that starts at each step (NULL: none). */
static const char *bon_step_phase(enum bon_step st)
{
	switch (st) {
	case S_START_WAIT:
	case S_W_OPEN:
		return "block write";
	case S_RW_OPEN:
		return "rewrite";
	case S_R_OPEN:
		return "block read";
	case S_SK_OPEN:
		return "seeks";
	case S_UNLINK:
		return "remove file";
	case S_MKDIR:
		return "setup";
	case S_SC_CREATE:
		return "seq create";
	case S_SS_READDIR:
		return "seq stat";
	case S_SD_READDIR:
		return "seq delete";
	case S_RC_CREATE:
		return "rand create";
	case S_RS_STAT:
		return "rand stat";
	case S_RD_UNLINK:
		return "rand delete";
	case S_RMDIR:
		return "remove dirs";
	default:
		return NULL;
	}
}

static void bon_dir_path(const struct bon_state *s, uint64_t d, char *buf,
			 size_t sz)
{
	if (d == 0)
		g_strlcpy(buf, BON_DIR, sz);
	else
		g_snprintf(buf, sz, "%s/%05" PRIu64, BON_DIR, d - 1);
	(void)s;
}

/* Fill *o with the current step's op; false: the step is over. */
static bool bon_emit(struct bon_state *s, unsigned c, struct bon_client *cl,
		     struct sfs_wop *o)
{
	uint32_t bulk = s->direct ? O_DIRECT : 0;
	uint64_t ndirs = s->dirs > 1 ? s->dirs + 1 : 1; /* with the top */

	switch (cl->step) {
	case S_START_WAIT:
	case S_SK_WAIT:
	case S_SK_END_WAIT:
		if (cl->i || s->clients < 2)
			return false;
		o->type = SFS_WOP_BARRIER;
		return true;
	case S_W_OPEN:
	case S_RW_OPEN:
	case S_R_OPEN:
	case S_SK_OPEN:
		if (cl->i || !s->size_bytes)
			return false;
		o->type = SFS_WOP_OPEN;
		o->path = BON_FILE;
		o->mode = 0600;
		o->flags =
		    bulk | (cl->step == S_W_OPEN   ? O_CREAT | O_EXCL | O_RDWR
			    : cl->step == S_R_OPEN ? O_RDONLY
						   : O_RDWR);
		return true;
	case S_W_CLOSE:
	case S_RW_CLOSE:
	case S_R_CLOSE:
	case S_SK_CLOSE:
		if (cl->i || !s->size_bytes)
			return false;
		o->type = SFS_WOP_CLOSE;
		return true;
	case S_W_WRITE:
		if (cl->i >= s->nchunks)
			return false;
		if (cl->sub == 1) {
			o->type = SFS_WOP_FSYNC;
			return true;
		}
		o->type = SFS_WOP_WRITE;
		o->off = cl->i * s->chunk_bytes;
		o->len = s->chunk_bytes;
		return true;
	case S_R_READ:
		if (cl->i >= s->nchunks)
			return false;
		o->type = SFS_WOP_READ;
		o->off = cl->i * s->chunk_bytes;
		o->len = s->chunk_bytes;
		return true;
	case S_RW_IO:
		if (cl->i >= s->nchunks)
			return false;
		o->type = cl->sub == 0	 ? SFS_WOP_READ
			  : cl->sub == 1 ? SFS_WOP_WRITE
					 : SFS_WOP_FSYNC;
		o->off = cl->i * s->chunk_bytes;
		o->len = s->chunk_bytes;
		return true;
	case S_SK_IO:
		if (cl->i >= cl->nseeks)
			return false;
		if (cl->sub == 0)
			cl->seeked_chunk =
			    sfs_wl_rng_below(&cl->rng, s->nchunks);
		o->type = cl->sub == 0	 ? SFS_WOP_READ
			  : cl->sub == 1 ? SFS_WOP_WRITE
					 : SFS_WOP_FSYNC;
		o->off = cl->seeked_chunk * s->chunk_bytes;
		o->len = s->chunk_bytes;
		o->label = cl->sub == 0	  ? "seek read"
			   : cl->sub == 1 ? "seek write"
					  : NULL;
		return true;
	case S_UNLINK:
		if (cl->i || !s->size_bytes)
			return false;
		o->type = SFS_WOP_UNLINK;
		o->path = BON_FILE;
		return true;
	case S_MKDIR:
	case S_RMDIR:
		if (!s->nfiles || cl->i >= ndirs)
			return false;
		/* mkdir the top first, rmdir it last */
		bon_dir_path(s, cl->step == S_MKDIR ? cl->i : ndirs - 1 - cl->i,
			     cl->path, sizeof(cl->path));
		o->type = cl->step == S_MKDIR ? SFS_WOP_MKDIR : SFS_WOP_RMDIR;
		o->path = cl->path;
		o->mode = 0700;
		return true;
	case S_SS_READDIR:
	case S_SD_READDIR:
		if (!s->nfiles || cl->i >= ndirs)
			return false;
		bon_dir_path(s, cl->i, cl->path, sizeof(cl->path));
		o->type = SFS_WOP_READDIR;
		o->path = cl->path;
		return true;
	case S_SC_CREATE:
	case S_RC_CREATE: {
		if (cl->i >= s->nfiles)
			return false;
		if (cl->sub == 1) {
			o->type = SFS_WOP_CLOSE;
			return true;
		}
		bool rf = cl->step == S_RC_CREATE;
		bon_name_path(s, rf ? &s->rnd[cl->i] : &s->seq[cl->i], cl->i,
			      rf, cl->path, sizeof(cl->path));
		o->type = SFS_WOP_OPEN;
		o->path = cl->path;
		o->flags = O_CREAT | O_EXCL | O_WRONLY;
		o->mode = 0600;
		o->label = "create";
		return true;
	}
	case S_SS_STAT:
	case S_SD_UNLINK:
		if (cl->i >= s->nfiles)
			return false;
		bon_name_path(s, &s->seq[cl->i], cl->i, false, cl->path,
			      sizeof(cl->path));
		o->type = cl->step == S_SS_STAT ? SFS_WOP_STAT : SFS_WOP_UNLINK;
		o->path = cl->path;
		return true;
	case S_RS_STAT:
	case S_RD_UNLINK: {
		if (cl->i >= s->nfiles)
			return false;
		/* stat random files (some twice, some never); delete all */
		uint64_t k = cl->step == S_RS_STAT
				 ? sfs_wl_rng_below(&cl->rng, s->nfiles)
				 : s->del_order[cl->i];
		bon_name_path(s, &s->rnd[k], k, true, cl->path,
			      sizeof(cl->path));
		o->type = cl->step == S_RS_STAT ? SFS_WOP_STAT : SFS_WOP_UNLINK;
		o->path = cl->path;
		return true;
	}
	case S_DONE:
		return false;
	}
	(void)c;
	return false;
}

/* Move past the op just emitted. */
static void bon_advance(struct bon_state *s, struct bon_client *cl)
{
	unsigned nsub = 1;

	switch (cl->step) {
	case S_W_WRITE:
		nsub = s->fsync ? 2 : 1;
		break;
	case S_RW_IO:
		nsub = s->fsync ? 3 : 2;
		break;
	case S_SK_IO:
		nsub =
		    (cl->i + 1) % BON_UPDATE_SEEK == 0 ? (s->fsync ? 3 : 2) : 1;
		break;
	case S_SC_CREATE:
	case S_RC_CREATE:
		nsub = 2;
		break;
	default:
		break;
	}
	if (++cl->sub >= nsub) {
		cl->sub = 0;
		cl->i++;
	}
}

static int bon_next(void *st, unsigned c, sfs_ns_t now, struct sfs_wop *out,
		    char **err)
{
	struct bon_state *s = st;
	struct bon_client *cl = &s->c[c];

	(void)now, (void)err;
	while (cl->step != S_DONE) {
		bool first = cl->i == 0 && cl->sub == 0;
		if (bon_emit(s, c, cl, out)) {
			/* a phase starts with the first op of its step; a
			 * barrier never starts one (it would date the phase
			 * from the wait) except a seeker's very first op */
			if (first && (out->type != SFS_WOP_BARRIER ||
				      cl->step == S_START_WAIT))
				out->phase = bon_step_phase(cl->step);
			out->fd = 0;
			out->expect = 0;
			bon_advance(s, cl);
			return 1;
		}
		/* seekers other than client 0 stop after the seek test */
		if (c > 0 && cl->step == S_SK_CLOSE) {
			cl->step = S_DONE;
			break;
		}
		if (c > 0 && cl->step == S_START_WAIT)
			cl->step = S_SK_WAIT; /* skip client 0's tests */
		cl->step++;
		cl->i = 0;
		cl->sub = 0;
	}
	return 0;
}

/* ---- the report: bonnie++ 1.03's table and CSV line ---- */

struct bon_cell {
	bool fast;  /* under 0.5 s: "+++++ +++" */
	bool blank; /* not run */
	double val;
	int cpu;
};

static struct bon_cell bon_cell(const struct sfs_wl_result *r,
				const char *phase, double work)
{
	const struct sfs_wl_phase *ph = sfs_wl_result_phase(r, phase);
	struct bon_cell k = {.blank = true};

	if (!ph)
		return k;
	sfs_ns_t el = ph->end_ns - ph->start_ns;
	k.blank = false;
	if (el < BON_MIN_TIME_NS) {
		k.fast = true;
		return k;
	}
	k.val = work / ((double)el / 1e9);
	k.cpu = (int)((double)ph->cpu_ns * 100.0 / (double)el);
	return k;
}

static void bon_cell_txt(FILE *out, struct bon_cell k, bool decimal)
{
	if (k.blank)
		fprintf(out, "          ");
	else if (k.fast)
		fprintf(out, " +++++ +++");
	else if (decimal && k.val < 1000)
		fprintf(out, " %5.1f %3d", k.val, k.cpu);
	else
		fprintf(out, " %5" PRIu64 " %3d", (uint64_t)k.val, k.cpu);
}

static void bon_cell_csv(FILE *out, struct bon_cell k, bool decimal)
{
	if (k.blank)
		fprintf(out, ",,");
	else if (k.fast)
		fprintf(out, ",+++++,+++");
	else if (decimal)
		fprintf(out, ",%.1f,%d", k.val, k.cpu);
	else
		fprintf(out, ",%" PRIu64 ",%d", (uint64_t)k.val, k.cpu);
}

static void bon_size_text(uint64_t bytes, char *buf, size_t sz)
{
	const uint64_t mib = 1024 * 1024;

	if (bytes % (1024 * mib) == 0)
		g_snprintf(buf, sz, "%" PRIu64 "G", bytes / (1024 * mib));
	else if (bytes % mib == 0)
		g_snprintf(buf, sz, "%" PRIu64 "M", bytes / mib);
	else
		g_snprintf(buf, sz, "%" PRIu64 "K", bytes / 1024);
}

static void bon_report(void *st, const struct sfs_wl_result *r, FILE *out)
{
	struct bon_state *s = st;
	double kib = (double)s->size_bytes / 1024.0;
	double nf = (double)s->nfiles;
	struct bon_cell io[6] = {
	    {.blank = true},
	    bon_cell(r, "block write", kib),
	    bon_cell(r, "rewrite", kib),
	    {.blank = true},
	    bon_cell(r, "block read", kib),
	    bon_cell(r, "seeks", (double)s->seeks),
	};
	struct bon_cell cr[6] = {
	    bon_cell(r, "seq create", nf), bon_cell(r, "seq stat", nf),
	    bon_cell(r, "seq delete", nf), bon_cell(r, "rand create", nf),
	    bon_cell(r, "rand stat", nf),  bon_cell(r, "rand delete", nf),
	};
	char size[32], name[20];
	int pad;

	bon_size_text(s->size_bytes, size, sizeof(size));
	pad = 19 - (int)strlen(size);
	g_snprintf(name, (size_t)MAX(pad, 1), "%s", s->machine);
	pad = MAX(19 - (int)strlen(name) - (int)strlen(size), 1);
	if (s->size_bytes) {
		fprintf(out,
			"Version simfs       ------Sequential Output------ "
			"--Sequential Input- --Random-\n");
		fprintf(out,
			"                    -Per Chr- --Block-- -Rewrite- "
			"-Per Chr- --Block-- --Seeks--\n");
		fprintf(out, "Machine        Size K/sec %%CP K/sec %%CP K/sec "
			     "%%CP K/sec %%CP K/sec %%CP  /sec %%CP\n");
		fprintf(out, "%s%*s%s", name, pad, "", size);
		for (unsigned i = 0; i < 6; i++)
			bon_cell_txt(out, io[i], i == 5);
		fprintf(out, "\n");
	}
	if (s->nfiles) {
		fprintf(out,
			"                    ------Sequential Create------ "
			"--------Random Create--------\n");
		fprintf(out,
			"                    -Create-- --Read--- -Delete-- "
			"-Create-- --Read--- -Delete--\n");
		fprintf(out, "              files  /sec %%CP  /sec %%CP  /sec "
			     "%%CP  /sec %%CP  /sec %%CP  /sec %%CP\n");
		fprintf(out, "%19" PRIu64, s->files_k);
		for (unsigned i = 0; i < 6; i++)
			bon_cell_txt(out, cr[i], false);
		fprintf(out, "\n");
	}
	fprintf(out, "%s,%s", s->machine, s->size_bytes ? size : "");
	for (unsigned i = 0; i < 6; i++)
		bon_cell_csv(
		    out, s->size_bytes ? io[i] : (struct bon_cell){.blank = 1},
		    i == 5);
	if (s->nfiles) {
		fprintf(out, ",%" PRIu64, s->files_k);
		for (unsigned i = 0; i < 6; i++)
			bon_cell_csv(out, cr[i], false);
	}
	fprintf(out, "\n");
}

/*
 * bon_report's figures as metrics, one phase per test: k_s (K/sec) for
 * "block write", "rewrite", "block read"; per_s (/sec) for "seeks" and
 * the six creation tests ("seq create" ... "rand delete").  A test that
 * did not run, or ran under 0.5 s (printed "+++++"), gives no row.
 */
static void bon_metrics(void *st, const struct sfs_wl_result *r,
			sfs_wl_emit_fn *emit, void *ctx)
{
	static const char *const io_k[] = {"block write", "rewrite",
					   "block read"};
	static const char *const cr[] = {"seq create", "seq stat",
					 "seq delete", "rand create",
					 "rand stat",  "rand delete"};
	struct bon_state *s = st;
	double kib = (double)s->size_bytes / 1024.0;
	struct bon_cell k;

	for (unsigned i = 0; s->size_bytes && i < G_N_ELEMENTS(io_k); i++) {
		k = bon_cell(r, io_k[i], kib);
		if (!k.blank && !k.fast)
			emit(ctx, io_k[i], "k_s", k.val, "K/s");
	}
	k = bon_cell(r, "seeks", (double)s->seeks);
	if (s->size_bytes && !k.blank && !k.fast)
		emit(ctx, "seeks", "per_s", k.val, "seeks/s");
	for (unsigned i = 0; s->nfiles && i < G_N_ELEMENTS(cr); i++) {
		k = bon_cell(r, cr[i], (double)s->nfiles);
		if (!k.blank && !k.fast)
			emit(ctx, cr[i], "per_s", k.val, "files/s");
	}
}

static const struct sfs_wl_param bon_params[] = {
    [BP_SIZE] = {"size", SFS_WLP_SIZE, "512M",
		 "file size of the block tests (-s); 0 skips them"},
    [BP_CHUNK] = {"chunk", SFS_WLP_SIZE, "8K",
		  "bytes per read/write, a power of two 256..1M (-s ::chunk)"},
    [BP_SEEKS] = {"seeks", SFS_WLP_UINT, "8000",
		  "random seeks in all, shared by the seekers"},
    [BP_SEEKERS] = {"seekers", SFS_WLP_UINT, "3",
		    "seeker processes running at once (1..64)"},
    [BP_FILES] = {"files", SFS_WLP_UINT, "16",
		  "files of the creation tests, in 1024s (-n); 0 skips them"},
    [BP_DIRS] = {"dirs", SFS_WLP_UINT, "0",
		 "subdirectories the files are spread over (-n :::dirs)"},
    [BP_FSYNC] = {"fsync", SFS_WLP_BOOL, "no", "fsync after every write (-b)"},
    [BP_DIRECT] = {"direct", SFS_WLP_BOOL, "no",
		   "O_DIRECT for the block tests (-D)"},
    [BP_MACHINE] = {"machine", SFS_WLP_STRING, "simfs",
		    "the name in the report (-m)"},
    [BP_SEED] = {"seed", SFS_WLP_UINT, "1",
		 "seed of the offsets and names (-z)"},
    {.name = NULL},
};

const struct sfs_workload_ops sfs_wl_bonnie_ops = {
    .name = "bonnie",
    .help = "bonnie++: block write/rewrite/read, seeks, file creation",
    .doc = "After bonnie++ -f: one file of size= written in chunk= writes, "
	   "rewritten (read a chunk, write it back at the same offset), "
	   "read; seekers= clients then read seeks= chunks at random "
	   "offsets, every tenth written back; then files=*1024 empty files "
	   "are created, stat()ed and deleted in name order, and created in "
	   "random-looking order, stat()ed at random and deleted in random "
	   "order.  The report is bonnie++ 1.03's table (K/sec, %CP from the "
	   "modelled CPU time, +++++ for a test under 0.5 s) and CSV line.  "
	   "Differs: no per-char (putc/getc) tests; one file even past 1G "
	   "(bonnie++ splits at 1G); every tenth seek is written back, where "
	   "bonnie++ picks one in ten at random; the stat order is the "
	   "creation order, not the directory's; -b fsyncs files, not "
	   "directories.",
    .params = bon_params,
    .init = bon_init,
    .clients = bon_clients,
    .next = bon_next,
    .report = bon_report,
    .metrics = bon_metrics,
    .fini = bon_fini,
};
