#!/usr/bin/python3
"""A FUSE file system that loses, on command, what a power cut loses.

Mounts MOUNTPOINT as a view of BACKING. Every operation goes through to BACKING at once, and the file system keeps
what it needs to undo what was not made durable:
  - a file's data written or truncated since its last fsync (its size at that fsync and the bytes each write or
    truncate overwrote below it);
  - a directory's new entries since that directory's fsync (files, directories and symlinks created or linked in it,
    names renamed into it: a rename undone puts the file back under its old name, and the file it replaced back
    under the new one).
SIGUSR1 is the power cut: the file system unmounts, undoes all of that in BACKING (newest first), prints what it
dropped and exits 0; mount it again to "power on". SIGTERM or SIGINT unmounts without dropping anything (a clean
shutdown). Unlinks and rmdirs are durable at once (a name removed never comes back).

--metadata ordered makes every new entry durable at the next fsync of any file or directory of the mount, as a
journaling file system in ordered mode does (ext4 data=ordered), instead of at its own directory's fsync (strict,
the POSIX minimum and the default).

Written for the power-loss drill (bench/power-loss-drill.sh); lazyfs (github.com/dsrhaslab/lazyfs) does the same in
C++ but is not packaged for Debian, and pyfuse3 is (python3-pyfuse3).
"""
import argparse
import errno
import os
import shutil
import signal
import stat as stat_m
import sys

import pyfuse3
import trio
from pyfuse3 import FUSEError


class Undo:
    """What a file's data was at its last fsync: its size, and the bytes later writes overwrote below that size."""
    __slots__ = ("size", "pre")

    def __init__(self, size):
        self.size = size
        self.pre = []  # (offset, bytes), in the order they were overwritten


class Entry:
    """A name made since its directory's fsync, and how to take it back."""
    __slots__ = ("kind", "parent", "name", "ino", "old_parent", "old_name", "replaced", "durable")

    def __init__(self, kind, parent, name, ino, old_parent=None, old_name=None, replaced=None):
        self.kind = kind  # "new" (create, mkdir, mknod, symlink, link) or "rename"
        self.parent, self.name, self.ino = parent, name, ino
        self.old_parent, self.old_name, self.replaced = old_parent, old_name, replaced
        self.durable = False


class PowerLossFs(pyfuse3.Operations):
    enable_writeback_cache = False

    def __init__(self, backing, trash, ordered):
        super().__init__()
        self.trash = trash
        self.ordered = ordered
        self.names = {pyfuse3.ROOT_INODE: {(None, os.fsencode(backing))}}  # fuse inode -> {(parent inode, name)}
        self.fino_of = {os.lstat(backing).st_ino: pyfuse3.ROOT_INODE}  # backing inode -> fuse inode
        self.next_fino = pyfuse3.ROOT_INODE + 1
        self.fds = {}  # fh -> (fd, fuse inode)
        self.next_fh = 1
        self.undo = {}  # fuse inode -> Undo
        self.entries = []  # Entry, oldest first
        self.trashed = 0
        self.cut = False

    # --- names and inodes ---
    def path(self, fino):
        try:
            parent, name = next(iter(self.names[fino]))
        except (KeyError, StopIteration):
            raise FUSEError(errno.ENOENT)
        return name if parent is None else os.path.join(self.path(parent), name)

    def child(self, parent, name):
        return os.path.join(self.path(parent), name)

    def inode_for(self, st, parent, name, fresh=False):
        fino = None if fresh else self.fino_of.get(st.st_ino)
        if fino is None:
            fino = self.next_fino
            self.next_fino += 1
            self.fino_of[st.st_ino] = fino
            self.names[fino] = set()
            self.undo.pop(fino, None)
        self.names[fino].add((parent, name))
        return fino

    def attrs(self, st, fino):
        e = pyfuse3.EntryAttributes()
        for a in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_rdev", "st_size", "st_atime_ns", "st_mtime_ns",
                  "st_ctime_ns", "st_blksize", "st_blocks"):
            setattr(e, a, getattr(st, a))
        e.st_ino = fino
        e.generation = 0
        e.entry_timeout = 0
        e.attr_timeout = 0
        return e

    def entry(self, parent, name, fresh=False):
        path = self.child(parent, name)
        try:
            st = os.lstat(path)
        except OSError as exc:
            raise FUSEError(exc.errno)
        fino = self.inode_for(st, parent, name, fresh)
        return self.attrs(st, fino)

    def drop_name(self, parent, name, st):
        fino = self.fino_of.get(st.st_ino)
        if fino is None:
            return
        self.names.get(fino, set()).discard((parent, name))
        if st.st_nlink <= 1 or stat_m.S_ISDIR(st.st_mode):
            self.fino_of.pop(st.st_ino, None)
            self.undo.pop(fino, None)

    # --- durability ---
    def dirty(self, fino, fd):
        u = self.undo.get(fino)
        if u is None:
            u = self.undo[fino] = Undo(os.fstat(fd).st_size)
        return u

    def keep_before(self, u, fd, offset, length):
        end = min(offset + length, u.size)
        if offset < end:
            u.pre.append((offset, os.pread(fd, end - offset, offset)))

    def synced(self, fino=None, directory=None):
        if self.ordered:
            self.entries.clear()
            self.empty_trash()
        if fino is not None:
            self.undo.pop(fino, None)
        if directory is not None:
            for e in self.entries:
                if e.parent == directory:
                    e.durable = True
            self.entries = [e for e in self.entries if not e.durable]

    def empty_trash(self):
        for name in os.listdir(self.trash):
            if not any(e.replaced == name for e in self.entries):
                os.unlink(os.path.join(self.trash, name))

    # --- operations ---
    async def lookup(self, parent, name, ctx=None):
        return self.entry(parent, name)

    async def getattr(self, fino, ctx=None):
        try:
            st = os.lstat(self.path(fino))
        except OSError as exc:
            raise FUSEError(exc.errno)
        return self.attrs(st, fino)

    async def setattr(self, fino, attr, fields, fh, ctx):
        try:
            if fh is not None:
                fd = self.fds[fh][0]
            else:
                fd = os.open(self.path(fino), os.O_RDWR if fields.update_size else os.O_RDONLY | os.O_NOFOLLOW)
            try:
                if fields.update_size:
                    u = self.dirty(fino, fd)
                    self.keep_before(u, fd, attr.st_size, u.size - attr.st_size)
                    os.ftruncate(fd, attr.st_size)
                if fields.update_mode:
                    os.fchmod(fd, stat_m.S_IMODE(attr.st_mode))
                if fields.update_uid or fields.update_gid:
                    os.fchown(fd, attr.st_uid if fields.update_uid else -1, attr.st_gid if fields.update_gid else -1)
                if fields.update_atime or fields.update_mtime:
                    st = os.fstat(fd)
                    os.utime(fd, ns=(attr.st_atime_ns if fields.update_atime else st.st_atime_ns,
                                     attr.st_mtime_ns if fields.update_mtime else st.st_mtime_ns))
            finally:
                if fh is None:
                    os.close(fd)
        except OSError as exc:
            raise FUSEError(exc.errno)
        return await self.getattr(fino)

    async def readlink(self, fino, ctx):
        try:
            return os.readlink(self.path(fino))
        except OSError as exc:
            raise FUSEError(exc.errno)

    async def opendir(self, fino, ctx):
        return fino

    async def readdir(self, fino, start, token):
        path = self.path(fino)
        try:
            names = sorted(os.listdir(path))
        except OSError as exc:
            raise FUSEError(exc.errno)
        for i, name in enumerate(names[start:], start + 1):
            bname = os.fsencode(name)
            try:
                attr = self.entry(fino, bname)
            except FUSEError:
                continue
            if not pyfuse3.readdir_reply(token, bname, attr, i):
                break

    async def releasedir(self, fh):
        pass

    async def fsyncdir(self, fh, datasync):
        self.synced(directory=fh)

    async def mkdir(self, parent, name, mode, ctx):
        return self.made(parent, name, lambda p: os.mkdir(p, mode & ~ctx.umask))

    def made(self, parent, name, make):
        """Makes a name with make(path) and keeps it as new until its directory's fsync."""
        try:
            make(self.child(parent, name))
        except OSError as exc:
            raise FUSEError(exc.errno)
        attr = self.entry(parent, name, fresh=True)
        self.entries.append(Entry("new", parent, name, attr.st_ino))
        return attr

    async def mknod(self, parent, name, mode, rdev, ctx):
        return self.made(parent, name, lambda p: os.mknod(p, mode & ~ctx.umask, rdev))

    async def symlink(self, parent, name, target, ctx):
        return self.made(parent, name, lambda p: os.symlink(target, p))

    async def link(self, fino, parent, name, ctx):
        try:
            os.link(self.path(fino), self.child(parent, name), follow_symlinks=False)
        except OSError as exc:
            raise FUSEError(exc.errno)
        attr = self.entry(parent, name)
        self.entries.append(Entry("new", parent, name, fino))
        return attr

    async def unlink(self, parent, name, ctx):
        path = self.child(parent, name)
        try:
            st = os.lstat(path)
            os.unlink(path)
        except OSError as exc:
            raise FUSEError(exc.errno)
        self.drop_name(parent, name, st)

    async def rmdir(self, parent, name, ctx):
        path = self.child(parent, name)
        try:
            st = os.lstat(path)
            os.rmdir(path)
        except OSError as exc:
            raise FUSEError(exc.errno)
        self.drop_name(parent, name, st)

    async def rename(self, old_parent, old_name, new_parent, new_name, flags, ctx):
        if flags != 0:
            raise FUSEError(errno.EINVAL)
        old, new = self.child(old_parent, old_name), self.child(new_parent, new_name)
        try:
            st = os.lstat(old)
            replaced = None
            try:
                target = os.lstat(new)
            except FileNotFoundError:
                target = None
            if target is not None and not stat_m.S_ISDIR(target.st_mode):
                # the file the rename replaces comes back if the rename is undone
                self.trashed += 1
                replaced = str(self.trashed)
                os.link(new, os.path.join(self.trash, replaced), follow_symlinks=False)
            os.rename(old, new)
        except OSError as exc:
            raise FUSEError(exc.errno)
        if target is not None:
            self.drop_name(new_parent, new_name, target)
        fino = self.fino_of.get(st.st_ino)
        if fino is not None:
            self.names[fino].discard((old_parent, old_name))
            self.names[fino].add((new_parent, new_name))
        self.entries.append(Entry("rename", new_parent, new_name, fino, old_parent, old_name, replaced))

    @staticmethod
    def backing_flags(flags):
        # write-only opens read too (a write keeps the bytes it overwrites); the kernel gives every write its offset,
        # so O_APPEND (with which Linux's pwrite ignores the offset) and O_TRUNC (done with an undo) stay out
        if flags & os.O_ACCMODE == os.O_WRONLY:
            flags = (flags & ~os.O_ACCMODE) | os.O_RDWR
        return flags & ~(os.O_APPEND | os.O_TRUNC | os.O_CREAT | os.O_EXCL)

    async def open(self, fino, flags, ctx):
        try:
            fd = os.open(self.path(fino), self.backing_flags(flags))
            if flags & os.O_TRUNC:
                u = self.dirty(fino, fd)
                self.keep_before(u, fd, 0, u.size)
                os.ftruncate(fd, 0)
        except OSError as exc:
            raise FUSEError(exc.errno)
        return self.new_fh(fd, fino)

    def new_fh(self, fd, fino):
        fh = self.next_fh
        self.next_fh += 1
        self.fds[fh] = (fd, fino)
        return pyfuse3.FileInfo(fh=fh, keep_cache=False)

    async def create(self, parent, name, mode, flags, ctx):
        path = self.child(parent, name)
        if os.path.lexists(path):
            if flags & os.O_EXCL:
                raise FUSEError(errno.EEXIST)
            attr = self.entry(parent, name)
            return await self.open(attr.st_ino, flags, ctx), attr
        try:
            fd = os.open(path, self.backing_flags(flags) | os.O_CREAT | os.O_EXCL, mode & ~ctx.umask)
        except OSError as exc:
            raise FUSEError(exc.errno)
        attr = self.entry(parent, name, fresh=True)
        self.entries.append(Entry("new", parent, name, attr.st_ino))
        self.undo[attr.st_ino] = Undo(0)
        return self.new_fh(fd, attr.st_ino), attr

    async def read(self, fh, offset, length):
        try:
            return os.pread(self.fds[fh][0], length, offset)
        except OSError as exc:
            raise FUSEError(exc.errno)

    async def write(self, fh, offset, buf):
        fd, fino = self.fds[fh]
        try:
            u = self.dirty(fino, fd)
            self.keep_before(u, fd, offset, len(buf))
            return os.pwrite(fd, buf, offset)
        except OSError as exc:
            raise FUSEError(exc.errno)

    async def flush(self, fh):
        pass

    async def fsync(self, fh, datasync):
        self.synced(fino=self.fds[fh][1])

    async def release(self, fh):
        fd, _ = self.fds.pop(fh)
        os.close(fd)

    async def statfs(self, ctx):
        st = os.statvfs(self.path(pyfuse3.ROOT_INODE))
        out = pyfuse3.StatvfsData()
        for a in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree", "f_favail",
                  "f_namemax"):
            setattr(out, a, getattr(st, a))
        return out

    # --- the power cut ---
    def drop_unsynced(self):
        """Undoes in BACKING what was not made durable; returns what it dropped, for the drill's log."""
        files = dropped = 0
        for fino, u in self.undo.items():
            try:
                path = self.path(fino)
                fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
            except (FUSEError, OSError):
                continue  # removed since: its name is gone for good
            try:
                dropped += max(0, os.fstat(fd).st_size - u.size) + sum(len(b) for _, b in u.pre)
                os.ftruncate(fd, u.size)
                for offset, before in reversed(u.pre):
                    os.pwrite(fd, before, offset)
                files += 1
            finally:
                os.close(fd)
        undone = 0
        for e in reversed(self.entries):
            if e.durable:
                continue
            try:
                path = self.child(e.parent, e.name)
                if e.kind == "new":
                    st = os.lstat(path)
                    if stat_m.S_ISDIR(st.st_mode):
                        shutil.rmtree(path)
                    else:
                        os.unlink(path)
                else:
                    os.rename(path, self.child(e.old_parent, e.old_name))
                    if e.replaced is not None:
                        os.rename(os.path.join(self.trash, e.replaced), path)
                undone += 1
                print(f"power-loss-fs: undone: {e.kind} {os.fsdecode(path)}", flush=True)
            except (FUSEError, OSError):
                pass  # moved or removed since
        shutil.rmtree(self.trash, ignore_errors=True)
        return files, dropped, undone


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("backing", help="the directory the mount shows and writes through to")
    p.add_argument("mountpoint")
    p.add_argument("--metadata", choices=("strict", "ordered"), default="strict",
                   help="when a new name becomes durable: at its directory's fsync (strict, default) or at any fsync")
    a = p.parse_args()
    backing = os.path.abspath(a.backing)
    trash = backing.rstrip("/") + ".replaced"
    shutil.rmtree(trash, ignore_errors=True)
    os.mkdir(trash)
    fs = PowerLossFs(backing, trash, a.metadata == "ordered")
    options = set(pyfuse3.default_options)
    options.discard("default_permissions")
    options.add("fsname=power-loss-fs")
    pyfuse3.init(fs, a.mountpoint, options)

    async def run():
        async with trio.open_nursery() as nursery:
            async def signals():
                with trio.open_signal_receiver(signal.SIGUSR1, signal.SIGTERM, signal.SIGINT) as received:
                    async for signum in received:
                        fs.cut = signum == signal.SIGUSR1
                        pyfuse3.terminate()
                        return
            nursery.start_soon(signals)
            await pyfuse3.main()
            nursery.cancel_scope.cancel()

    try:
        trio.run(run)
    finally:
        pyfuse3.close(unmount=True)
    if fs.cut:
        files, dropped, undone = fs.drop_unsynced()
        print(f"power-loss-fs: cut {a.mountpoint}: {dropped} unsynced bytes dropped in {files} files, "
              f"{undone} unsynced names undone", flush=True)
    else:
        shutil.rmtree(trash, ignore_errors=True)
        print(f"power-loss-fs: {a.mountpoint} unmounted, nothing dropped", flush=True)


if __name__ == "__main__":
    sys.exit(main())
