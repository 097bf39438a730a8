#!/usr/bin/env python3
# tests/integration/t_tmpfile.py DIR - O_TMPFILE in DIR, one "key value"
# line per step, for t_tmpfile.sh to compare between simfs and a kernel
# ext4 mount: nlink before and after linkat, the errnos the VFS gives.
import os, sys, errno, ctypes
libc = ctypes.CDLL(None, use_errno=True)
def flink(fd, dst):
    # linkat(fd, "", AT_FDCWD, dst, AT_EMPTY_PATH): /proc/self/fd may be
    # unusable for linkat in a container (EXDEV on ext4 too)
    if libc.linkat(fd, b"", -100, dst.encode(), 0x1000) != 0:
        n = ctypes.get_errno(); raise OSError(n, os.strerror(n))
d = sys.argv[1]
def e(f):
    try:
        f(); return "ok"
    except OSError as x: return errno.errorcode[x.errno]
fd = os.open(d, os.O_TMPFILE | os.O_RDWR, 0o640)
os.write(fd, b"tmpdata")
st = os.fstat(fd)
print("nlink", st.st_nlink)
print("mode", oct(st.st_mode))
flink(fd, d + "/named")
print("after link nlink", os.fstat(fd).st_nlink)
os.close(fd)
fd2 = os.open(d, os.O_TMPFILE | os.O_RDWR); os.write(fd2, b"x"*100000); os.close(fd2)
print("rdonly", e(lambda: os.open(d, os.O_TMPFILE | os.O_RDONLY)))
print("onfile", e(lambda: os.open(d + "/named", os.O_TMPFILE | os.O_RDWR)))
fd3 = os.open(d, os.O_TMPFILE | os.O_RDWR | os.O_EXCL)
print("excl_link", e(lambda: flink(fd3, d + "/x")))
os.close(fd3)
fd4 = os.open(d, os.O_TMPFILE | os.O_WRONLY)
print("proc_link", e(lambda: os.link("/proc/self/fd/%d" % fd4, d + "/p",
                                     follow_symlinks=True)))
os.close(fd4)
