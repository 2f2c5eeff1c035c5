"""Temporary files and scratch directories of the distributed sort, and their removal.

Every temporary entry emsort.ray makes is held by an exclusive ``flock`` of the process
that made it, for as long as that process needs it. The kernel drops the lock when the
process dies, however it dies (SIGKILL included), so a lock that can be taken is proof
that the owner is gone; an entry whose lock cannot be taken, or whose lock cannot be
tested at all (a file system without ``flock``, another user's entry), is never removed.

Names (``N`` is a part number of 5 or more digits):

==========================================  ===============================================
``OUTDIR/._SUCCESS.tmp``                    the driver's, held for the whole job: a second
                                            sort into the same directory is refused; the
                                            manifest is written into it and renamed to
                                            ``_SUCCESS``
``OUTDIR/.part-N.tmp``                      a merge attempt's, held until it ends: its
                                            output when it merges in memory (renamed to
                                            ``part-N``), else an empty lock file
``OUTDIR/.part-N.emsort-PID-SEQ.tmp``       ``emsort.merge_files``' output beside
                                            ``part-N`` (the Rust ``AtomicFile``); stale
                                            when neither it nor ``.part-N.tmp`` is locked
``OUTDIR/..part-N.tmp.emsort-PID-SEQ.tmp``  the same, from versions that merged into
                                            ``.part-N.tmp``
``SCRATCH/emsort-ray-part-N-JOB-XXXXXXXX/``  an external merge's blocks and runs, the
                                            directory locked by the merge attempt
``OUTDIR/.emsort-shuffle-JOB-XXXXXXXX/``    a sort of tables' map outputs (Arrow IPC
                                            files), the directory locked by the driver
==========================================  ===============================================

A creator locks right after creating and then checks that the path still names the
inode it locked: a cleaner may have taken the lock of the fresh, still unlocked entry in
between and removed it; the creator then starts again (a fresh file, or for a scratch
directory a fresh name). A cleaner, once it holds the lock, checks the same thing before
removing, so it never removes an entry that replaced the one it locked.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import stat
import tempfile
import time
from typing import Iterable, List, Optional, Tuple

MANIFEST_TMP = "._SUCCESS.tmp"
SCRATCH_PREFIX = "emsort-ray-part-"
SHUFFLE_PREFIX = ".emsort-shuffle-"

_PART_TMP_RE = re.compile(r"\.part-(\d{5,})\.tmp\Z")
# `.NAME.emsort-PID-SEQ.tmp`, NAME being `part-N` (merges into the part) or `.part-N.tmp`
_RUST_TMP_RE = re.compile(r"\.(?:part-(\d{5,})|\.part-(\d{5,})\.tmp)\.emsort-\d+-\d+\.tmp\Z")
_SCRATCH_RE = re.compile(re.escape(SCRATCH_PREFIX) + r"\d{5,}-")
_SHUFFLE_RE = re.compile(re.escape(SHUFFLE_PREFIX) + r"[0-9a-f]+-[^/]+\Z")

_BUSY = errno.EWOULDBLOCK
_POLL_S = 0.05


class LockedError(OSError):
    """An entry is locked by a running process (another sort, or an attempt not yet dead)."""


def part_tmp_name(index: int) -> str:
    """The file a merge attempt of part ``index`` holds locked (and writes, in memory)."""
    return f".part-{index:05d}.tmp"


def is_temporary(name: str) -> bool:
    """Whether ``name`` is one of the temporary names emsort.ray uses in an output directory."""
    return name == MANIFEST_TMP or bool(_PART_TMP_RE.match(name) or _RUST_TMP_RE.match(name)
                                        or _SHUFFLE_RE.match(name))


def still_names(path: str, fd: int) -> bool:
    """Whether ``path`` (not followed if a symlink) still names the inode open as ``fd``."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    fs = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (fs.st_dev, fs.st_ino)


def _try_flock(fd: int) -> Optional[bool]:
    """True: locked; False: another process holds it; None: cannot tell (no flock here)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as e:
        return False if e.errno == _BUSY else None


def create_locked(path: str, *, wait: float) -> int:
    """Opens ``path`` (created if missing, never through a symlink) and takes its lock,
    waiting up to ``wait`` seconds for a previous holder; returns the descriptor, which
    holds the lock until closed.

    Raises:
        LockedError: another process held the lock for all of ``wait``.
    """
    deadline = time.monotonic() + wait
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            while True:
                got = _try_flock(fd)
                if got is not False:
                    break  # locked, or a file system without flock: nobody can test it either
                if time.monotonic() >= deadline:
                    raise LockedError(errno.EWOULDBLOCK, "locked by a running process", path)
                time.sleep(_POLL_S)
            if still_names(path, fd):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # a cleaner removed it between our open and our lock: again


def make_scratch_dir(parent: str, prefix: str) -> Tuple[str, int]:
    """A fresh directory ``parent/prefixXXXXXXXX`` and a descriptor holding its lock."""
    for _ in range(100):
        path = tempfile.mkdtemp(prefix=prefix, dir=parent)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            continue  # a cleaner took it before we could open it
        try:
            try:
                # Blocking: only a cleaner can hold the lock of a directory this fresh,
                # and only while it removes it.
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError as e:
                if e.errno not in (errno.EBADF, errno.EINVAL, errno.ENOLCK, errno.EOPNOTSUPP):
                    raise
                # no flock on this file system: unlocked, so no cleaner will remove it
            if still_names(path, fd):
                return path, fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # a cleaner removed it between mkdtemp and our lock: again
    raise OSError(errno.EAGAIN, "could not create a scratch directory that stays", parent)


def _lock_entry(path: str, directory: bool) -> Tuple[Optional[int], bool]:
    """Tries the lock of an existing entry: ``(fd, False)`` when taken (and ``path`` still
    names the locked inode), ``(None, True)`` when its owner is alive, ``(None, False)``
    when gone meanwhile or not testable."""
    flags = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    flags |= (os.O_RDONLY | os.O_DIRECTORY) if directory else os.O_RDWR  # O_RDWR: NFS's flock wants it
    try:
        fd = os.open(path, flags)
    except OSError:
        return None, False
    got = _try_flock(fd)
    if got and still_names(path, fd):
        return fd, False
    os.close(fd)
    return None, got is False


def _sweep_output_once(out_dir: str, keep: Iterable[str]) -> List[str]:
    """Removes the stale temporary files of ``out_dir``; returns those whose owner lives."""
    busy = []
    try:
        names = sorted(os.listdir(out_dir))
    except FileNotFoundError:
        return busy
    keep = set(keep)
    rust, ours, shuffles = [], [], []
    uid = os.geteuid()
    for name in names:
        if name in keep:
            continue
        m = _RUST_TMP_RE.match(name)
        if m:
            rust.append((name, part_tmp_name(int(m.group(1) or m.group(2)))))
        elif name == MANIFEST_TMP or _PART_TMP_RE.match(name):
            ours.append(name)
        elif _SHUFFLE_RE.match(name):
            try:
                st = os.stat(os.path.join(out_dir, name), follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(st.st_mode) and st.st_uid == uid:  # else not one we made
                shuffles.append(name)
    # emsort.merge_files' files first, each under its merge attempt's lock: before the
    # Rust side locks its own files, the attempt's lock is what says it is alive.
    for name, owner in rust:
        owner_fd = None
        if owner not in keep:
            owner_fd, owner_busy = _lock_entry(os.path.join(out_dir, owner), directory=False)
            if owner_busy:
                busy.append(name)
                continue
        try:
            busy.extend(_remove_if_stale(out_dir, name, directory=False))
        finally:
            if owner_fd is not None:
                os.close(owner_fd)
    for name in ours:
        busy.extend(_remove_if_stale(out_dir, name, directory=False))
    for name in shuffles:
        busy.extend(_remove_if_stale(out_dir, name, directory=True))
    return busy


def _remove_if_stale(parent: str, name: str, directory: bool) -> List[str]:
    """Removes ``parent/name`` if its lock can be taken; returns ``[name]`` if its owner lives."""
    path = os.path.join(parent, name)
    fd, busy = _lock_entry(path, directory)
    if busy:
        return [name]
    if fd is None:
        return []
    try:
        if directory:
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    finally:
        os.close(fd)
    return []


def sweep_output(out_dir: str, *, keep: Iterable[str] = (), wait: float = 0.0) -> List[str]:
    """Removes the temporary files in ``out_dir`` whose owners are gone (those of ``keep``
    aside), waiting up to ``wait`` seconds for the owners still alive to go. Returns the
    names still held by a living owner (empty when all are gone)."""
    keep = tuple(keep)
    deadline = time.monotonic() + wait
    while True:
        busy = _sweep_output_once(out_dir, keep)
        if not busy or time.monotonic() >= deadline:
            return busy
        time.sleep(_POLL_S)


def sweep_scratch(parent: str, *, job: Optional[str] = None, wait: float = 0.0) -> List[str]:
    """Removes the scratch directories in ``parent`` whose owners are gone. With ``job``,
    waits up to ``wait`` seconds for that job's own directories still locked (its tasks
    being cancelled) and returns those still locked; other jobs' locked directories are
    theirs and are left without waiting."""
    mine = f"-{job}-" if job else None
    deadline = time.monotonic() + wait
    uid = os.geteuid()
    while True:
        busy = []
        try:
            names = sorted(os.listdir(parent))
        except OSError:
            return busy
        for name in names:
            if not _SCRATCH_RE.match(name):
                continue
            try:
                st = os.stat(os.path.join(parent, name), follow_symlinks=False)
            except FileNotFoundError:
                continue
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid:
                continue  # not one we made
            for b in _remove_if_stale(parent, name, directory=True):
                if mine and mine in b:
                    busy.append(b)
        if not busy or time.monotonic() >= deadline:
            return busy
        time.sleep(_POLL_S)
