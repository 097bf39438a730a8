/*
 * main.c - the `simfs` program: subcommands in the manner of git.
 *
 *   simfs mkfs [-b BS] [-i BYTES_PER_INODE] [-I INODE_SIZE] [-m PCT]
 *              [-L LABEL] [-t ext2|ext3|ext4] [-O FEATURES] [--seed N] [-F]
 *              IMAGE [SIZE]
 *   simfs mount [-f] [-d] [-o OPTS] IMAGE MOUNTPOINT | --list-devices
 *   simfs IMAGE MOUNTPOINT [-o OPTS]   (= mount; what mount.fuse3 runs)
 *   simfs umount [--timeout SECONDS] MOUNTPOINT
 *   simfs sync [--timeout SECONDS] MOUNTPOINT
 *   simfs stats [--json] FILE|MOUNTPOINT
 *   simfs lab list | NAME [--seed N] [--level L] [--answers] | check ...
 *              (lab.c)
 *   simfs inspect IMAGE [summary|groups|inode INO|file PATH|free]
 *   simfs help [COMMAND] | --help | --version
 *   simfs help --man PAGE | --man-list | --bash-completion   (hidden; the
 *              manual pages and the completion, manpage.c)
 *
 * Errors are one line, "simfs CMD: reason", on stderr; exit status 2 for a
 * usage error, 1 for a failure.
 * With SIMFS_PARSE_ONLY=1 in the environment every command checks its
 * arguments and knobs as usual and then exits 0 without doing anything
 * (sfs_parse_only, config.h): how tests/integration/t_doccmds.py checks the
 * command lines of the documentation.
 *
 * The life of a mount (cmd_mount):
 *   parent: fork ------------------------ wait on the ready pipe -- exit 0
 *   child:  setsid, parse FUSE options, open IMAGE (exclusive lock),
 *           sfs_fs_open, mount, loop - INIT arrives: write the ready byte,
 *           detach stdio - ... unmount/SIGTERM: loop ends, fuse unmount,
 *           sfs_fs_close (write-back, image marked clean, lock released)
 * A child that fails before INIT prints its reason itself and exits
 * non-zero; the parent sees EOF on the pipe and exits with the child's
 * status.  -f (and -d) run the child's part in the foreground.  At unmount
 * the run's statistics go to stderr as a table (foreground) or to syslog
 * as one summary line (daemon); stats=FILE writes them as JSON.
 *
 * The image lock is the unmount handshake: `simfs umount` finds the image
 * from /proc/mounts (the mount's fsname), unmounts, and waits until it can
 * take the lock itself, i.e. until the daemon has closed the device.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include <json-glib/json-glib.h>

#include "blockdev.h"
#include "cli.h"
#include "config.h"
#include "devmodel.h"
#include "format.h"
#include "fs.h"
#include "fuse_adapter.h"
#include "inspect.h"
#include "lab.h"
#include "crash.h"
#include "manpage.h"
#include "mkfs.h"
#include "mkfs_cli.h"
#include "models/journal/jbd2.h"
#include "plot.h"
#include "sched.h"
#include "experiment.h"
#include "run.h"
#include "stats.h"
#include "statsdiff.h"
#include "trace.h"

#ifndef SFS_VERSION
#define SFS_VERSION "0.1.0"
#endif

#define SFS_EXIT_FAIL 1
#define SFS_EXIT_USAGE 2
#define SFS_UMOUNT_STALL_S 120	   /* no progress that long: give up */
#define SFS_UMOUNT_POLL_US 20000   /* between lock attempts */
#define SFS_UMOUNT_TICK_US 500000  /* between progress checks and lines */
#define SFS_FUSE_TYPE "fuse.simfs" /* /proc/mounts type of our mounts */

/* Report getopt's complaint about argv (opterr is off); returns 2. */
static int sfs_opt_error(const char *cmd, char **argv, int c)
{
	const char *arg = argv[optind - 1];

	if (c == ':')
		sfs_err(cmd, "option '%s' needs a value (see simfs %s --help)",
			arg, cmd);
	else if (optopt)
		sfs_err(cmd, "unknown option '-%c' (see simfs %s --help)",
			optopt, cmd);
	else
		sfs_err(cmd, "unknown option '%s' (see simfs %s --help)", arg,
			cmd);
	return SFS_EXIT_USAGE;
}

/* ================================================================ mkfs */

/* Which ext filesystem a superblock describes, by its feature bits. */
static const char *sfs_ext_kind(const struct sfs_dsuper *sb)
{
	uint32_t incompat = sfs_le32(sb->s_feature_incompat);
	uint32_t ro = sfs_le32(sb->s_feature_ro_compat);
	uint32_t compat = sfs_le32(sb->s_feature_compat);

	if (incompat &
		(SFS_FEATURE_INCOMPAT_EXTENTS | SFS_FEATURE_INCOMPAT_64BIT |
		 SFS_FEATURE_INCOMPAT_FLEX_BG) ||
	    ro & (SFS_FEATURE_RO_COMPAT_HUGE_FILE |
		  SFS_FEATURE_RO_COMPAT_GDT_CSUM |
		  SFS_FEATURE_RO_COMPAT_DIR_NLINK |
		  SFS_FEATURE_RO_COMPAT_EXTRA_ISIZE |
		  SFS_FEATURE_RO_COMPAT_METADATA_CSUM))
		return "ext4";
	if (compat & SFS_FEATURE_COMPAT_HAS_JOURNAL)
		return "ext3";
	return "ext2";
}

/* Read the primary superblock; false if the device holds none. */
static bool sfs_read_super(struct sfs_bdev *bd, struct sfs_dsuper *sb)
{
	if (sfs_bdev_size_bytes(bd) < SFS_SUPER_OFFSET + SFS_SUPER_SIZE)
		return false;
	if (sfs_bdev_read(bd, SFS_IO_SUPER, SFS_SUPER_OFFSET, sb, sizeof(*sb)) <
	    0)
		return false;
	return sfs_le16(sb->s_magic) == SFS_SUPER_MAGIC;
}

static void sfs_mkfs_summary(const char *image, struct sfs_bdev *bd)
{
	struct sfs_dsuper sb;
	uint32_t blocks, bs, bpg, ipg, groups, reserved;
	char size[32];
	bool sparse;
	int n = 0;

	if (!sfs_read_super(bd, &sb)) {
		printf("%s: formatted (superblock not readable back)\n", image);
		return;
	}
	blocks = sfs_le32(sb.s_blocks_count);
	bs = 1024u << sfs_le32(sb.s_log_block_size);
	bpg = sfs_le32(sb.s_blocks_per_group);
	ipg = sfs_le32(sb.s_inodes_per_group);
	reserved = sfs_le32(sb.s_r_blocks_count);
	groups =
	    bpg ? (blocks - sfs_le32(sb.s_first_data_block) + bpg - 1) / bpg
		: 0;
	sparse = sfs_le32(sb.s_feature_ro_compat) &
		 SFS_FEATURE_RO_COMPAT_SPARSE_SUPER;
	sfs_human_size((uint64_t)blocks * bs, size, sizeof(size));

	printf("Creating filesystem with %u %uk blocks and %u inodes (%s)\n",
	       blocks, bs / 1024, sfs_le32(sb.s_inodes_count), size);
	printf("Block size: %u, inode size: %u, %u blocks (%.1f%%) reserved "
	       "for root\n",
	       bs, sfs_le16(sb.s_inode_size), reserved,
	       blocks ? 100.0 * reserved / blocks : 0.0);
	printf("%u block group%s, %u blocks and %u inodes per group\n", groups,
	       groups == 1 ? "" : "s", bpg, ipg);
	printf("Filesystem UUID: ");
	for (int i = 0; i < 16; i++)
		printf("%s%02x",
		       (i == 4 || i == 6 || i == 8 || i == 10) ? "-" : "",
		       sb.s_uuid[i]);
	printf("\n");
	if (sb.s_volume_name[0])
		printf("Filesystem label: %.16s\n", sb.s_volume_name);
	for (uint32_t g = 1; g < groups; g++) {
		if (!sfs_group_has_super(g, sparse))
			continue;
		printf("%s%u", n++ ? ", " : "Superblock backups on blocks: ",
		       sfs_le32(sb.s_first_data_block) + g * bpg);
	}
	if (n)
		printf("\n");
}

/* A device that reads zeros and drops writes: mkfs's dry run. */
static int sfs_null_read(struct sfs_bdev *bd, uint64_t off, void *buf,
			 size_t len)
{
	memset(buf, 0, len);
	return 0;
}

static int sfs_null_write(struct sfs_bdev *bd, uint64_t off, const void *buf,
			  size_t len)
{
	return 0;
}

static int sfs_null_zero(struct sfs_bdev *bd, uint64_t off, uint64_t len)
{
	return 0;
}

static const struct sfs_bdev_ops sfs_null_ops = {
    .name = "null",
    .read = sfs_null_read,
    .write = sfs_null_write,
    .zero = sfs_null_zero,
};

/*
 * Would mkfs succeed on a device of size_bytes?  Runs it on a null device,
 * so that a geometry it refuses is refused before an image file is created
 * or resized.  0, or -EINVAL with the reason in *err.
 */
static int sfs_mkfs_dry_run(const struct sfs_mkfs_params *p,
			    uint64_t size_bytes, char **err)
{
	struct sfs_bdev *bd = sfs_bdev_new(&sfs_null_ops, NULL, size_bytes);
	int rc;

	sfs_bdev_set_known_zero(bd, true);
	rc = sfs_mkfs(bd, p, err);
	sfs_bdev_close(bd);
	return rc;
}

/* Report a failed sfs_mkfs (reason in err, freed). */
static void sfs_mkfs_failed(int rc, char *err)
{
	const char *why = err ? err : g_strerror(-rc);

	if (g_str_has_prefix(why, "mkfs: "))
		why += 6; /* our own prefix says it */
	sfs_err("mkfs", "%s", why);
	g_free(err);
}

static void sfs_mkfs_usage(FILE *out)
{
	fputs("usage: simfs mkfs [options] IMAGE [SIZE]\n"
	      "\n"
	      "Write a fresh ext2 filesystem on IMAGE (an image file or a "
	      "block device).\n"
	      "A missing IMAGE is created as a sparse file of SIZE; an "
	      "existing file is\n"
	      "resized to SIZE if given; a block device is used whole (or "
	      "its first SIZE).\n"
	      "SIZE takes a K, M, G or T suffix (powers of 1024).\n"
	      "\n"
	      "options:\n",
	      out);
	sfs_mkfs_cli_usage(out);
}

static int cmd_mkfs(int argc, char **argv)
{
	struct sfs_mkfs_cli cli;
	g_autofree char *features = NULL;
	struct sfs_mkfs_params p;
	struct sfs_bdev *bd = NULL;
	struct sfs_dsuper sb;
	const char *image;
	uint64_t size = 0;
	bool have_size = false, force, created = false;
	uint64_t journal_bytes; /* 0: mke2fs's default size */
	char *journal_path;	/* -J device=: an external journal */
	bool journal_mid;	/* -j, -J, --preset: the contiguous
				   journal in the middle groups */
	char *err = NULL;
	struct stat st;
	int rc = 0;

	sfs_mkfs_cli_init(&cli);
	if (sfs_mkfs_cli_parse(&cli, argc, argv, &err)) {
		sfs_mkfs_failed(-EINVAL, err);
		err = NULL;
		rc = SFS_EXIT_USAGE;
	}
	if (rc == 0 && !cli.help) {
		have_size = argc - optind == 2 &&
			    sfs_parse_size(argv[optind + 1], &size) == 0 &&
			    size > 0;
		if (sfs_mkfs_cli_resolve(&cli, have_size ? size : 0, &p,
					 &err)) {
			sfs_mkfs_failed(-EINVAL, err);
			rc = SFS_EXIT_USAGE;
		}
		have_size = false;
		size = 0;
	}
	features = cli.features; /* freed on every return */
	if (rc != 0 || cli.help) {
		g_free(cli.journal_path);
		if (cli.help && rc == 0)
			sfs_mkfs_usage(stdout);
		return rc;
	}
	force = cli.force;
	journal_bytes = cli.journal_bytes;
	journal_path = cli.journal_path;
	journal_mid = cli.journal_mid;
	if (argc - optind < 1 || argc - optind > 2) {
		sfs_err("mkfs", "%s (usage: simfs mkfs [options] IMAGE [SIZE])",
			argc - optind < 1 ? "IMAGE missing"
					  : "too many arguments");
		return SFS_EXIT_USAGE;
	}
	image = argv[optind];
	if (argc - optind == 2) {
		if (sfs_parse_size(argv[optind + 1], &size) < 0 || size == 0) {
			sfs_err("mkfs",
				"bad size '%s' (a number with an "
				"optional K, M, G or T suffix)",
				argv[optind + 1]);
			return SFS_EXIT_USAGE;
		}
		have_size = true;
	}
	if (sfs_parse_only()) {
		/* and the geometry, where SIZE says what it will be */
		rc = have_size ? sfs_mkfs_dry_run(&p, size, &err) : 0;
		g_free(journal_path);
		if (rc < 0)
			sfs_mkfs_failed(rc, err);
		return rc < 0 ? SFS_EXIT_FAIL : 0;
	}

	if (stat(image, &st) < 0) {
		if (errno != ENOENT) {
			sfs_err("mkfs", "%s: %s", image, g_strerror(errno));
			return SFS_EXIT_FAIL;
		}
		if (!have_size) {
			sfs_err("mkfs",
				"%s does not exist: give a SIZE to "
				"create it",
				image);
			return SFS_EXIT_USAGE;
		}
		/* refuse a geometry before creating anything */
		rc = sfs_mkfs_dry_run(&p, size, &err);
		if (rc < 0) {
			sfs_mkfs_failed(rc, err);
			return SFS_EXIT_FAIL;
		}
		rc = sfs_bdev_open_file(image, SFS_BDEV_CREATE | SFS_BDEV_EXCL,
					size, &bd);
		created = rc == 0;
		if (rc < 0 && rc != -EBUSY)
			unlink(image); /* a file the host could not size */
	} else if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
		rc = sfs_bdev_open_file(image, SFS_BDEV_EXCL, 0, &bd);
	} else {
		sfs_err("mkfs", "%s is not a regular file or block device",
			image);
		return SFS_EXIT_FAIL;
	}
	if (rc == -EBUSY) {
		sfs_err("mkfs", "%s is in use (mounted?)", image);
		return SFS_EXIT_FAIL;
	}
	if (rc < 0) {
		sfs_err("mkfs", "cannot open %s: %s", image, g_strerror(-rc));
		return SFS_EXIT_FAIL;
	}

	if (!created && !force && sfs_read_super(bd, &sb)) {
		sfs_err("mkfs",
			"%s contains an %s filesystem%s%.16s%s; use -F "
			"to overwrite it",
			image, sfs_ext_kind(&sb),
			sb.s_volume_name[0] ? " labelled '" : "",
			sb.s_volume_name, sb.s_volume_name[0] ? "'" : "");
		rc = SFS_EXIT_FAIL;
		goto out_close;
	}

	if (!created && have_size && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size != size) {
		/* refuse a geometry before the file is resized */
		rc = sfs_mkfs_dry_run(&p, size, &err);
		if (rc < 0) {
			sfs_mkfs_failed(rc, err);
			rc = SFS_EXIT_FAIL;
			goto out_close;
		}
		/* resize while holding the lock, then reopen at the new size */
		if (truncate(image, (off_t)size) < 0) {
			sfs_err("mkfs", "cannot resize %s: %s", image,
				g_strerror(errno));
			rc = SFS_EXIT_FAIL;
			goto out_close;
		}
		sfs_bdev_close(bd);
		bd = NULL;
		rc = sfs_bdev_open_file(image, SFS_BDEV_EXCL, 0, &bd);
		if (rc < 0) {
			sfs_err("mkfs", "cannot reopen %s: %s", image,
				g_strerror(-rc));
			return SFS_EXIT_FAIL;
		}
	} else if (have_size && S_ISBLK(st.st_mode)) {
		if (size > sfs_bdev_size_bytes(bd)) {
			sfs_err("mkfs",
				"SIZE %s is larger than the device "
				"%s (%" G_GUINT64_FORMAT " bytes)",
				argv[optind + 1], image,
				sfs_bdev_size_bytes(bd));
			rc = SFS_EXIT_FAIL;
			goto out_close;
		}
		p.size_bytes = size;
	}

	/* the size type of what is really formatted */
	{
		uint64_t keep = p.size_bytes;

		rc = sfs_mkfs_cli_resolve(
		    &cli, keep ? keep : sfs_bdev_size_bytes(bd), &p, &err);
		p.size_bytes = keep;
	}
	if (rc == 0)
		rc = sfs_mkfs(bd, &p, &err);
	if (rc < 0) {
		sfs_mkfs_failed(rc, err);
		rc = SFS_EXIT_FAIL;
		goto out_close;
	}
	if (p.has_journal && journal_path) {
		struct sfs_bdev *jd;
		uint64_t jbytes = journal_bytes ? journal_bytes : 32ull << 20;
		rc = sfs_bdev_open_file(journal_path,
					SFS_BDEV_CREATE | SFS_BDEV_EXCL, jbytes,
					&jd);
		if (rc < 0) {
			sfs_err("mkfs", "cannot open journal device %s: %s",
				journal_path, g_strerror(-rc));
			rc = SFS_EXIT_FAIL;
			goto out_close;
		}
		rc = sfs_jbd2_make_external(jd, bd, 0, NULL, &err);
		if (rc == 0)
			rc = sfs_bdev_flush(jd);
		sfs_bdev_close(jd);
		if (rc < 0) {
			sfs_mkfs_failed(rc, err);
			rc = SFS_EXIT_FAIL;
			goto out_close;
		}
	} else if (p.has_journal && !sfs_mkfs_makes_journal(&p)) {
		uint32_t blocks = (uint32_t)MIN(journal_bytes / p.block_size,
						UINT32_MAX);
		if (journal_bytes && blocks == 0)
			blocks = 1; /* refused below with the minimum */
		/* -t ext3 / -O has_journal alone: where mke2fs 1.47 puts a
		 * block-mapped journal, so the image equals mke2fs's */
		rc = sfs_jbd2_add_internal(bd, blocks,
					   journal_mid
					       ? SFS_JBD2_PLACE_MIDDLE
					       : SFS_JBD2_PLACE_FIRST_FREE,
					   &err);
		if (rc == 0 && !journal_mid)
			rc = sfs_mkfs_sync_backups(bd, &err);
		if (rc < 0) {
			sfs_mkfs_failed(rc, err);
			rc = SFS_EXIT_FAIL;
			goto out_close;
		}
	}
	rc = sfs_bdev_flush(bd);
	if (rc < 0) {
		sfs_err("mkfs", "flushing %s: %s", image, g_strerror(-rc));
		rc = SFS_EXIT_FAIL;
		goto out_close;
	}
	sfs_mkfs_summary(image, bd);
	if (p.has_journal && journal_path)
		printf("Journal: external, on %s (mount with -o journal_dev=%s)\n",
		       journal_path, journal_path);
	else if (p.has_journal)
		printf("Journal: internal (inode 8), %s\n",
		       journal_bytes ? "size as asked" : "mke2fs's default "
							 "size");
	rc = 0;

out_close:
	sfs_bdev_close(bd);
	if (rc != 0 && created)
		unlink(image); /* leave nothing half-made behind */
	g_free(journal_path);
	return rc;
}

/* =============================================================== mount */

static void sfs_mount_usage(FILE *out)
{
	fputs("usage: simfs mount [-f] [-d] [-o OPTS] IMAGE MOUNTPOINT\n"
	      "       simfs mount --list-devices\n"
	      "       simfs mount --list-presets\n"
	      "\n"
	      "Mount the ext2/ext3/ext4 image IMAGE at MOUNTPOINT through "
	      "FUSE.  By default\n"
	      "the daemon detaches once the mount is live; `simfs umount "
	      "MOUNTPOINT`\n"
	      "unmounts and waits until everything is written back.\n"
	      "\n"
	      "options:\n"
	      "  -f          stay in the foreground\n"
	      "  -d          FUSE debug output (implies -f)\n"
	      "  -o OPTS     comma-separated options (may repeat): the simfs "
	      "knobs below,\n"
	      "              anything else goes to FUSE (allow_other, "
	      "nodev, ...)\n"
	      "  -h, --help  this help\n"
	      "      --list-devices  device models, presets and I/O "
	      "schedulers with their knobs\n"
	      "      --list-presets  the historical systems (-o preset=NAME) "
	      "with their knobs\n"
	      "\n"
	      "simfs options (clock defaults to account on a mount):\n",
	      out);
	sfs_config_print_help(out);
	fputs(
	    "\nA device's or scheduler's knobs follow it: "
	    "-o device=hdd,rpm=5400,sched=elevator,max_req=256K\n"
	    "Always added: fsname=<absolute IMAGE path>, subtype=simfs, "
	    "default_permissions.\n"
	    "While mounted, MOUNTPOINT/.simfs/ holds stats (JSON), stats.txt, "
	    "config\n(write clock=... or device=... to it) and last_error; "
	    "see simfs stats.\n",
	    out);
}

struct sfs_mount_ctx {
	int ready_fd;	 /* write end of the handshake pipe, or -1 */
	bool detached;	 /* stdio gone: messages go to syslog */
	const char *mnt; /* for the summary line */
};

/* A member of a JSON object by a dotted path, as an integer (0 if none). */
static uint64_t sfs_json_u64(JsonNode *root, const char *path)
{
	char **parts = g_strsplit(path, ".", -1);
	JsonNode *n = root;
	uint64_t v = 0;

	for (char **p = parts; *p && n; p++)
		n = JSON_NODE_HOLDS_OBJECT(n)
			? json_object_get_member(json_node_get_object(n), *p)
			: NULL;
	if (n && JSON_NODE_HOLDS_VALUE(n)) {
		if (json_node_get_value_type(n) == G_TYPE_DOUBLE)
			v = json_node_get_double(n) > 0
				? (uint64_t)json_node_get_double(n)
				: 0;
		else if (json_node_get_value_type(n) == G_TYPE_INT64)
			v = (uint64_t)MAX(json_node_get_int(n), 0);
	}
	g_strfreev(parts);
	return v;
}

/* sfs_json_u64 of the path "PREFIX.rest". */
static uint64_t sfs_json_u64_at(JsonNode *root, const char *prefix,
				const char *rest)
{
	char *path = g_strconcat(prefix, ".", rest, NULL);
	uint64_t v = sfs_json_u64(root, path);

	g_free(path);
	return v;
}

/* The engine's messages (a filesystem error's reason, warnings) once the
 * daemon's stderr is /dev/null. */
static void printerr_to_syslog(const gchar *msg)
{
	syslog(LOG_ERR, "%s", msg);
}

/*
 * sfs_fs_close_fn of a daemon: one line to syslog with the run's totals,
 * after the final write-back.  A timing device reports under
 * device.submitted; device=none has the backing device's counters right
 * under device.
 */
static void sfs_mount_summary(void *arg, struct sfs_stats *st)
{
	const struct sfs_mount_ctx *m = arg;
	JsonNode *j = sfs_stats_snapshot(st);
	const char *dev = "device.submitted";
	char rd[32], wr[32], drd[32], dwr[32];
	uint64_t reqs;

	if (!sfs_json_u64(j, "device.busy_until_ns") &&
	    sfs_json_u64(j, "device.write.requests"))
		dev = "device";
	sfs_human_size(sfs_json_u64(j, "ops.bytes_read"), rd, sizeof(rd));
	sfs_human_size(sfs_json_u64(j, "ops.bytes_written"), wr, sizeof(wr));
	sfs_human_size(sfs_json_u64_at(j, dev, "read.bytes"), drd, sizeof(drd));
	sfs_human_size(sfs_json_u64_at(j, dev, "write.bytes"), dwr,
		       sizeof(dwr));
	reqs = sfs_json_u64_at(j, dev, "read.requests") +
	       sfs_json_u64_at(j, dev, "write.requests") +
	       sfs_json_u64_at(j, dev, "flush.requests");
	syslog(LOG_INFO,
	       "unmounted %s: %" G_GUINT64_FORMAT " ops, workload read %s, "
	       "wrote %s; device %" G_GUINT64_FORMAT " requests, read %s, "
	       "wrote %s, modelled busy %.3f s",
	       m->mnt, sfs_json_u64(j, "ops.total"), rd, wr, reqs, drd, dwr,
	       (double)sfs_json_u64(j, "device.busy_ns") / 1e9);
	json_node_unref(j);
}

/*
 * The mount is live (the kernel's INIT arrived): release the waiting
 * parent and detach from its terminal and pipes, so a caller reading our
 * output sees EOF.  Runs once, on a loop worker.
 */
static void sfs_mount_ready(void *arg)
{
	struct sfs_mount_ctx *m = arg;
	int fd;

	if (m->ready_fd < 0)
		return;
	openlog("simfs", LOG_PID, LOG_DAEMON);
	sfs_fuse_log_to_syslog();
	g_set_printerr_handler(printerr_to_syslog);
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	m->detached = true;
	while (write(m->ready_fd, "", 1) < 0 && errno == EINTR)
		;
	close(m->ready_fd);
	m->ready_fd = -1;
}

static void G_GNUC_PRINTF(2, 3)
    sfs_mount_msg(const struct sfs_mount_ctx *m, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	if (m->detached)
		syslog(LOG_ERR, "simfs mount: %s", msg);
	else
		sfs_err("mount", "%s", msg);
	g_free(msg);
}

/*
 * Fork the daemon.  The parent waits for the ready byte and exits 0, or
 * with the child's status if the child ends first; only the child returns
 * (with *ready_fd set).
 */
static int sfs_mount_fork(int *ready_fd)
{
	int pfd[2], status;
	ssize_t n;
	pid_t pid;
	char c;

	if (pipe2(pfd, O_CLOEXEC) < 0) {
		sfs_err("mount", "pipe: %s", g_strerror(errno));
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		sfs_err("mount", "fork: %s", g_strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		/* a daemon keeps no inherited descriptors (a caller's pipes
		 * would never see EOF): only stdio, until ready, and the
		 * handshake pipe */
		close(pfd[0]);
		if (pfd[1] > 3)
			close_range(3, (unsigned)pfd[1] - 1, 0);
		close_range((unsigned)pfd[1] + 1, ~0u, 0);
		setsid();
		*ready_fd = pfd[1];
		return 0;
	}

	close(pfd[1]);
	do
		n = read(pfd[0], &c, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		_exit(0);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			_exit(SFS_EXIT_FAIL);
	}
	if (WIFEXITED(status))
		_exit(WEXITSTATUS(status) ? WEXITSTATUS(status)
					  : SFS_EXIT_FAIL);
	sfs_err("mount",
		"the daemon died (signal %d) before the mount was "
		"ready",
		WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	_exit(SFS_EXIT_FAIL);
}

/* Make a file knob's relative path absolute (from the current directory). */
static void sfs_mount_absolute(char *path, size_t size)
{
	char *abs;

	if (!*path || g_path_is_absolute(path))
		return;
	abs = g_canonicalize_filename(path, NULL);
	if (strlen(abs) < size)
		g_strlcpy(path, abs, size);
	g_free(abs);
}

/* Does the FUSE option list set an option we must own? */
static const char *sfs_mount_reserved_opt(const char *fuse_opts)
{
	static const char *const reserved[] = {"fsname=", "subtype="};
	char **toks;
	const char *hit = NULL;

	if (!fuse_opts)
		return NULL;
	toks = g_strsplit(fuse_opts, ",", -1);
	for (int i = 0; toks[i] && !hit; i++)
		for (size_t r = 0; r < G_N_ELEMENTS(reserved); r++)
			if (g_str_has_prefix(toks[i], reserved[r]))
				hit = reserved[r];
	g_strfreev(toks);
	return hit;
}

/*
 * Options that mount(8), fstab and systemd pass to every helper but that
 * mean nothing to a FUSE daemon: taken out of the FUSE list (libfuse would
 * refuse them).  ro/rw and the atime words are simfs knobs, parsed before
 * this; dev, suid, exec and their "no" forms, sync, dirsync, ... go on to
 * FUSE, which knows them.
 */
static bool sfs_mount_generic_opt(const char *tok)
{
	static const char *const ignored[] = {
	    "defaults",	  "auto",     "noauto",	    "user",   "nouser",
	    "users",	  "owner",    "group",	    "nofail", "_netdev",
	    "norelatime", "lazytime", "nolazytime", "loud",   "silent",
	    "nomand",	  "iversion", "noiversion",
	};

	if (g_str_has_prefix(tok, "x-") || g_str_has_prefix(tok, "comment="))
		return true;
	for (size_t i = 0; i < G_N_ELEMENTS(ignored); i++)
		if (strcmp(tok, ignored[i]) == 0)
			return true;
	return false;
}

/* The FUSE option list without sfs_mount_generic_opt's options (g_free). */
static char *sfs_mount_drop_generic(const char *fuse_opts)
{
	GString *out = g_string_new(NULL);
	char **toks;

	if (!fuse_opts)
		return g_string_free(out, FALSE);
	toks = g_strsplit(fuse_opts, ",", -1);
	for (int i = 0; toks[i]; i++) {
		if (!*toks[i] || sfs_mount_generic_opt(toks[i]))
			continue;
		if (out->len)
			g_string_append_c(out, ',');
		g_string_append(out, toks[i]);
	}
	g_strfreev(toks);
	return g_string_free(out, FALSE);
}

/* Append "key=value" to a FUSE option list, escaping ',' and '\'. */
static void sfs_opt_append_escaped(GString *opts, const char *key,
				   const char *value)
{
	if (opts->len)
		g_string_append_c(opts, ',');
	g_string_append(opts, key);
	for (const char *p = value; *p; p++) {
		if (*p == ',' || *p == '\\')
			g_string_append_c(opts, '\\');
		g_string_append_c(opts, *p);
	}
}

/*
 * Is something mounted at mnt (an absolute, resolved path)?  Its type and
 * source from /proc/self/mountinfo (g_free both) if so; false if not or if
 * the table cannot be read.
 */
static bool sfs_mount_at(const char *mnt, char **type_out, char **source_out)
{
	char *text = NULL, **lines;
	bool found = false;

	if (!g_file_get_contents("/proc/self/mountinfo", &text, NULL, NULL))
		return false;
	lines = g_strsplit(text, "\n", -1);
	for (int i = 0; lines[i] && !found; i++) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS] - TYPE SRC */
		char **f = g_strsplit(lines[i], " ", -1);
		char *target;

		if (g_strv_length(f) < 5) {
			g_strfreev(f);
			continue;
		}
		target = g_strcompress(f[4]);
		if (strcmp(target, mnt) == 0) {
			int j = 5;

			while (f[j] && strcmp(f[j], "-") != 0)
				j++;
			found = true;
			*type_out = g_strdup(f[j] && f[j + 1] ? f[j + 1] : "?");
			*source_out = g_strcompress(
			    f[j] && f[j + 1] && f[j + 2] ? f[j + 2] : "?");
		}
		g_free(target);
		g_strfreev(f);
	}
	g_strfreev(lines);
	g_free(text);
	return found;
}

/* After a failed FUSE mount: a hint if /dev/fuse is missing or closed. */
static void sfs_mount_fuse_hint(void)
{
	struct stat st;

	if (stat("/dev/fuse", &st) < 0)
		sfs_err("mount", "/dev/fuse does not exist: load the fuse "
				 "module (modprobe fuse, as root), or in a "
				 "container pass the device in");
	else if (access("/dev/fuse", R_OK | W_OK) < 0)
		sfs_err("mount",
			"no access to /dev/fuse (mode %04o, owner uid %u): "
			"run as root, or check that /dev/fuse is mode 0666 "
			"and fusermount3 is setuid root",
			(unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
}

static int cmd_mount(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"list-devices", no_argument, NULL, 'L'},
	    {"list-presets", no_argument, NULL, 'R'},
	    {NULL, 0, NULL, 0},
	};
	struct sfs_mount_ctx m = {.ready_fd = -1};
	GString *opts = g_string_new(NULL), *fuse_opts = g_string_new(NULL);
	char *unknown = NULL, *err = NULL, *image = NULL, *mnt = NULL;
	char *generic, *mtype, *msource;
	bool foreground = false, debug = false;
	struct sfs_fuse *f = NULL;
	struct sfs_bdev *bd = NULL;
	struct sfs_fs *fs = NULL;
	struct sfs_config cfg;
	const char *reserved;
	unsigned flags;
	struct stat st;
	int c, rc;

	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":fdo:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			foreground = true;
			break;
		case 'd':
			debug = foreground = true;
			break;
		case 'o':
			if (opts->len)
				g_string_append_c(opts, ',');
			g_string_append(opts, optarg);
			break;
		case 'h':
			sfs_mount_usage(stdout);
			rc = 0;
			goto out;
		case 'L':
			sfs_devmodel_list(stdout);
			fputc('\n', stdout);
			sfs_sched_list(stdout);
			rc = 0;
			goto out;
		case 'R':
			sfs_config_list_presets(stdout);
			rc = 0;
			goto out;
		default:
			rc = sfs_opt_error("mount", argv, c);
			goto out;
		}
	}
	if (argc - optind != 2) {
		sfs_err("mount",
			"%s (usage: simfs mount [-f] [-d] [-o OPTS] "
			"IMAGE MOUNTPOINT)",
			argc - optind < 2 ? "IMAGE and MOUNTPOINT needed"
					  : "too many arguments");
		rc = SFS_EXIT_USAGE;
		goto out;
	}

	/* One malloc arena for the daemon's threads (doc/cache.md 9): the
	 * engine's work, where nearly all allocation happens, runs under
	 * its one lock, so more arenas buy little concurrency, only memory
	 * each keeps of what it freed.  Set before any thread starts. */
	mallopt(M_ARENA_MAX, 1);
	sfs_config_defaults(&cfg);
	/* a mount runs on real time; the user may still ask otherwise */
	g_strlcpy(cfg.clock, "account", sizeof(cfg.clock));
	if (sfs_config_parse(&cfg, opts->str, &unknown, &err) < 0) {
		sfs_err("mount", "%s", err);
		rc = SFS_EXIT_USAGE;
		goto out;
	}
	/* the daemon runs in "/": file knobs are taken from here */
	sfs_mount_absolute(cfg.stats_path, sizeof(cfg.stats_path));
	sfs_mount_absolute(cfg.iolog_path, sizeof(cfg.iolog_path));
	sfs_mount_absolute(cfg.trace_path, sizeof(cfg.trace_path));
	generic = sfs_mount_drop_generic(unknown);
	g_free(unknown);
	unknown = generic;
	reserved = sfs_mount_reserved_opt(unknown);
	if (reserved) {
		sfs_err("mount",
			"option %s is set by simfs itself (simfs "
			"umount relies on it)",
			reserved);
		rc = SFS_EXIT_USAGE;
		goto out;
	}
	if (sfs_parse_only()) {
		/* libfuse checks the FUSE options without mounting */
		g_string_append(fuse_opts, "subtype=simfs,default_permissions");
		if (*unknown)
			g_string_append_printf(fuse_opts, ",%s", unknown);
		rc = sfs_fuse_new(fuse_opts->str, debug, &f) < 0
			 ? SFS_EXIT_USAGE
			 : 0;
		goto out;
	}

	image = realpath(argv[optind], NULL);
	if (!image) {
		sfs_err("mount", "%s: %s", argv[optind], g_strerror(errno));
		rc = SFS_EXIT_FAIL;
		goto out;
	}
	mnt = realpath(argv[optind + 1], NULL);
	if (!mnt || stat(mnt, &st) < 0 || !S_ISDIR(st.st_mode)) {
		sfs_err("mount", "%s: %s", argv[optind + 1],
			mnt ? g_strerror(ENOTDIR) : g_strerror(errno));
		rc = SFS_EXIT_FAIL;
		goto out;
	}
	/* a second mount would hide the first one and stack on it */
	if (sfs_mount_at(mnt, &mtype, &msource)) {
		sfs_err("mount",
			"%s is already a mount point (%s from %s); unmount it "
			"first or choose another directory",
			mnt, mtype, msource);
		g_free(mtype);
		g_free(msource);
		rc = SFS_EXIT_FAIL;
		goto out;
	}

	sfs_opt_append_escaped(fuse_opts, "fsname=", image);
	g_string_append(fuse_opts, ",subtype=simfs,default_permissions");
	if (cfg.ro)
		g_string_append(fuse_opts, ",ro");
	if (*unknown)
		g_string_append_printf(fuse_opts, ",%s", unknown);

	if (!foreground) {
		if (sfs_mount_fork(&m.ready_fd) < 0) {
			rc = SFS_EXIT_FAIL;
			goto out;
		}
	}
	/* from here on: the daemon (or the foreground process) */
	if (chdir("/") < 0) {
		/* harmless: paths are absolute */
	}

	rc = sfs_fuse_new(fuse_opts->str, debug, &f);
	if (rc < 0) {
		/* libfuse said why, through the log hook */
		rc = SFS_EXIT_USAGE;
		goto out;
	}

	flags = SFS_BDEV_EXCL;
	if (cfg.ro)
		flags |= SFS_BDEV_RDONLY;
	if (cfg.direct)
		flags |= SFS_BDEV_DIRECT;
	rc = sfs_bdev_open_file(image, flags, 0, &bd);
	if (rc == -EBUSY) {
		sfs_err("mount", "%s is in use (already mounted?)", image);
		rc = SFS_EXIT_FAIL;
		goto out;
	}
	if (rc < 0) {
		sfs_err("mount", "cannot open %s: %s", image, g_strerror(-rc));
		rc = SFS_EXIT_FAIL;
		goto out;
	}
	rc = sfs_fs_open(bd, &cfg, &fs, &err);
	bd = NULL; /* the engine owns it now, even on failure */
	if (rc < 0) {
		sfs_err("mount", "%s", err ? err : g_strerror(-rc));
		rc = SFS_EXIT_FAIL;
		goto out;
	}

	m.mnt = mnt;
	if (foreground)
		sfs_fs_set_report(fs, stderr);
	else
		sfs_fs_set_close_fn(fs, sfs_mount_summary, &m);
	if (sfs_fuse_mount(f, fs, mnt) < 0) {
		/* libfuse said why; say what to do about /dev/fuse */
		sfs_mount_fuse_hint();
		rc = SFS_EXIT_FAIL;
		goto out_close;
	}
	rc = sfs_fuse_serve(f, sfs_mount_ready, &m);
	if (rc < 0) {
		sfs_mount_msg(&m, "serving %s failed: %s", mnt,
			      g_strerror(-rc));
		rc = SFS_EXIT_FAIL;
	} else {
		rc = 0;
	}

out_close:
	c = sfs_fs_close(fs);
	fs = NULL;
	if (c < 0) {
		sfs_mount_msg(&m, "writing back %s failed: %s", image,
			      g_strerror(-c));
		rc = SFS_EXIT_FAIL;
	}
out:
	sfs_fuse_free(f);
	if (m.ready_fd >= 0)
		close(m.ready_fd); /* the parent reads EOF: failure */
	g_free(unknown);
	g_free(err);
	free(image);
	free(mnt);
	g_string_free(opts, TRUE);
	g_string_free(fuse_opts, TRUE);
	return rc;
}

/* ============================================================== umount */

static void sfs_umount_usage(FILE *out)
{
	fprintf(out,
		"usage: simfs umount [--timeout SECONDS] MOUNTPOINT\n"
		"\n"
		"Unmount a simfs mount (fusermount3 -u) and wait until the "
		"daemon has written\n"
		"everything back and released the image.  When this returns "
		"0 the image is\n"
		"complete and marked clean: e2fsck can run.  It waits as long "
		"as the daemon\n"
		"makes progress (writes or uses CPU), and gives up only after "
		"%d s without\n"
		"any; on a terminal it shows the write-back's progress.\n"
		"\n"
		"options:\n"
		"      --timeout SECONDS  give up after SECONDS in any case "
		"(the daemon goes on)\n"
		"  -h, --help             this help\n",
		SFS_UMOUNT_STALL_S);
}

/*
 * Find the topmost mount at mnt in /proc/mounts: its source (g_free) and
 * type (g_free).  -ENOENT if nothing is mounted there.
 */
static int sfs_find_mount(const char *mnt, char **source_out, char **type_out)
{
	char *text = NULL, **lines;
	GError *gerr = NULL;
	int rc = -ENOENT;

	if (!g_file_get_contents("/proc/mounts", &text, NULL, &gerr)) {
		g_error_free(gerr);
		return -EIO;
	}
	lines = g_strsplit(text, "\n", -1);
	for (int i = 0; lines[i]; i++) {
		char **f = g_strsplit(lines[i], " ", 4);

		if (g_strv_length(f) >= 3) {
			/* octal escapes: \040 for a space, ... */
			char *target = g_strcompress(f[1]);

			if (strcmp(target, mnt) == 0) {
				g_free(*source_out);
				g_free(*type_out);
				*source_out = g_strcompress(f[0]);
				*type_out = g_strdup(f[2]);
				rc = 0;
			}
			g_free(target);
		}
		g_strfreev(f);
	}
	g_strfreev(lines);
	g_free(text);
	return rc;
}

/*
 * Absolute form of a mount point without touching the mount itself (a
 * hung or dead daemon must not hang us): resolve the parent directory,
 * keep the last component.
 */
static char *sfs_mountpoint_path(const char *arg)
{
	char *canon = g_canonicalize_filename(arg, NULL);
	char *dir = g_path_get_dirname(canon);
	char *base = g_path_get_basename(canon);
	char *rdir = realpath(dir, NULL);
	char *out;

	if (rdir && strcmp(canon, "/") != 0)
		out = g_build_filename(rdir, base, NULL);
	else
		out = g_strdup(canon);
	free(rdir);
	g_free(dir);
	g_free(base);
	g_free(canon);
	return out;
}

/* Run fusermount3 -u mnt; 0 or -1 (it printed why). */
static int sfs_run_fusermount(const char *mnt)
{
	int status;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", "--", mnt,
		       (char *)NULL);
		fprintf(stderr, "simfs umount: cannot run fusermount3: %s\n",
			g_strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* What a waiting `simfs umount` knows and shows. */
struct sfs_umount_watch {
	const char *cmd;     /* "umount" or "sync": names the lines */
	const char *mnt;     /* for messages */
	bool tty;	     /* stderr is a terminal: progress lines */
	double timeout_s;    /* --timeout, or 0: none */
	int64_t dirty_bytes; /* the daemon's dirty cache at unmount, or -1 */
	pid_t pid;	     /* the daemon, or 0 if not found */
	uint64_t wchar, cpu; /* its write(2) bytes and CPU ticks so far */
	uint64_t wchar0;     /* wchar when the wait began */
};

struct sfs_dirty_read {
	char *path;    /* MNT/.simfs/stats */
	char *text;    /* its contents, or NULL */
	GMutex lock;   /* protects done */
	GCond cond;    /* done changed */
	bool done;     /* the reader has finished */
	bool orphaned; /* the waiter gave up: the reader frees it all */
};

/* Read the stats file off the main thread: a hung daemon must not hang
 * us; the reader frees the request if the waiter gave up. */
static gpointer sfs_dirty_reader(gpointer arg)
{
	struct sfs_dirty_read *r = arg;
	char *text = NULL;
	bool orphaned;

	if (!g_file_get_contents(r->path, &text, NULL, NULL))
		text = NULL;
	g_mutex_lock(&r->lock);
	r->text = text;
	r->done = true;
	orphaned = r->orphaned;
	g_cond_signal(&r->cond);
	g_mutex_unlock(&r->lock);
	if (orphaned) {
		g_free(r->text);
		g_free(r->path);
		g_free(r);
	}
	return NULL;
}

/*
 * The mount's dirty bytes just before unmounting, for the progress line:
 * the dirty cache plus the delayed allocations' reserved blocks (of
 * block_bytes) of MNT/.simfs/stats; -1 if it cannot be read within 2 s.
 */
static int64_t sfs_umount_dirty(const char *mnt, uint64_t block_bytes)
{
	struct sfs_dirty_read *r = g_new0(struct sfs_dirty_read, 1);
	gint64 deadline = g_get_monotonic_time() + 2 * G_USEC_PER_SEC;
	int64_t dirty = -1;
	JsonParser *p;
	GThread *t;

	r->path = g_build_filename(mnt, ".simfs", "stats", NULL);
	g_mutex_init(&r->lock);
	g_cond_init(&r->cond);
	t = g_thread_try_new("stats", sfs_dirty_reader, r, NULL);
	if (!t) {
		g_free(r->path);
		g_free(r);
		return -1;
	}
	g_mutex_lock(&r->lock);
	while (!r->done)
		if (!g_cond_wait_until(&r->cond, &r->lock, deadline))
			break;
	if (!r->done) {
		r->orphaned = true; /* the reader frees r */
		g_mutex_unlock(&r->lock);
		g_thread_unref(t);
		return -1;
	}
	g_mutex_unlock(&r->lock);
	g_thread_join(t);
	p = json_parser_new();
	if (r->text && json_parser_load_from_data(p, r->text, -1, NULL))
		dirty = (int64_t)(sfs_json_u64(json_parser_get_root(p),
					       "cache.dirty_bytes") +
				  block_bytes *
				      sfs_json_u64(json_parser_get_root(p),
						   "delalloc.reserved_blocks"));
	g_object_unref(p);
	g_free(r->text);
	g_free(r->path);
	g_free(r);
	return dirty;
}

/* The other process that has the image (fd) open: the daemon; 0 if none. */
static pid_t sfs_umount_find_daemon(int fd)
{
	struct stat img, st;
	GDir *procs, *fds;
	const char *pname, *fname;
	pid_t found = 0;

	if (fstat(fd, &img) < 0)
		return 0;
	procs = g_dir_open("/proc", 0, NULL);
	if (!procs)
		return 0;
	while (!found && (pname = g_dir_read_name(procs))) {
		char *fddir;
		pid_t pid = (pid_t)atoi(pname);

		if (pid <= 0 || pid == getpid())
			continue;
		fddir = g_strdup_printf("/proc/%d/fd", pid);
		fds = g_dir_open(fddir, 0, NULL);
		while (fds && !found && (fname = g_dir_read_name(fds))) {
			char *link = g_build_filename(fddir, fname, NULL);

			if (stat(link, &st) == 0 &&
			    (S_ISBLK(img.st_mode)
				 ? S_ISBLK(st.st_mode) &&
				       st.st_rdev == img.st_rdev
				 : st.st_dev == img.st_dev &&
				       st.st_ino == img.st_ino))
				found = pid;
			g_free(link);
		}
		if (fds)
			g_dir_close(fds);
		g_free(fddir);
	}
	g_dir_close(procs);
	return found;
}

/* Read the daemon's write(2) bytes and CPU ticks; false once it is gone. */
static bool sfs_umount_sample(pid_t pid, uint64_t *wchar, uint64_t *cpu)
{
	char path[64], *text = NULL, *p;
	unsigned long long ut, st;
	bool ok;

	g_snprintf(path, sizeof(path), "/proc/%d/io", pid);
	if (g_file_get_contents(path, &text, NULL, NULL) &&
	    (p = strstr(text, "wchar:")))
		*wchar = g_ascii_strtoull(p + 6, NULL, 10);
	g_free(text);
	text = NULL;
	g_snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	ok = g_file_get_contents(path, &text, NULL, NULL);
	/* fields 14 and 15 (utime, stime) after the ")" ending comm */
	p = ok ? strrchr(text, ')') : NULL;
	if (p && sscanf(p + 1,
			" %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu "
			"%llu",
			&ut, &st) == 2)
		*cpu = ut + st;
	g_free(text);
	return ok;
}

/* One progress line on the terminal, rewritten in place. */
static void sfs_umount_show(const struct sfs_umount_watch *w, double secs)
{
	char done[32], dirty[32];
	uint64_t written = w->wchar - w->wchar0;

	sfs_human_size(written, done, sizeof(done));
	if (w->dirty_bytes > 0) {
		sfs_human_size((uint64_t)w->dirty_bytes, dirty, sizeof(dirty));
		fprintf(stderr,
			"\rsimfs %s: writing back %s: %s written of "
			"about %s dirty, %.0f s   ",
			w->cmd, w->mnt, done, dirty, secs);
	} else {
		fprintf(stderr,
			"\rsimfs %s: writing back %s: %s written, %.0f s   ",
			w->cmd, w->mnt, done, secs);
	}
	fflush(stderr);
}

/*
 * Wait until the daemon has released the image: it holds flock(LOCK_EX) on
 * an image file and O_EXCL on a block device (blockdev.c, SFS_BDEV_EXCL)
 * until sfs_fs_close has written everything back.  Waits as long as the
 * daemon makes progress (its write(2) bytes or CPU time grow), at most
 * w->timeout_s if set.  0 or -1 (said why).
 */
static int sfs_umount_wait(const char *source, int fd,
			   struct sfs_umount_watch *w)
{
	gint64 start = g_get_monotonic_time(), now, last_progress = start,
	       next_tick = start + SFS_UMOUNT_TICK_US;
	bool blkdev, shown = false;
	struct stat st;
	int xfd, rc = -1;

	blkdev = fstat(fd, &st) == 0 && S_ISBLK(st.st_mode);
	w->pid = sfs_umount_find_daemon(fd);
	if (w->pid)
		sfs_umount_sample(w->pid, &w->wchar, &w->cpu);
	w->wchar0 = w->wchar;
	for (;;) {
		if (blkdev) {
			xfd = open(source, O_RDONLY | O_EXCL | O_CLOEXEC);
			if (xfd >= 0) {
				close(xfd);
				rc = 0;
				break;
			}
		} else if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			flock(fd, LOCK_UN);
			rc = 0;
			break;
		}
		if (errno != EWOULDBLOCK && errno != EBUSY && errno != EINTR) {
			sfs_err("umount", "waiting for %s: %s", source,
				g_strerror(errno));
			break;
		}
		now = g_get_monotonic_time();
		if (now >= next_tick) {
			uint64_t wc = w->wchar, cpu = w->cpu;

			next_tick = now + SFS_UMOUNT_TICK_US;
			if (w->pid && sfs_umount_sample(w->pid, &wc, &cpu) &&
			    (wc != w->wchar || cpu != w->cpu))
				last_progress = now;
			w->wchar = wc;
			w->cpu = cpu;
			if (w->tty) {
				sfs_umount_show(w, (double)(now - start) / 1e6);
				shown = true;
			}
		}
		if (w->timeout_s > 0 &&
		    (double)(now - start) / 1e6 > w->timeout_s) {
			if (shown)
				fputc('\n', stderr);
			shown = false;
			sfs_err("umount",
				"gave up after --timeout %g s: the simfs "
				"daemon (pid %d) is still writing back %s; "
				"the image is complete once it exits",
				w->timeout_s, (int)w->pid, source);
			break;
		}
		if (now - last_progress >
		    (gint64)SFS_UMOUNT_STALL_S * G_USEC_PER_SEC) {
			if (shown)
				fputc('\n', stderr);
			shown = false;
			sfs_err("umount",
				"the simfs daemon (pid %d) has made no "
				"progress for %d s and still holds %s; see "
				"the system log",
				(int)w->pid, SFS_UMOUNT_STALL_S, source);
			break;
		}
		g_usleep(SFS_UMOUNT_POLL_US);
	}
	if (shown && rc == 0) {
		/* the last line: what was written in the end */
		if (w->pid)
			sfs_umount_sample(w->pid, &w->wchar, &w->cpu);
		sfs_umount_show(w,
				(double)(g_get_monotonic_time() - start) / 1e6);
	}
	if (shown)
		fputc('\n', stderr);
	return rc;
}

/*
 * The arguments of `simfs CMD [-h] MOUNTPOINT`: the mount point (absolute),
 * its image and type, checked to be a simfs mount.  Returns 0, -1 after
 * printing the help or under SIMFS_PARSE_ONLY (exit 0), or the exit code
 * after an error message.
 * The caller g_frees *mnt, *source and *type in every case.
 */
static int sfs_mountpoint_args(const char *cmd, void (*usage)(FILE *), int argc,
			       char **argv, double *timeout_s, char **mnt,
			       char **source, char **type)
{
	static const struct option longopts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"timeout", required_argument, NULL, 'T'},
	    {NULL, 0, NULL, 0},
	};
	char *end;
	int c;

	*mnt = *source = *type = NULL;
	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return -1;
		}
		if (c == 'T' && timeout_s) {
			errno = 0;
			*timeout_s = g_ascii_strtod(optarg, &end);
			if (errno || end == optarg || *end ||
			    !(*timeout_s > 0 && *timeout_s <= 1e6)) {
				sfs_err(cmd,
					"bad --timeout '%s' (seconds, more "
					"than 0 and at most 1000000)",
					optarg);
				return SFS_EXIT_USAGE;
			}
			continue;
		}
		return sfs_opt_error(cmd, argv, c);
	}
	if (argc - optind != 1) {
		sfs_err(cmd, "%s (usage: simfs %s MOUNTPOINT)",
			argc - optind < 1 ? "MOUNTPOINT missing"
					  : "too many arguments",
			cmd);
		return SFS_EXIT_USAGE;
	}
	if (sfs_parse_only())
		return -1;
	*mnt = sfs_mountpoint_path(argv[optind]);
	if (sfs_find_mount(*mnt, source, type) < 0) {
		struct stat st;

		/* nothing is mounted there: stat cannot hang on a daemon */
		if (stat(*mnt, &st) < 0 && errno == ENOENT)
			sfs_err(cmd, "%s does not exist", *mnt);
		else if (stat(*mnt, &st) < 0)
			sfs_err(cmd, "%s: %s", *mnt, g_strerror(errno));
		else if (!S_ISDIR(st.st_mode))
			sfs_err(cmd,
				"%s is not a directory, so not a mount "
				"point",
				*mnt);
		else
			sfs_err(cmd, "%s is not mounted", *mnt);
		return SFS_EXIT_FAIL;
	}
	if (strcmp(*type, SFS_FUSE_TYPE) != 0) {
		sfs_err(cmd, "%s is not a simfs mount (type %s)", *mnt, *type);
		return SFS_EXIT_FAIL;
	}
	return 0;
}

static int cmd_umount(int argc, char **argv)
{
	char *mnt, *source, *type;
	struct sfs_umount_watch w = {0};
	struct sfs_dsuper sb;
	double timeout_s = 0;
	int fd = -1, rc;

	rc = sfs_mountpoint_args("umount", sfs_umount_usage, argc, argv,
				 &timeout_s, &mnt, &source, &type);
	if (rc) {
		rc = rc < 0 ? 0 : rc;
		goto out;
	}
	/* opened before unmounting: the daemon may close it any moment */
	fd = open(source, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		sfs_err("umount",
			"cannot open the image %s (%s): unmounting "
			"without waiting for the write-back",
			source, g_strerror(errno));

	w.cmd = "umount";
	w.tty = isatty(STDERR_FILENO);
	w.timeout_s = timeout_s;
	w.mnt = mnt;
	w.dirty_bytes = -1;
	if (w.tty && fd >= 0 &&
	    pread(fd, &sb, sizeof(sb), SFS_SUPER_OFFSET) == sizeof(sb) &&
	    sfs_le32(sb.s_log_block_size) <= 6)
		w.dirty_bytes = sfs_umount_dirty(
		    mnt, 1024u << sfs_le32(sb.s_log_block_size));
	if (sfs_run_fusermount(mnt) < 0) {
		sfs_err("umount", "fusermount3 -u %s failed", mnt);
		rc = SFS_EXIT_FAIL;
		goto out;
	}
	if (fd < 0) {
		rc = SFS_EXIT_FAIL;
		goto out;
	}
	rc = sfs_umount_wait(source, fd, &w);
	if (rc < 0) {
		rc = SFS_EXIT_FAIL;
		goto out;
	}

	/* a daemon that died mid-way also releases the lock: check */
	if (pread(fd, &sb, sizeof(sb), SFS_SUPER_OFFSET) != sizeof(sb) ||
	    sfs_le16(sb.s_magic) != SFS_SUPER_MAGIC) {
		sfs_err("umount", "cannot read the superblock of %s after "
				  "unmounting; run e2fsck",
			source);
		rc = SFS_EXIT_FAIL;
		goto out;
	}
	/* clean: VALID without ERROR, and a journaled image's log empty */
	if (!sfs_sb_marked_clean(&sb)) {
		bool state_ok = (sfs_le16(sb.s_state) &
				 (SFS_STATE_VALID | SFS_STATE_ERROR)) ==
				SFS_STATE_VALID;

		sfs_err("umount",
			"%s %s after unmounting (write-back failed? see the "
			"system log); %s",
			source,
			state_ok ? "still needs journal recovery"
				 : "is not marked clean",
			state_ok ? "e2fsck -fy or the next mount replays the log"
				 : "run e2fsck");
		rc = SFS_EXIT_FAIL;
		goto out;
	}
	rc = 0;

out:
	if (fd >= 0)
		close(fd);
	g_free(mnt);
	g_free(source);
	g_free(type);
	return rc;
}

/* =============================================================== stats */

static void sfs_stats_usage(FILE *out)
{
	fputs("usage: simfs stats [--json] FILE|MOUNTPOINT\n"
	      "       simfs stats --diff A.json B.json\n"
	      "\n"
	      "Print a run's statistics as a table: from FILE, a JSON report "
	      "written at\n"
	      "unmount by -o stats=FILE, or live from a mounted MOUNTPOINT "
	      "(its .simfs/stats).\n"
	      "The fields are explained in doc/measurement.md.\n"
	      "With --diff, print what changed from run A to run B, by layer, "
	      "largest\n"
	      "relative change first (doc/compare.md).\n"
	      "\n"
	      "options:\n"
	      "  -d, --diff  compare two stats JSON files\n"
	      "  -j, --json  print the JSON document instead of the table\n"
	      "  -h, --help  this help\n",
	      out);
}

static void sfs_sync_usage(FILE *out)
{
	fprintf(out,
		"usage: simfs sync [--timeout SECONDS] MOUNTPOINT\n"
		"\n"
		"Write everything a simfs mount holds back to its image, as "
		"sync(2) does for\n"
		"a disk: delayed allocations placed, dirty blocks written, the "
		"journal\n"
		"committed, the modelled drive's write cache emptied.  Returns "
		"when that is\n"
		"done.  (sync(1) does not reach a FUSE daemon; this does, "
		"through\n"
		"MOUNTPOINT/.simfs/sync.)  The device time it takes is "
		"modelled as usual.\n"
		"It waits as long as the daemon makes progress (writes or uses "
		"CPU), and gives\n"
		"up only after %d s without any; on a terminal it shows the "
		"write-back's\n"
		"progress.\n"
		"\n"
		"options:\n"
		"      --timeout SECONDS  give up after SECONDS in any case "
		"(the sync goes on)\n"
		"  -h, --help             this help\n",
		SFS_UMOUNT_STALL_S);
}

/* The write to MNT/.simfs/sync, made off the main thread so that the
 * main thread can show progress and give up; freed by whoever is last.
 * POSIX mutex and condition (lock.h says why not GMutex: ThreadSanitizer
 * checks these); the condition waits on CLOCK_MONOTONIC. */
struct sfs_sync_call {
	char *path;	      /* MNT/.simfs/sync */
	pthread_mutex_t lock; /* protects done, orphaned, step, err */
	pthread_cond_t cond;  /* done changed */
	bool done;	  /* the write has returned */
	bool orphaned;	  /* the waiter gave up: the writer frees it */
	const char *step; /* what failed: "open", "write", "close", or NULL */
	int err;	  /* its errno */
};

static void sfs_sync_call_free(struct sfs_sync_call *c)
{
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	g_free(c->path);
	g_free(c);
}

static gpointer sfs_sync_writer(gpointer arg)
{
	struct sfs_sync_call *c = arg;
	const char *step = NULL;
	int fd, err = 0;
	bool orphaned;

	fd = open(c->path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		step = "open";
		err = errno;
	} else if (write(fd, "1\n", 2) != 2) {
		step = "write";
		err = errno ? errno : EIO;
		close(fd);
	} else if (close(fd) != 0) {
		step = "close";
		err = errno;
	}
	pthread_mutex_lock(&c->lock);
	c->step = step;
	c->err = err;
	c->done = true;
	orphaned = c->orphaned;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (orphaned)
		sfs_sync_call_free(c);
	return NULL;
}

/*
 * Wait for the sync call c: as long as the daemon (w->pid) makes progress
 * (its write(2) bytes or CPU time grow), at most w->timeout_s if set; on a
 * terminal a progress line every tick, as simfs umount shows.  true once
 * the call returned; false after giving up (said why; c is orphaned).
 */
static bool sfs_sync_wait(struct sfs_sync_call *c, struct sfs_umount_watch *w)
{
	gint64 start = g_get_monotonic_time(), now, last_progress = start;
	bool shown = false, done;

	if (w->pid)
		sfs_umount_sample(w->pid, &w->wchar, &w->cpu);
	w->wchar0 = w->wchar;
	pthread_mutex_lock(&c->lock);
	for (;;) {
		struct timespec until;

		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += (SFS_UMOUNT_TICK_US % 1000000) * 1000;
		until.tv_sec += SFS_UMOUNT_TICK_US / 1000000 +
				until.tv_nsec / 1000000000;
		until.tv_nsec %= 1000000000;
		while (!c->done &&
		       pthread_cond_timedwait(&c->cond, &c->lock, &until) == 0)
			;
		if (c->done)
			break;
		pthread_mutex_unlock(&c->lock);
		now = g_get_monotonic_time();
		uint64_t wc = w->wchar, cpu = w->cpu;
		if (w->pid && sfs_umount_sample(w->pid, &wc, &cpu) &&
		    (wc != w->wchar || cpu != w->cpu))
			last_progress = now;
		w->wchar = wc;
		w->cpu = cpu;
		if (w->tty) {
			sfs_umount_show(w, (double)(now - start) / 1e6);
			shown = true;
		}
		const char *why = NULL;
		if (w->timeout_s > 0 &&
		    (double)(now - start) / 1e6 > w->timeout_s)
			why = "timeout";
		else if (now - last_progress >
			 (gint64)SFS_UMOUNT_STALL_S * G_USEC_PER_SEC)
			why = "stall";
		pthread_mutex_lock(&c->lock);
		if (why && !c->done) {
			c->orphaned = true; /* the writer frees c */
			pthread_mutex_unlock(&c->lock);
			if (shown)
				fputc('\n', stderr);
			if (strcmp(why, "timeout") == 0)
				sfs_err("sync",
					"gave up after --timeout %g s: the "
					"simfs daemon (pid %d) is still "
					"writing back %s; the sync goes on",
					w->timeout_s, (int)w->pid, w->mnt);
			else
				sfs_err("sync",
					"the simfs daemon (pid %d) has made "
					"no progress for %d s syncing %s; see "
					"the system log",
					(int)w->pid, SFS_UMOUNT_STALL_S,
					w->mnt);
			return false;
		}
	}
	done = c->done;
	pthread_mutex_unlock(&c->lock);
	if (shown) {
		/* the last line: what was written in the end */
		if (w->pid)
			sfs_umount_sample(w->pid, &w->wchar, &w->cpu);
		sfs_umount_show(w,
				(double)(g_get_monotonic_time() - start) / 1e6);
		fputc('\n', stderr);
	}
	return done;
}

static int cmd_sync(int argc, char **argv)
{
	char *mnt, *source, *type;
	struct sfs_umount_watch w = {0};
	struct sfs_sync_call *c;
	struct sfs_dsuper sb;
	double timeout_s = 0;
	GThread *t;
	int fd = -1, rc;

	rc = sfs_mountpoint_args("sync", sfs_sync_usage, argc, argv,
				 &timeout_s, &mnt, &source, &type);
	if (rc) {
		rc = rc < 0 ? 0 : rc;
		goto out;
	}
	rc = SFS_EXIT_FAIL;
	w.cmd = "sync";
	w.tty = isatty(STDERR_FILENO);
	w.timeout_s = timeout_s;
	w.mnt = mnt;
	w.dirty_bytes = -1;
	/* the image finds the daemon, whose progress we watch */
	fd = open(source, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		w.pid = sfs_umount_find_daemon(fd);
		if (w.tty &&
		    pread(fd, &sb, sizeof(sb), SFS_SUPER_OFFSET) == sizeof(sb) &&
		    sfs_le32(sb.s_log_block_size) <= 6)
			w.dirty_bytes = sfs_umount_dirty(
			    mnt, 1024u << sfs_le32(sb.s_log_block_size));
	}
	c = g_new0(struct sfs_sync_call, 1);
	c->path = g_build_filename(mnt, ".simfs", "sync", NULL);
	{
		pthread_condattr_t ca;

		pthread_mutex_init(&c->lock, NULL);
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&c->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	t = g_thread_try_new("sync", sfs_sync_writer, c, NULL);
	if (!t) {
		sfs_err("sync", "cannot start a thread");
		sfs_sync_call_free(c);
		goto out;
	}
	if (!sfs_sync_wait(c, &w)) {
		g_thread_unref(t); /* c is the writer's now */
		goto out;
	}
	g_thread_join(t);
	if (!c->step)
		rc = 0;
	else if (strcmp(c->step, "write") == 0)
		sfs_err("sync", "%s: sync failed: %s", mnt,
			g_strerror(c->err));
	else
		sfs_err("sync", "%s: %s", c->path, g_strerror(c->err));
	sfs_sync_call_free(c);
out:
	if (fd >= 0)
		close(fd);
	g_free(source);
	g_free(type);
	g_free(mnt);
	return rc;
}

static int cmd_stats(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"json", no_argument, NULL, 'j'},
	    {"diff", no_argument, NULL, 'd'},
	    {NULL, 0, NULL, 0},
	};
	JsonParser *parser = NULL;
	GError *gerr = NULL;
	char *path = NULL, *text = NULL;
	bool json = false, diff = false;
	gsize len = 0;
	struct stat st;
	int c, rc;

	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":jdh", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'd':
			diff = true;
			break;
		case 'h':
			sfs_stats_usage(stdout);
			return 0;
		default:
			return sfs_opt_error("stats", argv, c);
		}
	}
	if (diff) {
		const char *why = NULL;
		char *err = NULL;

		if (json)
			why = "--json and --diff together";
		else if (argc - optind < 2)
			why = "two stats files needed";
		else if (argc - optind > 2)
			why = "too many arguments";
		if (why) {
			sfs_err("stats",
				"%s (usage: simfs stats --diff A.json B.json)",
				why);
			return SFS_EXIT_USAGE;
		}
		if (sfs_parse_only())
			return 0;
		if (sfs_stats_diff_files(argv[optind], argv[optind + 1], stdout,
					 &err) < 0) {
			sfs_err("stats", "%s", err);
			g_free(err);
			return SFS_EXIT_FAIL;
		}
		return 0;
	}
	if (argc - optind != 1) {
		sfs_err("stats",
			"%s (usage: simfs stats [--json] "
			"FILE|MOUNTPOINT)",
			argc - optind < 1 ? "FILE or MOUNTPOINT missing"
					  : "too many arguments");
		return SFS_EXIT_USAGE;
	}
	if (sfs_parse_only())
		return 0;
	if (stat(argv[optind], &st) < 0) {
		sfs_err("stats", "%s: %s", argv[optind], g_strerror(errno));
		return SFS_EXIT_FAIL;
	}
	if (S_ISDIR(st.st_mode)) {
		path = g_build_filename(argv[optind], ".simfs", "stats", NULL);
		if (access(path, R_OK) < 0) {
			sfs_err("stats",
				"%s is not a live simfs mount (no "
				".simfs/stats: %s)",
				argv[optind], g_strerror(errno));
			rc = SFS_EXIT_FAIL;
			goto out;
		}
	} else {
		path = g_strdup(argv[optind]);
	}
	if (!g_file_get_contents(path, &text, &len, &gerr)) {
		sfs_err("stats", "%s", gerr->message);
		rc = SFS_EXIT_FAIL;
		goto out;
	}
	parser = json_parser_new();
	if (!json_parser_load_from_data(parser, text, (gssize)len, &gerr)) {
		sfs_err("stats", "%s: not JSON: %s", path, gerr->message);
		rc = SFS_EXIT_FAIL;
		goto out;
	}
	if (json) {
		fputs(text, stdout);
		if (len && text[len - 1] != '\n')
			fputc('\n', stdout);
		rc = 0;
	} else if (sfs_stats_print_json_table(json_parser_get_root(parser),
					      stdout) < 0) {
		sfs_err("stats",
			"%s is not a simfs statistics document (no "
			"simfs_stats_version)",
			path);
		rc = SFS_EXIT_FAIL;
	} else {
		rc = 0;
	}
out:
	if (gerr)
		g_error_free(gerr);
	if (parser)
		g_object_unref(parser);
	g_free(text);
	g_free(path);
	return rc;
}

/* ========================================================= dispatching */

static int cmd_inspect(int argc, char **argv)
{
	return sfs_inspect_main(argc, argv);
}

static int cmd_plot(int argc, char **argv)
{
	return sfs_plot_main(argc, argv);
}

static int cmd_help(int argc, char **argv);

static const struct sfs_cmd sfs_cmds[] = {
    {"mkfs", cmd_mkfs, "write a fresh ext2 (or ext3: -j) filesystem on an image"},
    {"mount", cmd_mount, "mount an image through FUSE"},
    {"umount", cmd_umount, "unmount and wait for the write-back"},
    {"sync", cmd_sync, "write a mount's data and metadata back to its image"},
    {"inspect", cmd_inspect,
     "show an image's layout, an inode's map, "
     "free space"},
    {"plot", cmd_plot, "draw I/O-log timelines and block-layout maps"},
    {"crash", sfs_cmd_crash,
     "crash-test a workload: cut the power, recover, check the promise"},
    {"bench", sfs_cmd_bench,
     "run an experiment file: cells in parallel, tables, plots, a report"},
    {"run", sfs_cmd_run,
     "run a workload through the engine in virtual time (or on a path)"},
    {"trace", sfs_cmd_trace,
     "convert (from strace) and summarise operation traces"},
    {"lab", sfs_cmd_lab,
     "seeded predict-then-check exercises with answers from the engine"},
    {"stats", cmd_stats,
     "print a run's statistics (JSON file or live mount), or --diff two"},
    {"help", cmd_help, "show help for a command"},
};

static void sfs_usage(FILE *out)
{
	fputs("usage: simfs COMMAND [ARGS]\n"
	      "       simfs --help | --version | help COMMAND\n"
	      "\n"
	      "simfs is " SFS_TAGLINE ".\n"
	      "\n"
	      "commands:\n",
	      out);
	for (size_t i = 0; i < G_N_ELEMENTS(sfs_cmds); i++)
		fprintf(out, "  %-8s  %s\n", sfs_cmds[i].name,
			sfs_cmds[i].summary);
	fputs("\nRun 'simfs COMMAND --help' for a command's options.\n", out);
}

static const struct sfs_cmd *sfs_cmd_find(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(sfs_cmds); i++)
		if (strcmp(sfs_cmds[i].name, name) == 0)
			return &sfs_cmds[i];
	return NULL;
}

static int sfs_unknown_cmd(const char *name)
{
	GString *names = g_string_new(NULL);

	for (size_t i = 0; i < G_N_ELEMENTS(sfs_cmds); i++)
		g_string_append_printf(names, "%s%s", i ? ", " : "",
				       sfs_cmds[i].name);
	fprintf(stderr, "simfs: unknown command '%s' (commands: %s)\n", name,
		names->str);
	g_string_free(names, TRUE);
	return SFS_EXIT_USAGE;
}

static int cmd_help(int argc, char **argv)
{
	const struct sfs_cmd *cmd;
	char *sub[] = {NULL, "--help", NULL};

	if (argc < 2) {
		sfs_usage(stdout);
		return 0;
	}
	/* hidden: the manual pages and the completion (manpage.c) */
	if (strcmp(argv[1], "--man") == 0 ||
	    strcmp(argv[1], "--man-list") == 0 ||
	    strcmp(argv[1], "--bash-completion") == 0)
		return sfs_manpage_main(argc, argv, sfs_cmds,
					G_N_ELEMENTS(sfs_cmds), sfs_usage);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		sfs_usage(stdout);
		return 0;
	}
	if (argc > 2) {
		sfs_err("help", "too many arguments (usage: simfs help "
				"[COMMAND])");
		return SFS_EXIT_USAGE;
	}
	cmd = sfs_cmd_find(argv[1]);
	if (!cmd)
		return sfs_unknown_cmd(argv[1]);
	if (cmd->run == cmd_help) {
		sfs_usage(stdout);
		return 0;
	}
	sub[0] = (char *)cmd->name;
	return cmd->run(2, sub);
}

/*
 * `simfs IMAGE MOUNTPOINT [-o OPTS]` is `simfs mount ...`: the form
 * mount.fuse3 runs for `mount -t fuse.simfs` and fstab lines (it calls
 * "TYPE SOURCE MOUNTPOINT -o OPTIONS").  Taken only when the first word is
 * no command and names an existing file or contains a '/', so that a
 * mistyped command still gets "unknown command".
 */
static bool sfs_mount_alias(int argc, char **argv)
{
	struct stat st;

	if (argc < 3 || argv[1][0] == '-')
		return false;
	return strchr(argv[1], '/') || stat(argv[1], &st) == 0;
}

int main(int argc, char **argv)
{
	const struct sfs_cmd *cmd;

	if (argc < 2) {
		sfs_usage(stderr);
		return SFS_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		sfs_usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("simfs %s\n", SFS_VERSION);
		return 0;
	}
	if (argv[1][0] == '-') {
		fprintf(stderr,
			"simfs: unknown option '%s' (see simfs "
			"--help)\n",
			argv[1]);
		return SFS_EXIT_USAGE;
	}
	cmd = sfs_cmd_find(argv[1]);
	if (!cmd && sfs_mount_alias(argc, argv))
		return cmd_mount(argc, argv);
	if (!cmd)
		return sfs_unknown_cmd(argv[1]);
	return cmd->run(argc - 1, argv + 1);
}
