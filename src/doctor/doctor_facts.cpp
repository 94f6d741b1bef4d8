// What doctor asks each worker: worker/doctor_probe.sh (ids, sudo, devices,
// the shared roots and the probe file, the clock, /tmp, the Python stack),
// then the TPU scan on the same connection.
#include "tpurun/doctor/doctor.hpp"

#include <chrono>
#include <sstream>

#include "tpurun/fanout/fanout.hpp"
#include "tpurun/staging/push.hpp"
#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/worker/programs.hpp"

namespace tpurun {
namespace {

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

RemoteCommand doctor_facts_command(const DoctorProbe& probe) {
  std::vector<std::string> args = {"sh", "-s", probe.probe_path, probe.probe_token,
                                   std::to_string(probe.roots.size())};
  args.insert(args.end(), probe.roots.begin(), probe.roots.end());
  args.insert(args.end(), probe.device_globs.begin(), probe.device_globs.end());
  std::string line = shell_join(args);
  if (!probe.local_root.empty()) line = "localroot=" + remote_path_word(probe.local_root) + " " + line;
  return RemoteCommand{line, std::string(worker::kDoctorProbeSh), 30000};
}

bool parse_doctor_facts(const std::string& out, const DoctorProbe& probe, WorkerFacts& facts,
                        long long& worker_time_ns) {
  std::istringstream lines(out);
  std::string line;
  bool ended = false;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string kind;
    f >> kind;
    if (kind == "uid") {
      f >> facts.uid;
    } else if (kind == "gid") {
      f >> facts.gid;
    } else if (kind == "user") {
      f >> facts.user;
    } else if (kind == "sudo") {
      std::string v;
      f >> v;
      facts.sudo = v == "yes";
    } else if (kind == "device") {
      std::string path;
      f >> path;
      facts.devices.push_back(path);
    } else if (kind == "root") {
      RootFacts root;
      int present = 0;
      f >> present >> root.fs_type;
      std::getline(f >> std::ws, root.path);
      root.present = present == 1;
      facts.roots.push_back(root);
    } else if (kind == "probe") {
      std::string v;
      f >> v;
      using P = WorkerFacts::Probe;
      facts.probe = v == "seen" ? P::seen : v == "different" ? P::different : v == "unreadable" ? P::unreadable
                                                                                              : P::missing;
    } else if (kind == "time") {
      f >> worker_time_ns;
    } else if (kind == "localroot") {
      f >> facts.local_root_writable >> facts.local_root_free_kib;
    } else if (kind == "localuse") {
      f >> facts.local_staging_kib >> facts.local_logs_kib;
    } else if (kind == "tmpfree") {
      f >> facts.tmp_free_kib;
    } else if (kind == "versions") {
      facts.versions.clear();
      for (const char* name : {"python3", "jax", "jaxlib", "libtpu"}) {
        std::string v;
        f >> v;
        facts.versions.emplace_back(name, v.empty() ? "-" : v);
      }
    } else if (kind == "end") {
      ended = true;
    }
  }
  if (!ended || facts.uid < 0) {
    facts.error = TransportError{ErrorKind::channel, "the check script did not finish: " + out.substr(0, 200)};
    return false;
  }
  if (probe.probe_path.empty()) facts.probe = WorkerFacts::Probe::not_tried;
  return true;
}

std::vector<WorkerFacts> gather_worker_facts(const std::vector<Worker>& workers, Transport& transport, int fanout,
                                             const CancelToken& cancel, const DoctorProbe& probe) {
  auto results = for_each_connection<WorkerFacts>(
      workers, transport, fanout, cancel,
      [&](Connection& conn, const Worker& worker) -> Result<WorkerFacts, TransportError> {
        WorkerFacts facts;
        facts.worker = worker;
        CaptureSink sink;
        const long long before = now_ns();
        auto ran = conn.run(doctor_facts_command(probe), sink, cancel);
        const long long after = now_ns();
        if (!ran) return unexpected(ran.error());
        long long worker_ns = 0;
        if (parse_doctor_facts(sink.out, probe, facts, worker_ns) && worker_ns > 0) {
          facts.clock_offset_s = static_cast<double>(worker_ns - (before + after) / 2) / 1e9;
          facts.clock_uncertainty_s = static_cast<double>(after - before) / 2e9;
        }
        auto scanned = scan_connection(conn, worker, ScanRequest{probe.device_globs, false}, cancel);
        if (scanned) facts.tpu = *scanned;
        return facts;
      });
  std::vector<WorkerFacts> out;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i]) {
      out.push_back(std::move(*results[i]));
    } else {
      WorkerFacts facts;
      facts.worker = workers[i];
      facts.error = results[i].error();
      out.push_back(std::move(facts));
    }
  }
  return out;
}

}  // namespace tpurun
