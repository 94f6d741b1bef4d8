// What doctor asks each worker: one POSIX-sh script (ids, sudo, devices, the
// shared roots and the probe file, the clock, /tmp), then the TPU scan on the
// same connection.
#include "tpurun/doctor/doctor.hpp"

#include <chrono>
#include <sstream>

#include "tpurun/fanout/fanout.hpp"
#include "tpurun/staging/push.hpp"
#include "tpurun/transport/shell_quote.hpp"

namespace tpurun {
namespace {

// Output, one record per line: uid N | gid N | user NAME | sudo yes|no |
// device PATH | root PRESENT FSTYPE PATH | probe seen|different|unreadable|missing |
// time NANOSECONDS | tmpfree KIB | versions PYTHON JAX JAXLIB LIBTPU | end
const char* const kFactsScript = R"sh(probe=$1 token=$2 nroots=$3
shift 3
echo "uid $(id -u)"
echo "gid $(id -g)"
echo "user $(id -un)"
if sudo -n true 2>/dev/null; then echo "sudo yes"; else echo "sudo no"; fi
i=0
while [ "$i" -lt "$nroots" ]; do
  r=$1; shift; i=$((i + 1))
  if [ -d "$r" ]; then echo "root 1 $(stat -f -c %T "$r" 2>/dev/null || echo ?) $r"; else echo "root 0 - $r"; fi
done
for g in "$@"; do
  for f in $g; do [ -e "$f" ] && echo "device $f"; done
done
if [ -n "$probe" ]; then
  if [ -r "$probe" ]; then
    if [ "$(cat "$probe")" = "$token" ]; then echo "probe seen"; else echo "probe different"; fi
  elif [ -e "$probe" ]; then echo "probe unreadable"
  else
    d=${probe%/*}
    while [ -n "$d" ] && [ ! -e "$d" ]; do d=${d%/*}; done
    if [ -n "$d" ] && [ -d "$d" ] && [ ! -x "$d" ]; then echo "probe unreadable"; else echo "probe missing"; fi
  fi
fi
if [ -n "${localroot:-}" ]; then
  mkdir -p "$localroot" 2>/dev/null
  if [ -d "$localroot" ] && [ -w "$localroot" ]; then w=1; else w=0; fi
  echo "localroot $w $(df -Pk "$localroot" 2>/dev/null | awk 'NR == 2 { print $4 }')"
fi
echo "time $(date +%s%N)"
df -Pk /tmp 2>/dev/null | awk 'NR == 2 { print "tmpfree", $4 }'
command -v python3 >/dev/null 2>&1 && python3 - 2>/dev/null <<'PY'
import sys
from importlib import metadata
def v(*names):
    for n in names:
        try:
            return metadata.version(n)
        except Exception:
            pass
    return "-"
print("versions", sys.version.split()[0], v("jax"), v("jaxlib"), v("libtpu", "libtpu-nightly"))
PY
echo end
)sh";

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
  return RemoteCommand{line, kFactsScript, 30000};
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
