"""An NFSv3-like shared mount for the pod simulator.

Each simulated host mounts its own FUSE client (sim.nfs.mount) over one
backing directory, the "NFS server's export". Every client has its own kernel
dentry, attribute and page caches, and the daemon behind each mount reproduces
what the Linux NFSv3 client and knfsd do: adaptive attribute caching, negative
lookups trusted until the directory is revalidated, close-to-open consistency,
delayed writeback, AUTH_SYS numeric owners with root squash, no xattrs, no
renameat2 flags, no O_TMPFILE. See docs/simulator-nfs.md.
"""
