#pragma once
// The resolved description of one pod: its workers and how to reach them.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "tpurun/pod/worker.hpp"

namespace tpurun {

enum class HostKeyPolicy { strict, accept_new, off };

struct SshSettings {
  std::string user;                      // remote user; defaults to $USER
  std::string identity_file;             // tried first; empty: ssh-agent, then the default keys
  // Only identity_file, never ssh-agent's or the default keys (gcloud pods,
  // as gcloud's IdentitiesOnly=yes): each refused key counts against sshd's
  // MaxAuthTries, so six agent keys tried first would cut the connection.
  bool identities_only = false;
  std::vector<std::string> known_hosts;  // first one is where accept-new records keys
  HostKeyPolicy host_key_policy = HostKeyPolicy::accept_new;
  // Where gcloud keeps keys by HostKeyAlias (gcloud pods). A worker with an
  // alias is checked there only, never by address (a recreated TPU VM reuses
  // addresses, with new keys and a new alias), and accept-new records it there.
  std::string alias_known_hosts;
  int connect_timeout_s = 10;
};

// A pod whose workers come from `gcloud compute tpus tpu-vm describe`.
struct GcloudSpec {
  std::string name;
  std::string zone;
  std::string project;  // optional
  bool internal_ip = true;
};

// "create": how `tpurun up` makes the pod's TPU VM (docs/config.md, docs/cloud.md).
struct CreateSpec {
  std::string accelerator_type;  // "v4-32"
  std::string runtime_version;   // "tpu-ubuntu2204-base"
  bool queued = true;             // through a queued resource, else `tpu-vm create`
  std::vector<std::string> zones;  // tried in order; default: the pod's gcloud.zone
  // The tier: at most one of these (none: on demand).
  bool spot = false;
  bool reserved = false;
  bool guaranteed = false;  // queued only
  bool best_effort = false;  // queued only, `gcloud alpha` (v2alpha1)
  std::string reservation_host_project;  // a reservation shared from another project (with "reserved")
  std::string network;
  std::string subnetwork;
  std::string service_account;
  bool internal_ips = false;  // no external IPs
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> metadata;
  std::vector<std::pair<std::string, std::string>> data_disks;  // source, mode (read-write, read-only)
  // How long one zone may keep a queued resource waiting before `up` tries
  // the next one; 0: as long as it takes.
  std::chrono::seconds max_queued{0};
};

// One pod of a multi-slice pod (docs/multislice.md).
struct Slice {
  std::string pod;                   // the config pod that is this slice
  std::optional<GcloudSpec> gcloud;  // its TPU VM, for the READY check before a restart
  int first_worker = 0;              // global index of its worker 0
  int num_workers = 0;               // 0 until resolved (gcloud pods)
};

constexpr int kDefaultMegascalePort = 8080;
inline constexpr const char* kDefaultLocalRoot = "~/.tpurun";
// The pod of this host alone, when no config file is found.
inline constexpr const char* kLocalPodName = "local";

struct PodConfig {
  std::string name;
  std::vector<Worker> workers;  // empty until resolved for gcloud pods
  std::optional<GcloudSpec> gcloud;
  SshSettings ssh;
  std::string staging_root;  // shared (NFS) dir for code snapshots; this host's own without a shared mount
  std::string logs_root;     // shared (NFS) dir for run logs; this host's own without a shared mount
  // No shared mount (a pod without staging_root and logs_root): every worker
  // keeps code and logs on its own disk under worker_root ("~/.tpurun": the
  // remote user's home), and this host keeps its copies under the same root
  // here (staging_root, logs_root). docs/config.md, docs/runs.md.
  bool shared_mount = true;
  std::string worker_root;
  // Device files whose open handles mean "this process uses the TPU".
  std::vector<std::string> device_globs = {"/dev/accel*", "/dev/vfio/[0-9]*"};
  std::uint64_t stage_size_limit = 1ull << 30;  // bytes
  // A multi-slice pod ("slices" in the config, or --pod A,B): one job across
  // these pods; `workers` are theirs, slice by slice, each with its slice id.
  // Empty for an ordinary pod.
  std::vector<Slice> slices;
  int megascale_port = kDefaultMegascalePort;  // MEGASCALE_PORT for multi-slice runs
  // True when no config exists: the pod is this host alone, run without SSH.
  bool local = false;
  // A gcloud pod whose workers came from a recent describe kept on this host
  // (describe_cache.hpp) rather than from gcloud just now.
  bool workers_from_cache = false;
  // A gcloud pod with workers: describe's whole answer (READY), as gcloud
  // printed it; a run keeps it to create the TPU VM again (stage --recreate).
  std::string describe_json;
  // "setup": the script that makes a new TPU VM of this pod ready (packages,
  // the shared mount), as an absolute path on this host; "" when none.
  std::string setup_script;
  // "create": how `tpurun up` makes its TPU VM (gcloud pods only).
  std::optional<CreateSpec> create;
};

// A pod and the workers one command acts on (all of them, or --worker's).
struct Target {
  PodConfig pod;
  std::vector<Worker> workers;  // the selected ones, in worker order
};


}  // namespace tpurun
