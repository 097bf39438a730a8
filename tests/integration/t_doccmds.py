#!/usr/bin/env python3
"""tests/integration/t_doccmds.py - the documentation says what the program does.

1. Every `simfs ...` command line shown in README.md and doc/*.md parses as
   shown.  The command lines come from fenced code blocks (in a block with
   `$ ` prompts, only the prompted lines; `simfs CMD ...` inside a comment
   or a `...` span of a block too); a line like `simfs CMD: ...` is a
   message the program printed and is left alone.  Blocks fenced as
   ```text (output, pictures, file formats, templates) are not read.
   Inline code spans of the prose that give a subcommand and an argument
   are mentions, often partial: only their subcommand and options are
   checked (against --help), they are not run.  Each command runs with
   SIMFS_PARSE_ONLY=1, which makes simfs check the subcommand, its options
   and their values (the -o knobs against their tables, workload
   parameters, experiment files) and exit 0 without touching anything
   (config.h, sfs_parse_only).  Placeholders (IMAGE, SIZE, N, ...) become
   values; a synopsis (`[-b BLOCKSIZE] ... IMAGE [SIZE]`) is run bare and
   once with each optional part, each alternative of an `a|b` choice.
   Every option a command line uses must also be in `simfs CMD --help`.
2. `bench/...` and `tests/...` scripts named in those lines exist, are
   executable and take the options shown (their getopts string, or
   the letters they hand bench/lib.sh's parse_opts).
3. `simfs mount --help`'s -o knobs and the option table of
   doc/user-guide.md section 3 name the same knobs; so do `simfs mkfs
   --help` and the section 2 table.
4. Nothing in the repository cites a file outside it (the shared design
   notes the project was planned from are not part of it).

   tests/integration/t_doccmds.py BUILD/simfs
"""
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if len(sys.argv) != 2:
    sys.exit("usage: t_doccmds.py SIMFS")
SIMFS = os.path.abspath(sys.argv[1])

n = 0
failed = 0


def ok(what):
    global n
    n += 1
    print(f"ok {n} - {what}")


def fail(what, detail=""):
    global n, failed
    n += 1
    failed += 1
    print(f"not ok {n} - {what}")
    for line in detail.rstrip().splitlines():
        print(f"#   {line}")


def run(args, cwd, parse_only=True):
    env = dict(os.environ)
    if parse_only:
        env["SIMFS_PARSE_ONLY"] = "1"
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


SUBCOMMANDS = re.findall(r"^  (\w+)  ", run([SIMFS, "--help"], "/").stdout,
                         re.M)
PREFIXES = ("simfs", "build/simfs", "BUILD/simfs", "./simfs", "$B/simfs")

# ------------------------------------------------------------ extraction

FENCE = re.compile(r"^\s*```(\S*)")


def doc_files():
    return [ROOT / "README.md"] + sorted((ROOT / "doc").glob("*.md"))


def comment_of(line):
    """The text after a shell comment's '#', or None (quotes respected)."""
    q = None
    for i, ch in enumerate(line):
        if q:
            if ch == q:
                q = None
        elif ch in "'\"":
            q = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[i + 1:]
    return None


def simfs_in_text(text):
    """`simfs CMD ...` commands mentioned inside free text (a comment)."""
    out = []
    spans = re.findall(r"`([^`]+)`", text)
    for s in spans:
        if is_simfs_cmd(s.split()):
            out.append(s)
    text = re.sub(r"`[^`]*`", " ", text)
    m = re.search(r"(?:^|\s)((?:build/)?simfs (\S+).*)$", text)
    if m and m.group(2) in SUBCOMMANDS:
        out.append(m.group(1))
    return out


def is_simfs_cmd(words):
    return len(words) >= 2 and words[0] in PREFIXES and words[1] in SUBCOMMANDS


def join_synopsis(block):
    """A synopsis's indented lines belong to the `simfs ...` line above."""
    out = []
    for no, line in block:
        first = line.split()[0] if line.split() else ""
        if out and out[-1][1].endswith("\\"):
            out[-1] = (out[-1][0], out[-1][1][:-1] + " " + line.strip())
        elif out and line[:1].isspace() and first not in PREFIXES and \
                not first.startswith(("#", "$")) and \
                out[-1][1].split()[:1] and out[-1][1].split()[0] in PREFIXES \
                and "[" in out[-1][1]:
            out[-1] = (out[-1][0], out[-1][1] + " " + line.strip())
        else:
            out.append((no, line))
    return out


def extract():
    """(where, text, how) of every command line the docs show: how is
    "run" (a command line) or "names" (a mention in prose: the subcommand
    and its options must exist, the arguments may be left out)."""
    found = []
    for path in doc_files():
        rel = path.relative_to(ROOT)
        lines = path.read_text().splitlines()
        i = 0
        in_block = False
        while i < len(lines):
            m = FENCE.match(lines[i])
            if not m:
                if not in_block:
                    for span in re.findall(r"``?([^`]+)``?", lines[i]):
                        w = span.split()
                        if is_simfs_cmd(w) and len(w) >= 3:
                            found.append((f"{rel}:{i + 1}", span, "names"))
                i += 1
                continue
            lang = m.group(1)
            i += 1
            block = []
            while i < len(lines) and not FENCE.match(lines[i]):
                block.append((i + 1, lines[i]))
                i += 1
            i += 1
            if lang == "text":
                continue
            prompted = any(l.lstrip().startswith("$ ") for _, l in block)
            block = join_synopsis(block)
            k = 0
            while k < len(block):
                no, line = block[k]
                while line.endswith("\\") and k + 1 < len(block):
                    k += 1
                    line = line[:-1] + " " + block[k][1].strip()
                k += 1
                s = line.strip()
                if prompted:
                    if not s.startswith("$ "):
                        continue
                    s = s[2:]
                com = comment_of(s)
                if com is not None:
                    for c in simfs_in_text(com):
                        c = c.split(" (")[0]
                        found.append((f"{rel}:{no}", c, "run" if
                                      len(c.split()) >= 3 else "names"))
                    s = s[: len(s) - len(com) - 1]
                if s.strip():
                    found.append((f"{rel}:{no}", s.strip(), "run"))
    return found


# -------------------------------------------------------- shell splitting


def split_segments(text):
    """Split at &&, ||, ;, | and redirections outside quotes and [...]."""
    segs, cur, depth, q, i = [], "", 0, None, 0
    while i < len(text):
        ch = text[i]
        if q:
            cur += ch
            if ch == q:
                q = None
        elif ch in "'\"":
            q = ch
            cur += ch
        elif ch == "[":
            depth += 1
            cur += ch
        elif ch == "]":
            depth = max(depth - 1, 0)
            cur += ch
        elif depth == 0 and text.startswith(("&&", "||"), i):
            segs.append(cur)
            cur = ""
            i += 1
        elif depth == 0 and ch in ";|":
            segs.append(cur)
            cur = ""
        elif depth == 0 and (ch in "<>" or text.startswith("2>", i)):
            # a redirection: drop it and its target word
            j = i + 1
            while j < len(text) and text[j] in ">&12":
                j += 1
            while j < len(text) and text[j] == " ":
                j += 1
            while j < len(text) and not text[j].isspace() and text[j] not in ";|&":
                j += 1
            i = j
            continue
        else:
            cur += ch
        i += 1
    segs.append(cur)
    return [s.strip() for s in segs if s.strip()]


def top_groups(text):
    """[(start, end)] of the top-level [...] groups of text."""
    groups, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
            if depth == 0:
                groups.append((start, i + 1))
    return groups


def strip_groups(text):
    out = text
    while True:
        g = top_groups(out)
        if not g:
            return out
        s, e = g[0]
        out = out[:s] + out[e:]


def alternatives(content):
    """The choices a group's content offers: 'a | b', 'x|y' words."""
    if " | " in content:
        return [a for c in content.split(" | ") for a in alternatives(c.strip())]
    words = content.split()
    if words and not words[0].startswith("-") and "|" in content:
        return [c.strip() for c in content.split("|")]
    for k, w in enumerate(words):
        if "|" in w:
            return [" ".join(words[:k] + [a] + words[k + 1:])
                    for a in w.split("|")]
    return [content]


def variants(text):
    """A synopsis run bare, then with each optional part in turn."""
    groups = top_groups(text)
    if not groups:
        return [text]
    out = [strip_groups(text)]
    for s, e in groups:
        content = text[s + 1:e - 1]
        if "..." in content:
            continue
        for alt in alternatives(strip_groups(content)):
            v = text[:s] + alt + text[e:]
            out.append(strip_groups(v))
    return out


# placeholders -> values (a word of capitals; some depend on the option)
BY_OPTION = {
    "--workload": "mix", "--preset": "ext4", "--trace": "traces/small-copy.trace",
    "--mode": "volatile", "--points": "all", "-w": "dd", "--kind": "all",
    "--inode": "12", "--file": "/f", "-o": "mem=64M",
    "--jobs": "2", "--journal-size": "16M", "--promise": "ordered",
    "--subset": "0", "--point": "3", "--long-ops": "4", "--level": "1",
}
BY_KEY = {
    "preset": "ext4", "alloc": "blockmap", "data": "ordered",
    "device": "hdd-2009", "cpu": "core2-2009", "clock": "account",
}
PLACEHOLDER = {
    "SIZE": "64M", "N": "1", "K": "4", "S": "1", "BLOCKSIZE": "4096",
    "BYTES_PER_INODE": "16384", "INODE_SIZE": "256", "PCT": "5",
    "SECONDS": "10", "WORKLOAD": "dd", "OPTS": "mem=64M", "CELLS": "64",
    "MODE": "ordered", "P": "ext4", "NAME": "ext4", "CLIENTS": "4",
    "BUILDDIR": "build", "WORKDIR": "/tmp", "SIZE_MIB": "64",
    "REPS": "3", "JOBS": "2", "MB_PER_JOB": "16", "SRC_TREE": "/usr/share",
    "INO": "12", "SPEC": "ideal",
}


def substitute(words, sub):
    out = []
    prev = ""
    for w in words:
        if re.fullmatch(r"[A-Z][A-Z0-9_]*", w) and prev in BY_OPTION:
            w = BY_OPTION[prev]
        elif sub == "bench" and w in ("FILE", "EXPERIMENT.ini", "$f"):
            w = "bench/experiments/demo.ini"
        elif sub == "lab" and w == "NAME":
            w = "alloc"

        def key_value(m):
            key, val = m.group(1), m.group(2)
            return f"{key}={BY_KEY.get(key, PLACEHOLDER.get(val, val))}"

        w = re.sub(r"(\w+)=([A-Z][A-Z0-9_]*)\b", key_value, w)
        w = re.sub(r"(?<=:)([A-Z][A-Z0-9_]*)$",
                   lambda m: PLACEHOLDER.get(m.group(1), m.group(1)), w)
        if w in PLACEHOLDER:
            w = PLACEHOLDER[w]
        out.append(w)
        prev = w if w.startswith("-") else ""
    return out


HELP = {}


def help_of(sub):
    if sub not in HELP:
        HELP[sub] = run([SIMFS, sub, "--help"], "/", False).stdout
    return HELP[sub]


def options_of(words):
    """The option names a command line uses (before any '--')."""
    names = []
    for w in words:
        if w == "--":
            break
        m = re.match(r"(--?[A-Za-z][\w-]*)", w)
        if m and not re.match(r"-\d", w):
            names.append(m.group(1))
    return names


def check_simfs(where, text, cwd, how="run"):
    for v in variants(text):
        try:
            words = shlex.split(v)
        except ValueError as e:
            fail(f"{where}: {v}", f"does not parse as a shell line: {e}")
            continue
        while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
            words = words[1:]
        if not words or words[0] not in PREFIXES:
            continue
        if len(words) >= 2 and words[1].endswith(":") and \
                words[1][:-1] in SUBCOMMANDS:
            continue  # a message the program printed, not a command
        if len(words) < 2 or words[1] not in SUBCOMMANDS:
            # the alias `simfs IMAGE MOUNTPOINT -o OPTS` is a mount
            if len(words) >= 3 and words[1].isupper():
                words = [words[0], "mount"] + words[1:]
            else:
                fail(f"{where}: {v}", f"no such subcommand "
                     f"(commands: {', '.join(SUBCOMMANDS)})")
                continue
        sub = words[1]
        args = substitute(words[2:], sub)
        help_text = help_of(sub)
        if sub != "help":
            missing = [o for o in options_of(words[2:])
                       if not re.search(r"(^|[\s,\[|])" + re.escape(o) +
                                        r"([\s,=\]|]|$)", help_text, re.M)]
            if missing:
                fail(f"{where}: {v}", f"simfs {sub} --help does not "
                     f"list {', '.join(missing)}")
                continue
        if how == "names":
            ok(f"{where}: {v} (names)")
            continue
        r = run([SIMFS, sub] + args, cwd)
        if r.returncode == 0:
            ok(f"{where}: {v}")
        else:
            fail(f"{where}: {v}", f"simfs {sub} {' '.join(args)} -> exit "
                 f"{r.returncode}\n{r.stderr}")


def check_script(where, words):
    path = ROOT / words[0]
    if not path.is_file() or not os.access(path, os.X_OK):
        fail(f"{where}: {' '.join(words)}", f"{words[0]} is not an "
             "executable file of the repository")
        return
    text = path.read_text()
    m = re.search(r"getopts\s+[\"']?([\w:]+)", text)
    letters = set(m.group(1).replace(":", "")) if m else set()
    # bench/lib.sh's parse_opts: `parse_opts L=VAR [L=VAR=VALUE]... --`
    # (each L an option letter; -h always)
    m = re.search(r"^\s*parse_opts\s+(.*?)\s+--", text, re.M)
    if m:
        letters |= {spec[0] for spec in m.group(1).split()} | {"h"}
    bad = [w for w in words[1:] if re.match(r"-[A-Za-z]", w)
           and w[1] not in letters]
    if bad:
        fail(f"{where}: {' '.join(words)}", f"{words[0]} takes no "
             f"{', '.join(bad)} (getopts: {''.join(sorted(letters))})")
    else:
        ok(f"{where}: {' '.join(words)}")


def check_commands(cwd):
    for where, line, how in extract():
        segs = split_segments(line)
        last_simfs = None
        for seg in segs:
            words = seg.split()
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                words = words[1:]
            if not words:
                continue
            if words[0].startswith(("bench/", "tests/")) and \
                    not words[0].endswith((".ini", ".md")):
                check_script(where, strip_groups(" ".join(words)).split())
            elif words[0] in PREFIXES:
                last_simfs = " ".join(words[:2])
                check_simfs(where, " ".join(words), cwd, how)
            elif words[0].startswith("-") and last_simfs:
                # `simfs run --trace FILE | --loadfile F`: the alternatives
                check_simfs(where, f"{last_simfs} {' '.join(words)}", cwd,
                            how)


# ----------------------------------------------- --help against the guide


def guide_table(section_title):
    """First-column code words of the first table under a '## ' heading."""
    text = (ROOT / "doc" / "user-guide.md").read_text()
    m = re.search(r"^## " + re.escape(section_title) + r".*?$(.*?)^## ",
                  text, re.M | re.S)
    names = []
    if not m:
        return None
    for line in m.group(1).splitlines():
        if not line.startswith("| `"):
            continue
        first = line.split("|")[1]
        names += re.findall(r"`([^`]+)`", first)
    return names


def check_mount_table():
    helptext = help_of("mount")
    knobs = set()
    for m in re.finditer(r"^  (\[no\])?([a-z_0-9]+)(=|\s)", helptext, re.M):
        knobs.add(m.group(2))
    table = guide_table("3. Mounting")
    if not table:
        fail("doc/user-guide.md section 3 has an option table")
        return
    listed = set()
    for cell in table:
        name = re.match(r"[a-z_0-9]+", cell)
        if name:
            listed.add(name.group(0))
    missing = sorted(k for k in knobs if k not in listed)
    if missing:
        fail("every knob of simfs mount --help is in the user guide's "
             "table", "not in doc/user-guide.md section 3: " +
             ", ".join(missing))
    else:
        ok(f"every knob of simfs mount --help ({len(knobs)}) is in the "
           "user guide's table")
    extra = sorted(c for c in listed if c not in knobs and
                   not (c.startswith("no") and c[2:] in knobs) and not re.search(
        r"\b" + re.escape(c) + r"\b", helptext))
    if extra:
        fail("every option of the user guide's mount table is in simfs "
             "mount --help", "not in --help: " + ", ".join(extra))
    else:
        ok("every option of the user guide's mount table is in simfs "
           "mount --help")


def check_mkfs_table():
    helptext = help_of("mkfs")
    opts = set(re.findall(r"^\s+(?:-\w, )?(--?[\w-]+)", helptext, re.M))
    opts.discard("-h")
    opts.discard("--help")
    table = guide_table("2. Making a filesystem")
    if not table:
        fail("doc/user-guide.md section 2 has an option table")
        return
    listed = {re.match(r"--?[\w-]+", c).group(0) for c in table
              if c.startswith("-")}
    missing = sorted(opts - listed)
    extra = sorted(listed - opts)
    if missing or extra:
        fail("simfs mkfs --help and the user guide's mkfs table agree",
             f"not in the guide: {', '.join(missing) or '-'}; "
             f"not in --help: {', '.join(extra) or '-'}")
    else:
        ok(f"simfs mkfs --help and the user guide's mkfs table agree "
           f"({len(opts)} options)")


# --------------------------------------------------- self-contained docs


def check_self_contained():
    # split so that this file does not match itself
    pats = ["../" + "shared", "DESIGN" + ".md", "STYLE" + ".md",
            "ext-" + "internals", "ext-" + "format.md", "seed-" + "results",
            "/work/" + "shared"]
    hits = []
    me = Path(__file__).resolve()
    for top in ["README.md", "meson.build", "meson_options.txt", "doc",
                "bench", "simfs", "models", "tests", "traces"]:
        p = ROOT / top
        files = [p] if p.is_file() else sorted(x for x in p.rglob("*")
                                               if x.is_file())
        for f in files:
            if f.resolve() == me:
                continue
            try:
                text = f.read_text()
            except (UnicodeDecodeError, OSError):
                continue
            for no, line in enumerate(text.splitlines(), 1):
                for pat in pats:
                    if pat in line:
                        hits.append(f"{f.relative_to(ROOT)}:{no}: {line.strip()}")
    if hits:
        fail("no file of the repository cites a file outside it",
             "\n".join(hits))
    else:
        ok("no file of the repository cites a file outside it")


def fixtures(cwd):
    """Files the documented commands read: a dbench loadfile, a tar."""
    for name in ("bench", "traces"):
        os.symlink(ROOT / name, cwd / name)
    loadfile = ('NTCreateX "\\\\clients\\\\client1\\\\a" 0x1 0x2 16385 '
                'NT_STATUS_OK\n')
    for name in ("my.txt", "CLIENT.TXT", "client.txt"):
        (cwd / name).write_text(loadfile)
    for name in ("dbench.ini", "EXPERIMENT.ini"):
        shutil.copy(ROOT / "bench" / "experiments" / "demo.ini", cwd / name)
    src = cwd / "tree"
    (src / "d").mkdir(parents=True)
    (src / "d" / "f.c").write_text("int x;\n")
    with tarfile.open(cwd / "linux-2.6.26.tar", "w") as t:
        t.add(src, arcname="linux-2.6.26")
    shutil.rmtree(src)


def main():
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))
    tmp = Path(tempfile.mkdtemp(prefix="simfs-doccmds."))
    try:
        fixtures(tmp)
        if not SUBCOMMANDS:
            fail("simfs --help lists the subcommands")
        check_commands(tmp)
        check_mount_table()
        check_mkfs_table()
        check_self_contained()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
