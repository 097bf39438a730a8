#!/usr/bin/env python3
# tests/integration/t_whiteout.py DIR - renameat2(RENAME_WHITEOUT) cases in
# DIR, one result a line (t_ext4compat.sh compares them with kernel ext4).
import ctypes, os, sys, errno
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
def rn(a, b, flags):
    r = libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), flags)
    return 0 if r == 0 else ctypes.get_errno()
d = sys.argv[1]
open(d + "/a", "w").write("x")
os.mkdir(d + "/dd")
out = []
out.append("rename=%s" % errno.errorcode.get(rn(d + "/a", d + "/b", 4), "0"))
st = os.lstat(d + "/a")
out.append("src=%s dev=%d:%d mode=%o nlink=%d" % ("chr" if os.path.stat.S_ISCHR(st.st_mode) else "other", os.major(st.st_rdev), os.minor(st.st_rdev), st.st_mode & 0o7777, st.st_nlink))
out.append("dst=" + open(d + "/b").read())
out.append("dir=%s" % errno.errorcode.get(rn(d + "/dd", d + "/de", 4), "0"))
out.append("dirsrc_chr=%s" % os.path.stat.S_ISCHR(os.lstat(d + "/dd").st_mode))
open(d + "/c", "w").write("y")
out.append("noreplace_over_existing=%s" % errno.errorcode.get(rn(d + "/c", d + "/b", 4 | 1), "0"))
out.append("exchange=%s" % errno.errorcode.get(rn(d + "/c", d + "/b", 4 | 2), "0"))
out.append("over_whiteout=%s" % errno.errorcode.get(rn(d + "/c", d + "/a", 4), "0"))
st = os.lstat(d + "/c")
out.append("c_chr=%s a_is=%s" % (os.path.stat.S_ISCHR(st.st_mode), open(d + "/a").read() if not os.path.stat.S_ISCHR(os.lstat(d+"/a").st_mode) else "chr"))
print("\n".join(out))
