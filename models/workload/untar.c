/*
 * untar.c - the `untar` workload: `tar xf ARCHIVE` (optionally followed by
 * `sync`), for `simfs run` (workload.h).  The archive is either a real tar
 * file or a seeded synthetic source tree shaped like a Linux kernel:
 *
 *   untar,file=/path/linux-2.6.11.tar[,sync]
 *   untar,files=17078,dirs=1082,depth=8,mean_size=11358,seed=1[,sync]
 *
 * Both build, at init, the same list of members (struct ut_member) in
 * archive order, each with the archive offset of its data; then one client
 * extracts them as GNU tar does, all in phase "untar":
 *
 *   directory  MKDIR((mode | 0700) & ~umask)
 *   file       OPEN(O_WRONLY|O_CREAT|O_TRUNC, mode & ~umask), WRITEs, CLOSE
 *   symlink    SYMLINK(target -> name)
 *   hard link  LINK(earlier member -> name)
 *
 * Invariants of the extraction (ut_next):
 *  1. a member's missing parent directories are made first (0777 & ~umask,
 *     as tar does), so every op's parent exists;
 *  2. a member replacing an earlier non-directory of the same name is
 *     preceded by UNLINK (tar's unlink-and-retry);
 *  3. a file's data is written in the pieces that fall into one archive
 *     record (`record`, tar's blocking factor * 512 = 10240): tar writes
 *     what is left of the record it has in memory, so the first write of a
 *     file is often short and the rest are whole records;
 *  4. real archives hand the member's own bytes (sfs_wop.data, from a
 *     mapping of the file); the synthetic tree leaves data to the runner.
 * With `sync` a phase "sync" calls sync(2) after the last member.
 *
 * The tar reader takes ustar, GNU (././@LongLink 'L'/'K') and pax ('x':
 * path, linkpath, size) headers; a checksum, size or truncation fault is
 * refused with the byte offset of the header.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <glib.h>

#include "workload.h"

#define UT_BLOCK 512u
#define UT_NAME_MAX 4095u
#define UT_MAX_FILES 2000000u
#define UT_MAX_DIRS 200000u
#define UT_MAX_DEPTH 64u
#define UT_MAX_RECORD (16u << 20)
#define UT_MAX_MEAN (1ull << 30)
#define UT_LONGNAME_MAX (1u << 16) /* 'L', 'K' and 'x' payloads */
/* Kernel-tree file sizes: log-normal, sigma fitted to the 2.6.11 tree
 * (50 % <= 4 KiB, 83 % <= 16 KiB, 97.4 % <= 64 KiB). */
#define UT_SIGMA 1.45
#define UT_CAP_MEANS 100.0 /* no file above 100 means */

enum ut_type { UT_FILE = 0, UT_DIR, UT_SYMLINK, UT_HARDLINK };

struct ut_member {
	enum ut_type type;
	uint32_t mode;	   /* permission bits from the header */
	uint64_t size;	   /* data bytes (files) */
	uint64_t data_off; /* archive offset of the data */
	char *path;	   /* normalised, relative */
	char *link;	   /* symlink target / hard link's earlier member */
};

enum ut_step {
	UT_S_PARENTS = 0,
	UT_S_REPLACE,
	UT_S_MAIN,
	UT_S_DATA,
	UT_S_CLOSE,
	UT_S_NEXT,
};

struct ut_state {
	GMappedFile *map;     /* real archive, or NULL */
	const uint8_t *bytes; /* its contents */
	char *source;	      /* what the report names */
	GArray *members;      /* struct ut_member, archive order */
	uint64_t skipped;     /* devices, fifos, unsafe names... */
	uint32_t umask;
	uint64_t record_bytes;
	bool sync;
	/* extraction */
	unsigned i; /* current member */
	enum ut_step step;
	uint64_t pos;	    /* bytes of the member written so far */
	GHashTable *dirs;   /* paths made as directories */
	GHashTable *others; /* paths made as files/links */
	char *pbuf;	    /* a parent path being made */
	bool started, synced;
	/* counts for the report */
	uint64_t n_files, n_dirs, n_symlinks, n_links, n_bytes;
};

enum {
	P_FILE = 0,
	P_FILES,
	P_DIRS,
	P_DEPTH,
	P_MEAN,
	P_SEED,
	P_SYNC,
	P_UMASK,
	P_RECORD,
};

static const struct sfs_wl_param ut_params[] = {
    [P_FILE] = {"file", SFS_WLP_STRING, NULL,
		"a real tar archive to extract (uncompressed ustar/GNU/pax); "
		"empty: the synthetic tree"},
    [P_FILES] = {"files", SFS_WLP_UINT, "17078",
		 "synthetic tree: regular files (linux-2.6.11 has 17078)"},
    [P_DIRS] = {"dirs", SFS_WLP_UINT, "1082",
		"synthetic tree: directories, the top one included"},
    [P_DEPTH] = {"depth", SFS_WLP_UINT, "8",
		 "synthetic tree: deepest directory level (top = 1)"},
    [P_MEAN] = {"mean_size", SFS_WLP_SIZE, "11358",
		"synthetic tree: mean file size (185 MiB / 17078 files)"},
    [P_SEED] = {"seed", SFS_WLP_UINT, "1", "synthetic tree: its seed"},
    [P_SYNC] = {"sync", SFS_WLP_BOOL, "no",
		"sync(2) after tar, as a phase of its own (tar xf; sync)"},
    [P_UMASK] = {"umask", SFS_WLP_STRING, "022",
		 "octal umask applied to the members' modes (tar without "
		 "-p)"},
    [P_RECORD] = {"record", SFS_WLP_SIZE, "10240",
		  "archive record size = blocking factor * 512 (tar -b 20); "
		  "file data is written in its pieces"},
    {.name = NULL},
};

/* ---- members ---- */

static void ut_member_clear(gpointer p)
{
	struct ut_member *m = p;

	g_free(m->path);
	g_free(m->link);
}

/*
 * The relative form of a member name: leading '/' dropped, "." and empty
 * parts dropped (tar's own normalisation).  NULL for a name that would
 * leave the root ("..") or names nothing (the root itself).
 */
static char *ut_normalise(const char *name)
{
	char **parts = g_strsplit(name, "/", -1);
	GString *s = g_string_new(NULL);
	bool bad = false;

	for (unsigned i = 0; parts[i]; i++) {
		if (!*parts[i] || strcmp(parts[i], ".") == 0)
			continue;
		if (strcmp(parts[i], "..") == 0) {
			bad = true;
			break;
		}
		if (s->len)
			g_string_append_c(s, '/');
		g_string_append(s, parts[i]);
	}
	g_strfreev(parts);
	if (bad || !s->len || s->len > UT_NAME_MAX) {
		g_string_free(s, TRUE);
		return NULL;
	}
	return g_string_free(s, FALSE);
}

/* ---- the tar reader ---- */

/* A numeric header field: octal (space/NUL padded) or GNU base-256. */
static bool ut_number(const uint8_t *f, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (f[0] & 0x80) { /* base-256, big-endian, positive only */
		if (f[0] & 0x40)
			return false;
		v = f[0] & 0x3f;
		for (i = 1; i < len; i++) {
			if (v >> 56)
				return false;
			v = (v << 8) | f[i];
		}
		*out = v;
		return true;
	}
	while (i < len && f[i] == ' ')
		i++;
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return false;
		v = v * 8 + (f[i] - '0');
	}
	for (; i < len; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return false;
	*out = v;
	return true;
}

/* A NUL-terminated copy of a header text field of at most len bytes. */
static char *ut_field(const uint8_t *f, size_t len)
{
	size_t n = 0;

	while (n < len && f[n])
		n++;
	return g_strndup((const char *)f, n);
}

/*
 * The pax records of an 'x' header ("%d key=value\n"...): path, linkpath
 * and size override the next header's fields.  -EINVAL on a record that
 * does not parse.
 */
static int ut_pax(const uint8_t *p, uint64_t len, char **path, char **link,
		  uint64_t *size, bool *has_size)
{
	uint64_t at = 0;

	while (at < len) {
		uint64_t rl = 0, i = at;

		while (i < len && p[i] >= '0' && p[i] <= '9' && rl < len)
			rl = rl * 10 + (p[i++] - '0');
		if (i >= len || p[i] != ' ' || rl <= i - at + 1 ||
		    rl > len - at || p[at + rl - 1] != '\n')
			return -EINVAL;
		const char *kv = (const char *)p + i + 1;
		size_t kvlen = (size_t)(at + rl - 1 - (i + 1));
		const char *eq = memchr(kv, '=', kvlen);
		if (!eq)
			return -EINVAL;
		size_t klen = (size_t)(eq - kv);
		char *val = g_strndup(eq + 1, kvlen - klen - 1);
		if (klen == 4 && memcmp(kv, "path", 4) == 0) {
			g_free(*path);
			*path = val;
		} else if (klen == 8 && memcmp(kv, "linkpath", 8) == 0) {
			g_free(*link);
			*link = val;
		} else {
			if (klen == 4 && memcmp(kv, "size", 4) == 0) {
				char *end;
				*size = g_ascii_strtoull(val, &end, 10);
				*has_size = *val && !*end;
				if (!*has_size) {
					g_free(val);
					return -EINVAL;
				}
			}
			g_free(val);
		}
		at += rl;
	}
	return 0;
}

/*
 * Read every header of the archive in st->bytes (len bytes) into
 * st->members.  -EINVAL with the byte offset in *err for a malformed one.
 */
static int ut_read_tar(struct ut_state *st, uint64_t len, char **err)
{
	const uint8_t *b = st->bytes;
	char *longname = NULL, *longlink = NULL;
	uint64_t pax_size = 0;
	bool pax_has_size = false;
	uint64_t pos = 0;
	int rc = 0;

	if (len >= 2 && b[0] == 0x1f && (b[1] == 0x8b || b[1] == 0x9d)) {
		*err = g_strdup_printf("%s is compressed (gzip/compress): "
				       "decompress it first",
				       st->source);
		return -EINVAL;
	}
	if ((len >= 3 && memcmp(b, "BZh", 3) == 0) ||
	    (len >= 6 && memcmp(b,
				"\xfd"
				"7zXZ",
				6) == 0) ||
	    (len >= 4 && memcmp(b, "\x28\xb5\x2f\xfd", 4) == 0)) {
		*err = g_strdup_printf("%s is compressed (bzip2/xz/zstd): "
				       "decompress it first",
				       st->source);
		return -EINVAL;
	}
	while (pos < len) {
		const uint8_t *h = b + pos;
		uint64_t stored, sum = 0, size;

		if (len - pos < UT_BLOCK) {
			*err = g_strdup_printf(
			    "%s: truncated tar header at byte offset %" PRIu64
			    " (%" PRIu64 " bytes left, a header needs %u)",
			    st->source, pos, len - pos, UT_BLOCK);
			rc = -EINVAL;
			goto out;
		}
		unsigned k;
		for (k = 0; k < UT_BLOCK && !h[k]; k++)
			;
		if (k == UT_BLOCK)
			break; /* end-of-archive block */
		for (k = 0; k < UT_BLOCK; k++)
			sum += (k >= 148 && k < 156) ? ' ' : h[k];
		if (!ut_number(h + 148, 8, &stored))
			stored = UINT64_MAX;
		if (stored != sum) {
			*err = g_strdup_printf("%s: bad tar header checksum at "
					       "byte offset %" PRIu64
					       " (stored %" PRIo64
					       ", computed %" PRIo64 "): not a "
					       "tar archive, or damaged",
					       st->source, pos, stored, sum);
			rc = -EINVAL;
			goto out;
		}
		if (!ut_number(h + 124, 12, &size)) {
			*err = g_strdup_printf("%s: bad size field in the tar "
					       "header at byte offset %" PRIu64,
					       st->source, pos);
			rc = -EINVAL;
			goto out;
		}
		char type = (char)h[156];
		if (pax_has_size && type != 'x' && type != 'g' && type != 'L' &&
		    type != 'K')
			size = pax_size;
		uint64_t data = pos + UT_BLOCK;
		uint64_t padded = (size + UT_BLOCK - 1) / UT_BLOCK * UT_BLOCK;
		if (type == '1' || type == '2' || type == '5' || type == '3' ||
		    type == '4' || type == '6')
			padded = size = 0; /* no data, whatever size says */
		if (padded > len - data) {
			*err = g_strdup_printf(
			    "%s: member at byte offset %" PRIu64 " has %" PRIu64
			    " bytes of data but only %" PRIu64 " follow "
			    "(truncated archive)",
			    st->source, pos, size, len - data);
			rc = -EINVAL;
			goto out;
		}
		if (type == 'L' || type == 'K' || type == 'x') {
			if (size > UT_LONGNAME_MAX) {
				*err = g_strdup_printf(
				    "%s: extended header at byte offset "
				    "%" PRIu64 " is %" PRIu64
				    " bytes (at most %u)",
				    st->source, pos, size, UT_LONGNAME_MAX);
				rc = -EINVAL;
				goto out;
			}
			if (type == 'x') {
				if (ut_pax(b + data, size, &longname, &longlink,
					   &pax_size, &pax_has_size)) {
					*err = g_strdup_printf(
					    "%s: malformed pax header at byte "
					    "offset %" PRIu64,
					    st->source, pos);
					rc = -EINVAL;
					goto out;
				}
			} else {
				char **dst =
				    type == 'L' ? &longname : &longlink;
				g_free(*dst);
				*dst = ut_field(b + data, size);
			}
			pos = data + padded;
			continue;
		}
		if (type == 'g' || type == 'V') { /* global pax, volume label */
			pos = data + padded;
			continue;
		}

		/* a member: its name */
		char *name = longname;
		longname = NULL;
		if (!name) {
			char *n = ut_field(h, 100);
			if (memcmp(h + 257, "ustar\0", 6) == 0 && h[345]) {
				char *pfx = ut_field(h + 345, 155);
				name = g_strconcat(pfx, "/", n, NULL);
				g_free(pfx);
				g_free(n);
			} else {
				name = n;
			}
		}
		char *link = longlink ? longlink : ut_field(h + 157, 100);
		longlink = NULL;
		uint64_t mode = 0;
		if (!ut_number(h + 100, 8, &mode))
			mode = 0644;
		struct ut_member m = {.mode = (uint32_t)(mode & 07777),
				      .size = size,
				      .data_off = data};
		bool keep = true;
		size_t nl = strlen(name);
		switch (type) {
		case '0':
		case '\0':
		case '7':
			m.type = nl && name[nl - 1] == '/' ? UT_DIR : UT_FILE;
			break;
		case '5':
		case 'D': /* GNU incremental dump directory */
			m.type = UT_DIR;
			break;
		case '2':
			m.type = UT_SYMLINK;
			keep = *link != '\0';
			break;
		case '1':
			m.type = UT_HARDLINK;
			m.link = ut_normalise(link);
			keep = m.link != NULL;
			break;
		case '3': /* devices, fifos: not made (no mknod op) */
		case '4':
		case '6':
		case 'S': /* GNU sparse: its map is not read */
		case 'M': /* multi-volume continuation */
			keep = false;
			break;
		default: /* POSIX: unknown types extract as files */
			m.type = UT_FILE;
			break;
		}
		if (m.type == UT_SYMLINK && keep)
			m.link = g_strdup(link);
		m.path = keep ? ut_normalise(name) : NULL;
		if (m.type == UT_DIR)
			m.size = 0;
		if (m.path) {
			g_array_append_val(st->members, m);
		} else {
			g_free(m.link);
			st->skipped++;
		}
		g_free(name);
		g_free(link);
		pax_has_size = false;
		pos = data + padded;
	}
out:
	g_free(longname);
	g_free(longlink);
	return rc;
}

/* ---- the synthetic tree ---- */

/* Uniform in (0, 1), from 53 bits of the generator. */
static double ut_unit(struct sfs_wl_rng *r)
{
	return ((double)(sfs_wl_rng_next(r) >> 11) + 0.5) / 9007199254740992.0;
}

/* A log-normal file size with the given mean, capped. */
static uint64_t ut_size(struct sfs_wl_rng *r, double mean)
{
	double mu = log(mean) - UT_SIGMA * UT_SIGMA / 2;
	double z = sqrt(-2.0 * log(ut_unit(r))) * cos(2 * G_PI * ut_unit(r));
	double s = exp(mu + UT_SIGMA * z);

	return (uint64_t)MIN(s, mean * UT_CAP_MEANS);
}

static void ut_word(struct sfs_wl_rng *r, GString *s)
{
	unsigned n = 2 + (unsigned)sfs_wl_rng_below(r, 8);

	for (unsigned i = 0; i < n; i++)
		g_string_append_c(s, (char)('a' + sfs_wl_rng_below(r, 26)));
}

/* What a kernel tree's files end in, by share. */
static const char *ut_ext(struct sfs_wl_rng *r)
{
	uint64_t x = sfs_wl_rng_below(r, 100);

	return x < 45	? ".c"
	       : x < 80 ? ".h"
	       : x < 83 ? ".S"
	       : x < 90 ? ".txt"
			: "";
}

/*
 * Build files/dirs members: directories form a random recursive tree
 * (each new one under a uniformly chosen directory shallower than depth),
 * files go to uniformly chosen directories; the archive lists a directory,
 * then its entries in a seeded shuffled order (readdir order), depth
 * first, as `tar cf` of such a tree would.
 */
static void ut_synth(struct ut_state *st, unsigned nfiles, unsigned ndirs,
		     unsigned depth, uint64_t mean, uint64_t seed)
{
	struct sfs_wl_rng r;
	unsigned *parent = g_new(unsigned, ndirs),
		 *lvl = g_new(unsigned, ndirs);
	unsigned *elig = g_new(unsigned, ndirs), nelig = 0;
	unsigned *fdir = g_new(unsigned, MAX(nfiles, 1));
	char **dname = g_new0(char *, ndirs);
	/* children of each dir: ids >= 0 files, < 0 ~dir */
	GArray **kids = g_new0(GArray *, ndirs);

	sfs_wl_rng_seed(&r, seed);
	parent[0] = 0;
	lvl[0] = 1;
	dname[0] = g_strdup("linux");
	if (depth > 1)
		elig[nelig++] = 0;
	for (unsigned d = 0; d < ndirs; d++)
		kids[d] = g_array_new(FALSE, FALSE, sizeof(int64_t));
	for (unsigned d = 1; d < ndirs; d++) {
		unsigned p = elig[sfs_wl_rng_below(&r, nelig)];
		GString *s = g_string_new(NULL);
		parent[d] = p;
		lvl[d] = lvl[p] + 1;
		ut_word(&r, s);
		g_string_append_printf(s, "%u", d);
		dname[d] = g_string_free(s, FALSE);
		int64_t id = ~(int64_t)d;
		g_array_append_val(kids[p], id);
		if (lvl[d] < depth)
			elig[nelig++] = d;
	}
	for (unsigned f = 0; f < nfiles; f++) {
		int64_t id = f;
		fdir[f] = (unsigned)sfs_wl_rng_below(&r, ndirs);
		g_array_append_val(kids[fdir[f]], id);
	}
	for (unsigned d = 0; d < ndirs; d++) { /* readdir order */
		int64_t *k = (int64_t *)kids[d]->data;
		for (unsigned i = kids[d]->len; i > 1; i--) {
			unsigned j = (unsigned)sfs_wl_rng_below(&r, i);
			int64_t t = k[i - 1];
			k[i - 1] = k[j];
			k[j] = t;
		}
	}
	/* depth-first walk with an explicit stack of (dir, next child) */
	unsigned *stk = g_new(unsigned, depth + 1),
		 *at = g_new(unsigned, depth + 1);
	char **dpath = g_new0(char *, depth + 1);
	unsigned sp = 0;
	uint64_t apos = 0; /* virtual archive offset */
	stk[0] = 0;
	at[0] = 0;
	dpath[0] = g_strdup(dname[0]);
	struct ut_member m0 = {UT_DIR, 0755, 0, 0, g_strdup(dpath[0]), NULL};
	g_array_append_val(st->members, m0);
	apos += UT_BLOCK;
	for (;;) {
		unsigned d = stk[sp];
		if (at[sp] == kids[d]->len) {
			g_free(dpath[sp]);
			if (sp == 0)
				break;
			sp--;
			continue;
		}
		int64_t id = g_array_index(kids[d], int64_t, at[sp]++);
		struct ut_member m = {.data_off = apos + UT_BLOCK};
		if (id < 0) {
			unsigned c = (unsigned)~id;
			m.type = UT_DIR;
			m.mode = 0755;
			m.path = g_strconcat(dpath[sp], "/", dname[c], NULL);
			sp++;
			stk[sp] = c;
			at[sp] = 0;
			dpath[sp] = g_strdup(m.path);
		} else {
			GString *s = g_string_new(dpath[sp]);
			g_string_append_c(s, '/');
			ut_word(&r, s);
			g_string_append_printf(s, "%" PRId64 "%s", id,
					       ut_ext(&r));
			m.type = UT_FILE;
			m.mode = sfs_wl_rng_below(&r, 50) ? 0644 : 0755;
			m.size = ut_size(&r, (double)mean);
			m.path = g_string_free(s, FALSE);
		}
		apos +=
		    UT_BLOCK + (m.size + UT_BLOCK - 1) / UT_BLOCK * UT_BLOCK;
		g_array_append_val(st->members, m);
	}
	for (unsigned d = 0; d < ndirs; d++) {
		g_free(dname[d]);
		g_array_free(kids[d], TRUE);
	}
	g_free(kids);
	g_free(dname);
	g_free(dpath);
	g_free(stk);
	g_free(at);
	g_free(fdir);
	g_free(elig);
	g_free(lvl);
	g_free(parent);
}

/* ---- init / fini ---- */

static void ut_fini(void *vst)
{
	struct ut_state *st = vst;

	if (st->members)
		g_array_free(st->members, TRUE);
	if (st->map)
		g_mapped_file_unref(st->map);
	if (st->dirs)
		g_hash_table_destroy(st->dirs);
	if (st->others)
		g_hash_table_destroy(st->others);
	g_free(st->source);
	g_free(st->pbuf);
	g_free(st);
}

static int ut_init(const struct sfs_wl_value *v, void **st_out, char **err)
{
	struct ut_state *st;
	char *end;
	int rc = 0;

	*st_out = NULL;
	uint64_t um = g_ascii_strtoull(v[P_UMASK].s, &end, 8);
	if (!*v[P_UMASK].s || *end || um > 0777) {
		*err = g_strdup_printf("umask '%s': need an octal number "
				       "0..777",
				       v[P_UMASK].s);
		return -EINVAL;
	}
	uint64_t rec = v[P_RECORD].u;
	if (rec == 0 || rec % UT_BLOCK || rec > UT_MAX_RECORD) {
		*err = g_strdup_printf("record must be a multiple of %u up to "
				       "16M (got %s)",
				       UT_BLOCK, v[P_RECORD].s);
		return -EINVAL;
	}
	bool real = *v[P_FILE].s != '\0';
	if (real && (v[P_FILES].given || v[P_DIRS].given || v[P_DEPTH].given ||
		     v[P_MEAN].given || v[P_SEED].given)) {
		*err = g_strdup("file= extracts a real archive: files, dirs, "
				"depth, mean_size and seed are for the "
				"synthetic tree only");
		return -EINVAL;
	}
	if (!real) {
		if (v[P_DIRS].u < 1 || v[P_DIRS].u > UT_MAX_DIRS) {
			*err = g_strdup_printf("dirs must be 1..%u (got %s)",
					       UT_MAX_DIRS, v[P_DIRS].s);
			return -EINVAL;
		}
		if (v[P_FILES].u > UT_MAX_FILES) {
			*err = g_strdup_printf("files must be 0..%u (got %s)",
					       UT_MAX_FILES, v[P_FILES].s);
			return -EINVAL;
		}
		if (v[P_DEPTH].u < 1 || v[P_DEPTH].u > UT_MAX_DEPTH) {
			*err = g_strdup_printf("depth must be 1..%u (got %s)",
					       UT_MAX_DEPTH, v[P_DEPTH].s);
			return -EINVAL;
		}
		if (v[P_DEPTH].u == 1 && v[P_DIRS].u > 1) {
			*err = g_strdup_printf("depth=1 allows only the top "
					       "directory, not dirs=%s",
					       v[P_DIRS].s);
			return -EINVAL;
		}
		if (v[P_MEAN].u == 0 || v[P_MEAN].u > UT_MAX_MEAN) {
			*err = g_strdup_printf("mean_size must be 1 byte .. 1G "
					       "(got %s)",
					       v[P_MEAN].s);
			return -EINVAL;
		}
	}
	st = g_new0(struct ut_state, 1);
	st->umask = (uint32_t)um;
	st->record_bytes = rec;
	st->sync = v[P_SYNC].u;
	st->members = g_array_new(FALSE, FALSE, sizeof(struct ut_member));
	g_array_set_clear_func(st->members, ut_member_clear);
	st->dirs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	st->others =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	if (real) {
		GError *gerr = NULL;
		st->source = g_strdup(v[P_FILE].s);
		st->map = g_mapped_file_new(v[P_FILE].s, FALSE, &gerr);
		if (!st->map) {
			*err = g_strdup_printf("cannot read %s: %s",
					       v[P_FILE].s, gerr->message);
			g_error_free(gerr);
			rc = -EINVAL;
			goto fail;
		}
		st->bytes =
		    (const uint8_t *)g_mapped_file_get_contents(st->map);
		rc = ut_read_tar(st, g_mapped_file_get_length(st->map), err);
		if (rc)
			goto fail;
	} else {
		st->source = g_strdup_printf(
		    "synthetic tree (%s files, %s dirs, depth %s, mean %s, "
		    "seed %s)",
		    v[P_FILES].s, v[P_DIRS].s, v[P_DEPTH].s, v[P_MEAN].s,
		    v[P_SEED].s);
		ut_synth(st, (unsigned)v[P_FILES].u, (unsigned)v[P_DIRS].u,
			 (unsigned)v[P_DEPTH].u, v[P_MEAN].u, v[P_SEED].u);
	}
	*st_out = st;
	return 0;
fail:
	ut_fini(st);
	return rc;
}

/* ---- extraction ---- */

/* The shortest prefix directory of path not made yet, into st->pbuf;
 * false when all exist. */
static bool ut_missing_parent(struct ut_state *st, const char *path)
{
	for (const char *s = strchr(path, '/'); s; s = strchr(s + 1, '/')) {
		g_free(st->pbuf);
		st->pbuf = g_strndup(path, (size_t)(s - path));
		if (!g_hash_table_contains(st->dirs, st->pbuf))
			return true;
	}
	return false;
}

static int ut_next(void *vst, unsigned c, sfs_ns_t now, struct sfs_wop *out,
		   char **err)
{
	struct ut_state *st = vst;

	(void)c, (void)now, (void)err;
	out->fd = 0;
	out->expect = 0;
	if (!st->started) {
		out->phase = "untar";
		st->started = true;
	}
	while (st->i < st->members->len) {
		struct ut_member *m =
		    &g_array_index(st->members, struct ut_member, st->i);

		switch (st->step) {
		case UT_S_PARENTS:
			if (ut_missing_parent(st, m->path)) {
				out->type = SFS_WOP_MKDIR;
				out->path = st->pbuf;
				out->mode = 0777 & ~st->umask;
				g_hash_table_add(st->dirs, g_strdup(st->pbuf));
				st->n_dirs++;
				return 1;
			}
			st->step = UT_S_REPLACE;
			break;
		case UT_S_REPLACE:
			st->step = UT_S_MAIN;
			if (g_hash_table_contains(st->dirs, m->path)) {
				/* exists as a directory: tar keeps it; a
				 * non-directory cannot replace it */
				if (m->type != UT_DIR)
					st->skipped++;
				st->step = UT_S_NEXT;
				break;
			}
			if (g_hash_table_remove(st->others, m->path)) {
				out->type = SFS_WOP_UNLINK;
				out->path = m->path;
				return 1;
			}
			break;
		case UT_S_MAIN:
			out->path = m->path;
			st->step = UT_S_NEXT;
			switch (m->type) {
			case UT_DIR:
				out->type = SFS_WOP_MKDIR;
				out->mode = (m->mode | 0700) & ~st->umask;
				g_hash_table_add(st->dirs, g_strdup(m->path));
				st->n_dirs++;
				return 1;
			case UT_SYMLINK:
				out->type = SFS_WOP_SYMLINK;
				out->path = m->link;
				out->path2 = m->path;
				st->n_symlinks++;
				break;
			case UT_HARDLINK:
				if (!g_hash_table_contains(st->others,
							   m->link)) {
					st->skipped++; /* target not made */
					out->path = NULL;
					continue;
				}
				out->type = SFS_WOP_LINK;
				out->path = m->link;
				out->path2 = m->path;
				st->n_links++;
				break;
			case UT_FILE:
			default:
				out->type = SFS_WOP_OPEN;
				out->flags = O_WRONLY | O_CREAT | O_TRUNC;
				out->mode = m->mode & 0777 & ~st->umask;
				st->n_files++;
				st->pos = 0;
				st->step = m->size ? UT_S_DATA : UT_S_CLOSE;
				break;
			}
			g_hash_table_add(st->others, g_strdup(m->path));
			return 1;
		case UT_S_DATA: {
			uint64_t a = m->data_off + st->pos;
			uint64_t room = st->record_bytes - a % st->record_bytes;
			out->type = SFS_WOP_WRITE;
			out->off = st->pos;
			out->len = MIN(room, m->size - st->pos);
			out->data = st->bytes ? st->bytes + a : NULL;
			st->pos += out->len;
			st->n_bytes += out->len;
			if (st->pos == m->size)
				st->step = UT_S_CLOSE;
			return 1;
		}
		case UT_S_CLOSE:
			out->type = SFS_WOP_CLOSE;
			st->step = UT_S_NEXT;
			return 1;
		case UT_S_NEXT:
		default:
			st->i++;
			st->step = UT_S_PARENTS;
			break;
		}
	}
	if (st->sync && !st->synced) {
		out->type = SFS_WOP_SYNC;
		out->phase = "sync";
		st->synced = true;
		return 1;
	}
	return 0;
}

/* The bash `time` form of ns: "1m2.345s". */
static void ut_time(FILE *out, const char *what, sfs_ns_t ns)
{
	uint64_t ms = (ns + 500000) / 1000000;

	fprintf(out, "%s\t%" PRIu64 "m%" PRIu64 ".%03" PRIu64 "s\n", what,
		ms / 60000, ms / 1000 % 60, ms % 1000);
}

static void ut_report(void *vst, const struct sfs_wl_result *r, FILE *out)
{
	struct ut_state *st = vst;
	const struct sfs_wl_phase *t = sfs_wl_result_phase(r, "untar");
	const struct sfs_wl_phase *s = sfs_wl_result_phase(r, "sync");

	fprintf(out, "$ time tar xf %s\n", st->source);
	if (t) {
		ut_time(out, "real", t->end_ns - t->start_ns);
		fprintf(out, "user\t(not modelled)\n");
		ut_time(out, "sys", t->cpu_ns);
	} else {
		fprintf(out, "tar: nothing was extracted\n");
	}
	fprintf(out,
		"%" PRIu64 " files, %" PRIu64 " directories, %" PRIu64
		" symlinks, %" PRIu64 " hard links, %" PRIu64 " bytes "
		"(%.1f MiB)",
		st->n_files, st->n_dirs, st->n_symlinks, st->n_links,
		t ? t->bytes_written : st->n_bytes,
		(double)(t ? t->bytes_written : st->n_bytes) / 1048576.0);
	if (st->skipped)
		fprintf(out,
			", %" PRIu64 " members not extracted (devices, "
			"fifos, sparse, unsafe names, dangling links)",
			st->skipped);
	fprintf(out, "\n");
	if (s) {
		fprintf(out, "$ time sync\n");
		ut_time(out, "real", s->end_ns - s->start_ns);
		if (t) {
			fprintf(out, "tar xf; sync:\n");
			ut_time(out, "real", s->end_ns - t->start_ns);
		}
	}
	sfs_wl_report_failures(out, "tar", r);
}

/*
 * ut_report's times as metrics: phase "untar", real_s and sys_s (the
 * "real" and "sys" of `time tar xf`, modelled CPU for sys); with sync,
 * phase "sync" real_s and phase "untar+sync" real_s ("tar xf; sync").
 * Unrounded, where bash prints milliseconds.
 */
static void ut_metrics(void *vst, const struct sfs_wl_result *r,
		       sfs_wl_emit_fn *emit, void *ctx)
{
	const struct sfs_wl_phase *t = sfs_wl_result_phase(r, "untar");
	const struct sfs_wl_phase *s = sfs_wl_result_phase(r, "sync");

	(void)vst;
	if (t) {
		emit(ctx, "untar", "real_s",
		     (double)(t->end_ns - t->start_ns) / 1e9, "s");
		emit(ctx, "untar", "sys_s", (double)t->cpu_ns / 1e9, "s");
	}
	if (s) {
		emit(ctx, "sync", "real_s",
		     (double)(s->end_ns - s->start_ns) / 1e9, "s");
		if (t)
			emit(ctx, "untar+sync", "real_s",
			     (double)(s->end_ns - t->start_ns) / 1e9, "s");
	}
}

const struct sfs_workload_ops sfs_wl_untar_ops = {
    .name = "untar",
    .help = "tar xf: a real tar archive, or a synthetic kernel-like "
	    "source tree",
    .doc = "One client extracts an archive as GNU tar xf does, in archive "
	   "order: each directory made before its contents (missing "
	   "parents too), each file created, written in the pieces that "
	   "fall in one archive record (10240 bytes, tar -b 20) and closed, "
	   "symlinks and hard links made; modes are the members' with the "
	   "umask applied. file= reads a real uncompressed tar (ustar, GNU "
	   "long names, pax path/linkpath/size) and writes the members' "
	   "real bytes; a malformed archive is refused with the byte "
	   "offset. Without file= a seeded synthetic tree stands in for a "
	   "kernel source: a random directory tree of `dirs` directories "
	   "no deeper than `depth` and `files` files with log-normal sizes "
	   "(median about a third of the mean: half the files under 4 KiB, "
	   "a long tail past 64 KiB, as in linux-2.6.11), listed depth "
	   "first in a shuffled readdir order. sync adds sync(2) as its "
	   "own phase. The report is bash's `time tar xf` (real, and sys "
	   "from the modelled CPU time) plus the counts. Differences from "
	   "GNU tar: times, owners and the delayed directory modes are not "
	   "set (there is no such op), devices and fifos are skipped, "
	   "a file already in the run root is truncated rather than "
	   "unlinked (a member repeated in the archive is unlinked and "
	   "made again, as tar does), the archive "
	   "is read from memory rather than through read(2) on the file "
	   "system under test.",
    .params = ut_params,
    .init = ut_init,
    .clients = sfs_wl_one_client,
    .next = ut_next,
    .report = ut_report,
    .metrics = ut_metrics,
    .fini = ut_fini,
};
