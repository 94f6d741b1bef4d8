// doctor on this host: ids, the shared roots, gcloud's config, the probe file.
#include <fcntl.h>
#include <fmt/format.h>
#include <cerrno>
#include <cstring>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tpurun/doctor/doctor.hpp"
#include "tpurun/pod/config.hpp"
#include "tpurun/transport/context.hpp"
#include "tpurun/util/identity.hpp"
#include "tpurun/util/safe_dir.hpp"

namespace tpurun {
namespace {

std::string fs_type(const std::string& path, ProcessRunner& processes) {
  ProcessResult r = processes.run({"stat", "-f", "-c", "%T", path});
  std::string t = r.out;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return r.exit_code == 0 && !t.empty() ? t : "?";
}

std::vector<std::string> gcloud_problems(const PodConfig& pod, ProcessRunner& processes) {
  if (!pod.gcloud) return {};
  ProcessResult r = processes.run({"gcloud", "config", "list", "--format=json"});
  if (r.exit_code != 0) return {fmt::format("`gcloud config list` failed (exit {}): {}", r.exit_code, r.err)};
  auto doc = nlohmann::json::parse(r.out, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return {"`gcloud config list` printed no JSON object"};
  auto get = [&](const char* section, const char* key) -> std::string {
    auto s = doc.find(section);
    if (s == doc.end() || !s->is_object()) return "";
    auto v = s->find(key);
    return v != s->end() && v->is_string() ? v->get<std::string>() : "";
  };
  std::vector<std::string> out;
  const bool no_credentials = get("auth", "disable_credentials") == "true" || get("auth", "disable_credentials") == "True";
  if (get("core", "account").empty() && !no_credentials) {
    out.push_back("gcloud has no account, so it cannot describe the TPU VM: run `gcloud auth login` (or, on a VM, "
                  "use its service account)");
  }
  if (get("core", "project").empty() && pod.gcloud->project.empty()) {
    out.push_back(fmt::format("pod '{}' names no project and gcloud has none: add \"project\" to the pod's "
                              "\"gcloud\", or run `gcloud config set project PROJECT`",
                              pod.name));
  }
  return out;
}

}  // namespace

LocalFacts gather_local_facts(const PodConfig& pod, Context& ctx, DoctorProbe& probe, bool check_gcloud) {
  LocalFacts local;
  local.uid = static_cast<int>(::getuid());
  local.gid = static_cast<int>(::getgid());
  local.user = local_user(ctx.env);
  if (check_gcloud) local.gcloud_problems = gcloud_problems(pod, ctx.processes);
  probe.device_globs = pod.device_globs;
  if (!pod.shared_mount || pod.local) {  // own disks: checked there (doctor_facts), nothing shared to probe
    probe.local_root = pod.worker_root;
    return local;
  }
  for (const std::string& root : {pod.staging_root, pod.logs_root}) {
    if (root.empty()) continue;
    probe.roots.push_back(root);
    RootFacts facts{root, false, "?"};
    auto opened = open_shared_root(root);
    if (opened) {
      facts.present = true;
      facts.fs_type = fs_type(root, ctx.processes);
    } else if (opened.error().kind != DirProblem::Kind::missing) {
      facts.present = true;
      local.root_problems.push_back(opened.error().message());
    }
    local.roots.push_back(facts);
  }
  if (pod.logs_root.empty()) {
    local.probe_problem = fmt::format("pod '{}' has no logs_root", pod.name);
    return local;
  }
  auto dir = open_own_path(pod.logs_root, {local.user}, Create::if_missing);
  if (!dir) {
    local.probe_problem = dir.error().message();
    return local;
  }
  const std::string name = ".tpurun-doctor-" + random_suffix();
  const std::string token = random_suffix() + random_suffix();
  int fd = ::openat(dir->fd.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    local.probe_problem = fmt::format("cannot create {}/{}: {}", dir->path, name, std::strerror(errno));
    return local;
  }
  const bool written = ::write(fd, token.data(), token.size()) == static_cast<ssize_t>(token.size());
  // close() is what makes it visible to the other NFS clients (close-to-open).
  if (::close(fd) != 0 || !written) {
    local.probe_problem = fmt::format("cannot write {}/{}", dir->path, name);
    ::unlinkat(dir->fd.get(), name.c_str(), 0);
    return local;
  }
  probe.probe_path = dir->path + "/" + name;
  probe.probe_token = token;
  return local;
}

void remove_probe(const DoctorProbe& probe) {
  if (!probe.probe_path.empty()) ::unlink(probe.probe_path.c_str());
}

}  // namespace tpurun
