#pragma once
// tpurun doctor: what stands between this host and a working run on every
// worker, each problem with its fix. Facts are gathered (worker/doctor_probe.sh
// and a TPU scan per worker, a few local looks), then judged by a pure
// function, so the rules are unit-tested on plain values.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tpurun/tpu/scan.hpp"
#include "tpurun/transport/outcome.hpp"
#include "tpurun/transport/transport.hpp"

namespace tpurun {

// What the facts script is told.
struct DoctorProbe {
  std::string probe_path;   // a file this host wrote on the shared mount ("" when it could not)
  std::string probe_token;  // its content
  std::vector<std::string> roots;         // staging_root and logs_root, as configured
  std::vector<std::string> device_globs;  // the pod's TPU device files
  // No shared mount: the workers' own root (local_root, "~/..." allowed),
  // checked for room and writability there instead of the shared roots.
  std::string local_root;
};

struct RootFacts {
  std::string path;
  bool present = false;
  std::string fs_type;  // stat -f's name: nfs, fuseblk, ext2/ext3, tmpfs, ...
};

struct WorkerFacts {
  Worker worker;
  std::optional<TransportError> error;  // could not connect or run: nothing else is known
  int uid = -1;
  int gid = -1;
  std::string user;
  bool sudo = false;
  std::vector<std::string> devices;
  std::vector<RootFacts> roots;
  enum class Probe { not_tried, seen, different, unreadable, missing } probe = Probe::not_tried;
  std::optional<double> clock_offset_s;  // worker's clock minus this host's
  double clock_uncertainty_s = 0;        // half the round trip
  long long tmp_free_kib = -1;
  int local_root_writable = -1;          // no shared mount: 1/0, -1 when not checked
  long long local_root_free_kib = -1;
  long long local_staging_kib = -1;      // no shared mount: what tpurun keeps there (du), -1 when not checked
  long long local_logs_kib = -1;
  // python3, jax, jaxlib, libtpu, in that order ("-": not installed); empty when python3 could not say.
  std::vector<std::pair<std::string, std::string>> versions;
  std::optional<WorkerScanResult> tpu;   // who holds the TPU, the lockfile
};

RemoteCommand doctor_facts_command(const DoctorProbe& probe);
// Reads the script's output into `facts` (uid, gid, user, sudo, devices,
// roots, probe, tmp); `worker_time_ns` gets the worker's clock. False with
// facts.error set when the output is not the script's.
bool parse_doctor_facts(const std::string& out, const DoctorProbe& probe, WorkerFacts& facts,
                        long long& worker_time_ns);

// Every worker's facts, in worker order, one connection each (at most `fanout` at once).
std::vector<WorkerFacts> gather_worker_facts(const std::vector<Worker>& workers, Transport& transport, int fanout,
                                             const CancelToken& cancel, const DoctorProbe& probe);

struct LocalFacts {
  int uid = -1;
  int gid = -1;
  std::string user;
  std::vector<RootFacts> roots;          // on this host
  std::vector<std::string> root_problems;  // messages with their fix (owner, mode, sticky bit)
  std::string probe_problem;             // why no probe file could be written ("" when it was)
  std::vector<std::string> gcloud_problems;  // account, project (gcloud pods)
};

struct Finding {
  enum class Severity { warning, error } severity = Severity::error;
  std::string check;         // reach, uid, mount, sudo, devices, tpu, clock, tmp, roots, gcloud
  std::vector<int> workers;  // empty: this host
  std::string problem;
  std::string fix;
};

// The problems, grouped: workers with the same problem and fix share a line.
// Clock skew warns from 2 s; /tmp warns under 1 GiB free; python3, jax,
// jaxlib or libtpu at another version on some workers warns, naming them.
std::vector<Finding> judge(const LocalFacts& local, const std::vector<WorkerFacts>& workers);

}  // namespace tpurun

namespace tpurun {

struct PodConfig;
struct Context;

// This host's side: ids, the roots (present, file system, owner and mode),
// gcloud's account and project for a gcloud pod (unless !check_gcloud: gcloud
// has just worked for the caller), and the probe file written
// in the user's dir under logs_root (`probe` is filled in; remove_probe()
// takes it away again).
LocalFacts gather_local_facts(const PodConfig& pod, Context& ctx, DoctorProbe& probe, bool check_gcloud = true);
void remove_probe(const DoctorProbe& probe);

}  // namespace tpurun
