// Workers whose stacks are the same, clubak-style, and the odd ones out.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "tpurun/fanout/collapse.hpp"
#include "tpurun/runs/stacks/stacks.hpp"

namespace tpurun {
namespace {

// The command's program and first argument, without their dirs: a pid or
// a path differs from worker to worker, what runs does not.
std::string command_shape(const std::string& command) {
  std::string shape;
  size_t start = 0;
  for (int word = 0; word < 2 && start < command.size(); ++word) {
    size_t end = command.find(' ', start);
    if (end == std::string::npos) end = command.size();
    const std::string w = command.substr(start, end - start);
    shape += (word ? " " : "") + w.substr(w.rfind('/') + 1);
    start = end + 1;
  }
  return shape;
}

// A thread's functions and their files' names (a venv, a snapshot or the
// run's dir may be another path on each worker).
std::string thread_key(const StackThread& t) {
  std::string key = t.name + ":";
  for (const StackFrame& f : t.frames) key += f.function + "@" + f.file.substr(f.file.rfind('/') + 1) + ";";
  return key;
}

// One worker's stacks as a key: every process's threads, in the order of
// their shapes, without pids or line numbers.
std::string stacks_key(const WorkerStacks& s) {
  std::vector<std::string> parts;
  for (const StackProcess& p : s.processes) {
    std::string part = command_shape(p.command) + "|" + p.no_stack + "|";
    for (const StackThread& t : p.threads) part += thread_key(t) + "|";
    parts.push_back(part);
  }
  std::sort(parts.begin(), parts.end());
  std::string key = parts.empty() ? "no processes" : "";
  for (const std::string& part : parts) key += part + "\n";
  return key;
}

// Python's own modules (threading's wait under a job's wait_for_peers) say
// little about where a job is: the summary names the job's frames.
bool is_library(const StackFrame& f) {
  return f.file.find("/lib/python3") != std::string::npos && f.file.find("-packages/") == std::string::npos;
}

// The job's innermost few functions, outermost first: "a → b → c".
std::string chain_tail(const StackThread& t, size_t count = 3) {
  std::vector<std::string> names;
  for (const StackFrame& f : t.frames) {
    if (names.size() < count && !is_library(f)) names.push_back(f.function);
  }
  std::string out;
  for (size_t i = names.size(); i-- > 0;) out += names[i] + (i > 0 ? " → " : "");
  return out.empty() ? "(no frame of the job)" : out;
}

const StackThread* find_thread(const WorkerStacks& s, const std::string& name, const std::string& key) {
  for (const StackProcess& p : s.processes) {
    for (const StackThread& t : p.threads) {
      if (t.name == name && (key.empty() || thread_key(t) == key)) return &t;
    }
  }
  return nullptr;
}

// What the odd worker has that the usual one has not: its first thread
// unlike any of the usual one's, else a process without a stack.
std::string difference(const WorkerStacks& usual, const WorkerStacks& odd) {
  for (const StackProcess& p : odd.processes) {
    for (const StackThread& t : p.threads) {
      if (find_thread(usual, t.name, thread_key(t)) == nullptr) return fmt::format("{} in {}", t.name, chain_tail(t));
    }
  }
  for (const StackProcess& p : odd.processes) {
    if (!p.no_stack.empty()) return fmt::format("{}: {}", command_shape(p.command), p.no_stack);
  }
  return odd.processes.empty() ? "no process of the run" : "fewer processes or threads";
}

}  // namespace

std::vector<StacksGroup> group_stacks(const std::vector<WorkerStacks>& stacks) {
  std::map<std::string, StacksGroup> by_key;
  for (size_t i = 0; i < stacks.size(); ++i) {
    if (!stacks[i].error.empty()) continue;
    const std::string key = stacks_key(stacks[i]);
    StacksGroup& g = by_key[key];
    g.key = key;
    g.workers.push_back(static_cast<int>(i));
  }
  std::vector<StacksGroup> groups;
  for (auto& [key, g] : by_key) groups.push_back(std::move(g));
  std::sort(groups.begin(), groups.end(), [](const StacksGroup& a, const StacksGroup& b) {
    if (a.workers.size() != b.workers.size()) return a.workers.size() > b.workers.size();
    return a.workers.front() < b.workers.front();
  });
  return groups;
}

std::vector<std::string> odd_ones_out(const std::vector<WorkerStacks>& stacks,
                                      const std::vector<StacksGroup>& groups) {
  std::vector<std::string> lines;
  if (groups.size() < 2) return lines;
  const WorkerStacks& usual = stacks[static_cast<size_t>(groups[0].workers.front())];
  for (size_t g = 1; g < groups.size(); ++g) {
    const std::string what = difference(usual, stacks[static_cast<size_t>(groups[g].workers.front())]);
    std::vector<int> indices;
    for (int i : groups[g].workers) indices.push_back(stacks[static_cast<size_t>(i)].worker.index);
    lines.push_back(fmt::format("{} {}: {}", worker_range_label(indices),
                                indices.size() == 1 ? "differs" : "differ", what));
  }
  return lines;
}

}  // namespace tpurun
