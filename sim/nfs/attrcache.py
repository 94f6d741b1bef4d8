"""The NFS client's attribute cache timeout, per inode.

Linux NFS keeps, per inode, `attrtimeo` and `attrtimeo_timestamp`
(fs/nfs/inode.c, nfs_update_inode; the rule is spelt out in the old
include/linux/nfs_fs_i.h): cached attributes are trusted for `attrtimeo`
seconds. When a revalidation finds the attributes changed, attrtimeo drops
back to acregmin (acdirmin for directories); when it finds them unchanged
after the window has run out, attrtimeo doubles, up to acregmax (acdirmax).
Defaults (nfs(5)): acregmin=3 acregmax=60 acdirmin=30 acdirmax=60.
"""
from dataclasses import dataclass


@dataclass
class Timeouts:
    acregmin: float = 3.0
    acregmax: float = 60.0
    acdirmin: float = 30.0
    acdirmax: float = 60.0

    def bounds(self, is_dir):
        return (self.acdirmin, self.acdirmax) if is_dir else (self.acregmin, self.acregmax)


class AttrTimeo:
    """attrtimeo/attrtimeo_timestamp of one inode on one client."""

    __slots__ = ("timeo", "stamp", "seen")

    def __init__(self, lo, now, seen):
        self.timeo = lo
        self.stamp = now
        self.seen = seen  # the server's attributes this client last took in

    def refresh(self, seen, lo, hi, now):
        """Takes in attributes fresh from the server; returns (changed, timeout)."""
        changed = seen != self.seen
        if changed:
            self.timeo = lo
            self.stamp = now
        elif now >= self.stamp + self.timeo:
            self.timeo = min(self.timeo * 2, hi) if self.timeo > 0 else 0
            self.stamp = now
        self.seen = seen
        return changed, self.timeo
