"""fakepod: a simulated Cloud TPU (API, guest agents, TPU VM hosts) on one machine.

Usage: see USAGE below and docs/simulator.md.
"""
import sys

USAGE = """usage: fakepod up N            start (or restore) the default pod: node sim-tpu with N workers
       fakepod down            stop every worker, the API server and the forwarder (state is kept)
       fakepod status          one line per worker, then one per node
       fakepod env [--user U]  sourceable variables (FAKEPOD_*, CLOUDSDK_CONFIG for U or the caller)
       fakepod exec I [--user U] -- CMD...   run CMD inside worker I
       fakepod scrub [--users U,...]   on every worker: SIGKILL the TPU holders' process groups (and
                               every process of the users), remove the lockfile, /tmp/tpu_logs and
                               the fake trainers' logs (what a test leaves behind)
  worker faults (I = worker slot, its address is the I-th):
       fakepod stop-worker I | start-worker I | blackhole I | partition I | heal I | rekey I
       fakepod clock-skew I SECONDS
  the cloud (NAME is a TPU VM; --zone Z, --project P default to the default node's):
       fakepod preempt NAME [--terminated] [--notice S]
                                        the VM is preempted: its workers die (after S s of notice)
       fakepod delete NAME | stop NAME          as gcloud's tpu-vm delete / stop
       fakepod start NAME [--new-ips]           as tpu-vm start; --new-ips: the VM comes back on new addresses
       fakepod create NAME [--accelerator T] [--version V] [--spot | --preemptible] [--internal-ips] [--new-ips]
                           [--metadata KEY=VALUE]... [--labels K=V,...] [--network N] [--subnetwork S]
                           [--queued-resource QR]   (as if queued resource QR had made it)
       fakepod node-add NAME --zone Z --slots A-B [--state S] [--id ID] [--accelerator T]
                               a listing-only node over running workers (for board tests)
  capacity (how many TPU VMs of a type a zone can give; unset: no limit on demand or spot, no reservation):
       fakepod capacity set ZONE TYPE N [--spot | --reserved]   TYPE e.g. v4-8, or * for every type
       fakepod capacity stockout ZONE   nothing on demand or spot: creates fail with code 8, QRs wait
       fakepod capacity restock ZONE | clear | show
  queued resources (gcloud compute tpus queued-resources ...; `fakepod status` lists them):
       fakepod qr fail-next [--zone Z] [--code N] [--message M] [--at waiting|provisioning]
                               the next QR created goes FAILED with that error (default: code 8,
                               no more capacity) instead of getting capacity, or its provision fails
       fakepod qr hold STATE SECONDS [--name QR] [--zone Z]
                               QRs (QR, or every one created from now on) stay SECONDS in STATE:
                               CREATING ACCEPTED WAITING_FOR_RESOURCES PROVISIONING SUSPENDING DELETING;
                               0 ends the hold
       fakepod qr list
       (fakepod preempt NODE on a QR's node: the node goes PREEMPTED, its QR SUSPENDING -> SUSPENDED)
       fakepod fault zone-down Z [--code N --status S --message M] [--reads] [--after qr-create] [--for S]
                         | zone-up Z
       fakepod fault latency SECONDS | delay VERB SECONDS | new-ips on|off
                               VERB: create delete stop start update qr-create qr-delete qr-suspend
       fakepod fault agent-order random|metadata | clear   (clear: also capacity and qr fail-next/hold)
       fakepod metadata set KEY VALUE [--node NAME] | unset KEY [--node NAME]
       fakepod oslogin on|off  enable-oslogin in project metadata
       fakepod user add NAME [--sudo] [--no-key]   a dev VM user whose key goes to project metadata
       fakepod gcloud-config USER                  (re)write USER's private gcloud config
environment: FAKEPOD_STATE, FAKEPOD_NFS, FAKEPOD_NET, FAKEPOD_DEVICE=accel|vfio (up), FAKEPOD_NETNS=0|1 (up)
"""


def die(msg, code=1):
    sys.stderr.write("fakepod: %s\n" % msg)
    sys.exit(code)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "help"):
        sys.stderr.write(USAGE)
        sys.exit(2 if not argv else 0)
    cmd, args = argv[0], argv[1:]
    if cmd == "exec":
        from . import wexec
        wexec.main(args)
        return
    from . import commands
    fn = commands.COMMANDS.get(cmd)
    if fn is None:
        sys.stderr.write(USAGE)
        sys.exit(2)
    try:
        fn(args)
    except KeyboardInterrupt:
        sys.exit(130)
