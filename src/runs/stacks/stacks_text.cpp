// The stacks as people read them (groups first, the odd ones out named, then
// every worker's last log line) and as JSON (docs/stacks.md).
#include <fmt/format.h>

#include "tpurun/fanout/collapse.hpp"
#include "tpurun/runs/stacks/stacks.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/text.hpp"

namespace tpurun {
namespace {

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A process's threads, each frame outermost first (as a Python traceback).
void append_process(std::string& out, const StackProcess& p, bool full_paths, const std::string& indent) {
  out += fmt::format("{}pid {}  {}\n", indent, p.pid, truncate_text(short_command(p.command), 100));
  if (!p.no_stack.empty()) out += fmt::format("{}  {}\n", indent, p.no_stack);
  for (const StackThread& t : p.threads) {
    out += fmt::format("{}  {}\n", indent, t.name);
    for (size_t i = t.frames.size(); i-- > 0;) {
      const StackFrame& f = t.frames[i];
      out += fmt::format("{}    {}  {}:{}\n", indent, f.function, full_paths ? f.file : base_name(f.file), f.line);
    }
  }
}

std::string last_line_text(const WorkerStacks& s) {
  std::string out = s.worker.label();
  if (s.last_line) {
    out += fmt::format("  {} ago  {}", format_age(static_cast<long long>(s.last_line_age_s.value_or(0))),
                       truncate_text(*s.last_line, 100));
  } else {
    out += "  (no log line)";
  }
  if (s.duty_cycle_pct) out += fmt::format("  duty {:.1f}%", *s.duty_cycle_pct);
  return out;
}

}  // namespace

std::string format_stacks_report(const std::string& run_id, const std::vector<WorkerStacks>& stacks) {
  std::string out = fmt::format("{}: stacks of {}, innermost call last\n",
                                run_id.empty() ? "your processes that hold the TPU" : "run " + run_id,
                                count_of(stacks.size(), "worker"));
  const std::vector<StacksGroup> groups = group_stacks(stacks);
  for (const StacksGroup& g : groups) {
    std::vector<int> indices;
    for (int i : g.workers) indices.push_back(stacks[static_cast<size_t>(i)].worker.index);
    const WorkerStacks& first = stacks[static_cast<size_t>(g.workers.front())];
    out += fmt::format("[{}] {}\n", worker_range_label(indices), count_of(indices.size(), "worker"));
    if (first.processes.empty()) out += run_id.empty() ? "  none there\n" : "  no process of the run there\n";
    for (const StackProcess& p : first.processes) append_process(out, p, false, "  ");
  }
  for (const WorkerStacks& s : stacks) {
    if (!s.error.empty()) out += fmt::format("[{}] {}\n", s.worker.label(), s.error);
  }
  const std::vector<std::string> odd = odd_ones_out(stacks, groups);
  if (!odd.empty()) out += "\n";
  for (const std::string& line : odd) out += line + "\n";
  out += "\n";
  for (const WorkerStacks& s : stacks) {
    if (s.error.empty()) out += last_line_text(s) + "\n";
  }
  return out;
}

std::string format_worker_stacks(const WorkerStacks& s) {
  std::string out = s.worker.display() + "\n";
  if (!s.error.empty()) out += s.error + "\n";
  for (const StackProcess& p : s.processes) append_process(out, p, true, "");
  return out + last_line_text(s) + "\n";
}

nlohmann::json stacks_to_json(const std::string& run_id, const std::vector<WorkerStacks>& stacks) {
  nlohmann::json workers = nlohmann::json::array();
  for (const WorkerStacks& s : stacks) {
    nlohmann::json procs = nlohmann::json::array();
    for (const StackProcess& p : s.processes) {
      nlohmann::json proc = {{"pid", p.pid}, {"ppid", p.ppid}, {"command", p.command}};
      if (!p.no_stack.empty()) proc["no_stack"] = p.no_stack;
      proc["threads"] = nlohmann::json::array();
      for (const StackThread& t : p.threads) {
        nlohmann::json frames = nlohmann::json::array();
        for (const StackFrame& f : t.frames) frames.push_back({{"function", f.function}, {"file", f.file}, {"line", f.line}});
        proc["threads"].push_back({{"name", t.name}, {"frames", std::move(frames)}});
      }
      procs.push_back(std::move(proc));
    }
    nlohmann::json w = {{"worker", s.worker.index}, {"host", s.worker.host}, {"processes", std::move(procs)},
                        {"has_stack", s.has_stack()}};
    w["last_line"] = s.last_line ? nlohmann::json(*s.last_line) : nlohmann::json();
    w["last_line_age_s"] = s.last_line_age_s ? nlohmann::json(*s.last_line_age_s) : nlohmann::json();
    w["duty_cycle_pct"] = s.duty_cycle_pct ? nlohmann::json(*s.duty_cycle_pct) : nlohmann::json();
    if (!s.error.empty()) w["error"] = s.error;
    if (s.unreachable) w["unreachable"] = true;
    workers.push_back(std::move(w));
  }
  nlohmann::json groups = nlohmann::json::array();
  const std::vector<StacksGroup> grouped = group_stacks(stacks);
  for (const StacksGroup& g : grouped) {
    std::vector<int> indices;
    for (int i : g.workers) indices.push_back(stacks[static_cast<size_t>(i)].worker.index);
    groups.push_back({{"workers", indices}, {"label", worker_range_label(indices)}});
  }
  return {{"run_id", run_id}, {"workers", std::move(workers)}, {"groups", std::move(groups)},
          {"differs", odd_ones_out(stacks, grouped)}};
}

std::vector<WorkerStacks> stacks_from_json(const nlohmann::json& doc) {
  std::vector<WorkerStacks> out;
  for (const nlohmann::json& w : doc.at("workers")) {
    WorkerStacks s;
    s.worker.index = w.value("worker", 0);
    s.worker.host = w.value("host", "");
    for (const nlohmann::json& p : w.value("processes", nlohmann::json::array())) {
      StackProcess proc{p.value("pid", 0), p.value("ppid", 0), p.value("command", ""), {}, p.value("no_stack", "")};
      for (const nlohmann::json& t : p.value("threads", nlohmann::json::array())) {
        StackThread thread{t.value("name", ""), {}};
        for (const nlohmann::json& f : t.value("frames", nlohmann::json::array())) {
          thread.frames.push_back({f.value("function", ""), f.value("file", ""), f.value("line", 0)});
        }
        proc.threads.push_back(std::move(thread));
      }
      s.processes.push_back(std::move(proc));
    }
    if (w.contains("last_line") && w["last_line"].is_string()) s.last_line = w["last_line"].get<std::string>();
    if (w.contains("last_line_age_s") && w["last_line_age_s"].is_number()) {
      s.last_line_age_s = w["last_line_age_s"].get<double>();
    }
    if (w.contains("duty_cycle_pct") && w["duty_cycle_pct"].is_number()) {
      s.duty_cycle_pct = w["duty_cycle_pct"].get<double>();
    }
    s.error = w.value("error", "");
    s.unreachable = w.value("unreachable", false);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tpurun
