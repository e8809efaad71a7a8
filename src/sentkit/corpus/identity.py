"""An input file's identity (size, mtime, ctime, inode, device): how a rerun or `mine` knows, without reading the
file again, that it is still the file its shards were encoded from, and when that cannot be trusted.

The identity is taken when a reader opens the file and compared when it has read it; a manifest records the
identity taken at the open, never one taken later. A file modified shortly before its identity was taken may
be modified again within the same mtime tick with the same size (git's "racily clean" entries): such an
identity is not trusted, and the file's texts are compared with the shards' digests instead.

The ctime is part of it because the mtime is the user's to set (`touch -d`, `os.utime`): a same-size edit
with its mtime set back keeps size, mtime and inode, but the kernel moves the ctime to the time of the edit
(and of the utime). Renames, chmod and new hard links move it too: such a file is compared by its texts,
then its new identity is recorded. An identity recorded before ctime was (a manifest of an older sentkit)
is never equal: its texts are compared with the shards' digests, as for an untrusted one (docs/encoding.md,
"Resume and refusals").
"""

from __future__ import annotations

import os
import time
from pathlib import Path

# what must be equal for two stats to be the same file in the same state (`sed -i` replaces the inode)
IDENTITY_KEYS = ("size", "mtime_ns", "ctime_ns", "inode", "device")
# mtime granularity of the coarsest common file systems (FAT: 2 s; ext3, HFS+: 1 s)
RACY_NS = 2_000_000_000


def file_identity(path: str | Path) -> dict:
    """The identity of `path` now, with the time it was taken (`stat_ns`)."""
    stat = os.stat(path)
    return {
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "ctime_ns": stat.st_ctime_ns,
        "inode": stat.st_ino,
        "device": stat.st_dev,
        "stat_ns": time.time_ns(),
    }


def same_identity(a: dict | None, b: dict | None) -> bool:
    """Both identities known and equal (an identity recorded before ctime, inode and device were: not
    equal)."""
    return (
        a is not None
        and b is not None
        and all(a.get(k) is not None and a.get(k) == b.get(k) for k in IDENTITY_KEYS)
    )


def trusted_identity(identity: dict) -> bool:
    """The file's mtime lies at least RACY_NS before the identity was taken, so an edit changes the mtime."""
    taken = identity.get("stat_ns")
    return isinstance(taken, int) and identity.get("mtime_ns", taken) < taken - RACY_NS


def describe_change(before: dict, after: dict) -> str:
    """What differs between two identities of one path, in words."""
    if (before["inode"], before["device"]) != (after["inode"], after["device"]):
        return "replaced by another file"
    if before["size"] != after["size"]:
        return f"size {before['size']} -> {after['size']} bytes"
    if before.get("mtime_ns") != after.get("mtime_ns"):
        return "modified (its mtime changed)"
    return "modified or its metadata changed (its ctime changed; size and mtime did not)"
