#!/usr/bin/env python3
"""gen-seeds.py - write the seed corpora of the fuzz targets
(tests/fuzz/corpus/<target>/gen-*): hand-made inputs that reach the
interesting code of each target. Inputs found by fuzzing (other names)
sit next to them and are kept.

Usage: tests/fuzz/gen-seeds.py [CORPUS_DIR]   (default: next to this file)

Protobuf messages are encoded here by hand (proto/mcache.proto field
numbers), so no protobuf package is needed.
"""
import os
import struct
import sys

# Op codes, as in proto/mcache.proto.
LOOKUP, STAT, LSTAT, FSTAT, MKDIR, RMDIR, OPEN, CLOSE, UNLINK, RENAME, LINK, \
    SYMLINK, READLINK, CHMOD, CHOWN, UTIMENS, TRUNCATE, FTRUNCATE, READDIR, \
    FSYNC, SYNC, RMTREE, CREATE, STATS = range(1, 25)
O_RDONLY, O_WRONLY, O_RDWR = 0, 1, 2
O_CREAT, O_EXCL, O_TRUNC, O_APPEND = 0o100, 0o200, 0o1000, 0o2000
O_DIRECTORY, O_NOFOLLOW = 0o200000, 0o400000
UTIME_NOW, UTIME_OMIT = (1 << 30) - 1, (1 << 30) - 2


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def fv(num, v):          # varint field
    return varint(num << 3) + varint(v)


def fb(num, data):       # length-delimited field
    if isinstance(data, str):
        data = data.encode()
    return varint(num << 3 | 2) + varint(len(data)) + data


# Op field numbers: code 1, path 2, path2 3, mode 4, flags 5, uid 6, gid 7,
# atime_sec 8, atime_nsec 9, mtime_sec 10, mtime_nsec 11, size 12,
# handle 13, cookie 14, count 15.
OPF = dict(path=2, path2=3, mode=4, flags=5, uid=6, gid=7, atime_sec=8,
           atime_nsec=9, mtime_sec=10, mtime_nsec=11, size=12, handle=13,
           cookie=14, count=15)


def op(code, path=None, path2=None, **kw):
    b = fv(1, code)
    if path is not None:
        b += fb(2, path)
    if path2 is not None:
        b += fb(3, path2)
    for k, v in kw.items():
        b += fv(OPF[k], v)
    return b


def request(rid, ops, hello=False):
    b = fv(1, rid) if rid else b""
    if hello:
        b += fb(2, fv(1, 1))
    for o in ops:
        b += fb(3, o)
    return b


def frame(payload):
    return struct.pack("<I", len(payload)) + payload


def attr(ino, mode, nlink=1, size=0):
    return fv(1, ino) + fv(2, mode) + fv(3, nlink) + fv(6, size) + fv(9, 1700000000)


def result(err=0, attr_=None, data=None, entries=(), cookie=0, eof=False, handle=0):
    b = fv(1, err) if err else b""
    if attr_ is not None:
        b += fb(2, attr_)
    if data is not None:
        b += fb(3, data)
    for ino, typ, name in entries:
        b += fb(4, fv(1, ino) + fv(2, typ) + fb(3, name))
    if cookie:
        b += fv(5, cookie)
    if eof:
        b += fv(6, 1)
    if handle:
        b += fv(7, handle)
    return b


def response(rid, results=(), hello=None, err=0, message=None):
    b = fv(1, rid)
    if hello is not None:
        b += fb(2, hello)
    for r in results:
        b += fb(3, r)
    if err:
        b += fv(4, err)
    if message is not None:
        b += fb(5, message)
    return b


def frame_seeds():
    req, rsp = b"\x00", b"\x01"
    hello = request(1, [], hello=True)
    mk = request(2, [op(MKDIR, "/a", mode=0o755), op(CREATE, "/a/f", mode=0o644),
                     op(STAT, "/a/f"), op(RENAME, "/a/f", "/a/g")])
    yield "req-hello", req + frame(hello)
    yield "req-hello-ops", req + frame(hello) + frame(mk)
    yield "req-all-fields", req + frame(request(3, [op(UTIMENS, "/x", atime_sec=-1, atime_nsec=UTIME_NOW,
                                                   mtime_sec=1 << 40, mtime_nsec=UTIME_OMIT, uid=5, gid=6,
                                                   size=1 << 33, handle=7, cookie=9, count=10, flags=O_CREAT)]))
    yield "req-zero-len", req + frame(hello) + b"\x00\x00\x00\x00" + frame(mk)
    yield "req-too-long", req + struct.pack("<I", 70000) + mk
    yield "req-truncated", req + frame(mk)[:-3]
    yield "req-header-only", req + b"\x10\x00"
    yield "req-nul-path", req + frame(request(4, [op(STAT, "/a\x00b"), op(MKDIR, "a" * 300)]))
    yield "req-bad-wire", req + frame(b"\x1a\xff\xff\xff\xff\x0f")
    yield "req-many-frames", req + frame(hello) + b"".join(frame(request(i, [op(SYNC)])) for i in range(5, 20))
    hr = fv(1, 1) + fv(2, 1) + fv(3, 8 << 20) + fv(4, 4096) + fv(5, 3)
    yield "rsp-hello", rsp + frame(response(1, hello=hr))
    yield "rsp-results", rsp + frame(response(2, [result(attr_=attr(2, 0o40755, 2)),
                                                  result(err=17),
                                                  result(data=b"target"),
                                                  result(entries=[(2, 4, "a"), (3, 8, "b" * 40)], cookie=7, eof=True),
                                                  result(handle=1, attr_=attr(3, 0o100644))]))
    yield "rsp-error", rsp + frame(response(0, err=71, message="bad frame"))
    yield "rsp-two", rsp + frame(response(1, hello=hr)) + frame(response(2, [result()]))


def ops_seeds():
    tree = [op(MKDIR, "/a", mode=0o755), op(MKDIR, "/a/b", mode=0o700),
            op(CREATE, "/a/b/f", mode=0o644), op(SYMLINK, "/a/l", "b/f"),
            op(LINK, "/a/b/f", "/a/h"), op(OPEN, "/a/o", flags=O_CREAT | O_RDWR, mode=0o600)]
    yield "tree", request(0, tree)
    yield "tree-mutate", request(0, tree + [
        op(RENAME, "/a/b/f", "/a/g"), op(CHMOD, "/a/g", mode=0o600),
        op(CHOWN, "/a/g", uid=1000, gid=1000), op(UTIMENS, "/a/g", atime_sec=1, atime_nsec=UTIME_NOW,
                                                  mtime_sec=5, mtime_nsec=UTIME_OMIT),
        op(TRUNCATE, "/a/g", size=4096), op(FTRUNCATE, handle=1, size=10), op(FSTAT, handle=1),
        op(READLINK, "/a/l"), op(STAT, "/a/l"), op(LSTAT, "/a/l"), op(LOOKUP, "/a/b/../g"),
        op(UNLINK, "/a/h"), op(RMDIR, "/a/b"), op(CLOSE, handle=1), op(RMTREE, "/a"),
        op(STAT, "/a")])
    yield "readdir", request(0, [op(MKDIR, "/d", mode=0o755)] +
                             [op(CREATE, "/d/f%02d" % i, mode=0o644) for i in range(20)] +
                             [op(OPEN, "/d", flags=O_RDONLY | O_DIRECTORY),
                              op(READDIR, handle=1, count=5), op(READDIR, handle=1, cookie=5, count=100),
                              op(UNLINK, "/d/f03"), op(READDIR, handle=1, cookie=2, count=3),
                              op(FSYNC, handle=1), op(CLOSE, handle=1), op(RMTREE, "/d")])
    yield "user-perms", request(1, [op(MKDIR, "/u", mode=0o755), op(CREATE, "/f", mode=0o644),
                                    op(CHMOD, "/", mode=0o777), op(CHOWN, "/", uid=1000, gid=0xffffffff)])
    yield "root-then-user", request(0, [op(CHMOD, "/", mode=0o1777), op(MKDIR, "/s", mode=0o1777),
                                        op(CHOWN, "/s", uid=1000, gid=1000)])
    yield "group-user", request(2, [op(MKDIR, "/g", mode=0o775), op(UNLINK, "/g"), op(RMDIR, "/g")])
    yield "bad-paths", request(0, [op(STAT, ""), op(STAT, "rel"), op(MKDIR, "/a\x00b", mode=0o755),
                                   op(MKDIR, "/" + "n" * 256, mode=0o755), op(STAT, "/" + "x/" * 2100),
                                   op(RENAME, "/", "/x"), op(RMDIR, "/"), op(RMDIR, "/."),
                                   op(RMDIR, "/.."), op(UNLINK, "/"), op(MKDIR, "/x/", mode=0o755),
                                   op(RENAME, "/x", "/x/y"), op(RMTREE, "/"), op(99)])
    yield "symlink-loops", request(0, [op(SYMLINK, "/l1", "/l2"), op(SYMLINK, "/l2", "/l1"),
                                       op(STAT, "/l1"), op(OPEN, "/l1", flags=O_CREAT | O_WRONLY, mode=0o644),
                                       op(SYMLINK, "/d", "nowhere/x"),
                                       op(OPEN, "/d", flags=O_CREAT | O_WRONLY, mode=0o644),
                                       op(SYMLINK, "/long", "t" * 4095), op(READLINK, "/long")])
    yield "open-flags", request(0, [op(OPEN, "/o", flags=O_CREAT | O_EXCL | O_WRONLY, mode=0o644),
                                    op(OPEN, "/o", flags=O_CREAT | O_EXCL | O_WRONLY, mode=0o644),
                                    op(OPEN, "/o", flags=O_TRUNC | O_RDWR), op(OPEN, "/o/", flags=O_RDONLY),
                                    op(OPEN, "/", flags=O_WRONLY), op(OPEN, "/o", flags=O_DIRECTORY),
                                    op(UNLINK, "/o"), op(FSTAT, handle=1), op(FTRUNCATE, handle=2, size=1),
                                    op(READDIR, handle=1), op(CLOSE, handle=9)])
    yield "rename-cases", request(0, [op(MKDIR, "/p", mode=0o755), op(MKDIR, "/p/q", mode=0o755),
                                      op(CREATE, "/p/f", mode=0o644), op(LINK, "/p/f", "/p/g"),
                                      op(RENAME, "/p/f", "/p/g"), op(RENAME, "/p/q", "/p/f"),
                                      op(RENAME, "/p", "/p/q/r"), op(RENAME, "/p/q", "/r"),
                                      op(RENAME, "/r", "/p/q"), op(LINK, "/p", "/pp")])
    yield "stats-sync", request(0, [op(STATS), op(SYNC), op(CREATE, "/s", mode=0o644), op(SYNC)])


def path_seeds():
    paths = ["/", "/a", "/a/b", "/a/b/c", "/a//b///c", "/a/./b/../b/c", "/a/lnk", "/a/lnk/",
             "/a/dirlnk/c", "/a/up/a/b", "/loop", "/loop/x", "/a/dangling", "/a/x/y", "/a/x",
             "/f/", "/f/x", "/..", "/a/b/.", "/a/b/..", "rel", "", "//", "/a/missing",
             "/a/b/name-of-forty-bytes-0123456789abcdefg", "/" + "n" * 256, "/a\x00b",
             "/" + "d/" * 300, "/long", "/d/f07"]
    for i, p in enumerate(paths):
        for sel in (0, 1 | 4, 2, 3 | 4):
            mode = (0o40750, 0o100604, 0o0, 0o777)[sel & 3]
            yield "p%02d-%d" % (i, sel), bytes([sel, mode & 0xFF, mode >> 8, 7 - (sel & 7)]) + p.encode()


def shmview_seeds():
    paths = ["/", "/a/b/c", "/a/lnk", "/d", "/d/f33", "/long", "/a/dirlnk/", "/loop/x",
             "/a/missing", "/a/x/y", "/a/up/d", "/a/b/name-of-forty-bytes-0123456789abcdefg"]
    for i, p in enumerate(paths):
        for sel in (0, 2 | 8, 0x50 | 4):
            yield "real-%02d-%d" % (i, sel), bytes([sel, 0]) + p.encode()
    # Patches: (page, offset in page, byte). Page 0 holds the header, the
    # page table and the buckets; the next pages the slots.
    patches = {
        "hdr-magic": [(0, 0, 0x00)],
        "hdr-mask": [(0, 28, 0xff)],
        "hdr-bucket-off": [(0, 25, 0x01)],
        "hdr-closed": [(0, 56, 1)],
        "pagetypes": [(0, 256 + 1, 3), (0, 256 + 2, 2)],
        "slots": [(1, 0, 1), (1, 4, 0x10), (1, 52, 0xff), (2, 8, 0x44), (2, 17, 0)],
        "chains": [(1, 4 + 48 * k, 0x03) for k in range(8)],
        "siblings": [(1, 16 + 48 * k, 0x05) for k in range(8)],
        "dirx": [(3, 8, 0x01), (3, 4, 0x01), (3, 16, 0xff)],
        "names": [(1, 30 + 48 * k, 0xff) for k in range(8)],
    }
    for name, ps in patches.items():
        for path in ("/d", "/a/lnk", "/a/b/c"):
            b = bytes([0, len(ps)]) + b"".join(bytes([pg, off & 0xFF, off >> 8, v]) for pg, off, v in ps)
            yield "patch-%s-%s" % (name, path.strip("/").replace("/", "_") or "root"), b + path.encode()
    # Offsets pointing out of the segment: one byte of an offset field set
    # in the first 60 slots of a page, for each slot size (dentry 48,
    # inode 64, dirx 32) and field; 0x7f in the top byte points gigabytes
    # away, 0x01 in the third byte just past the end of the 1 MiB segment.
    fields = [(48, 4, "hnext"), (48, 8, "parent"), (48, 12, "inode"), (48, 16, "sibnext"),
              (48, 32, "nameblob"), (64, 4, "ihnext"), (64, 36, "dirx"), (32, 8, "head"),
              (32, 12, "tail")]
    for page in range(1, 6):
        for size, field, fname in fields:
            for byte, val in ((3, 0x7f), (2, 0x01)):
                ps = [(page, k * size + field + byte, val) for k in range(60)]
                path = ("/d", "/a/lnk", "/long", "/a/b/name-of-forty-bytes-0123456789abcdefg")[(page + field) % 4]
                b = bytes([(page & 1) << 3, len(ps)]) + b"".join(
                    bytes([pg, off & 0xFF, off >> 8, v]) for pg, off, v in ps)
                yield "wild-p%d-%s-%d" % (page, fname, byte), b + path.encode()
    hdr = struct.pack("<IIQIIIIII", 0x4d43534d, 1, 4 << 16, 4, 256, 512, 63, 1024, 63)
    for i in range(8):
        yield "rand-fixed-%d" % i, bytes([1 | (i & 6), 0x80 | i]) + hdr
        yield "rand-raw-%d" % i, bytes([1, i]) + hdr + bytes(range(i * 16, i * 16 + 64))


TARGETS = {"frame": frame_seeds, "ops": ops_seeds, "path": path_seeds, "shmview": shmview_seeds}


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    for target, gen in TARGETS.items():
        d = os.path.join(top, target)
        os.makedirs(d, exist_ok=True)
        for name, data in gen():
            with open(os.path.join(d, "gen-" + name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
