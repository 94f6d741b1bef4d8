#include "tpurun/runs/record/tensorboard_spec.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cctype>
#include <map>
#include <set>
#include <stdexcept>

#include "tpurun/runs/record/profile_layout.hpp"

namespace tpurun {
namespace {

std::string safe_name(const std::string& text) {
  std::string out;
  for (char c : text) {
    bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
    out.push_back(keep ? c : '-');
  }
  return out;
}

// <YYYYmmdd>_<HHMMSS>_<rand6>_...: the third field, else the whole id.
std::string random_part(const std::string& run_id) {
  size_t first = run_id.find('_');
  size_t second = first == std::string::npos ? first : run_id.find('_', first + 1);
  if (second == std::string::npos) return run_id;
  size_t end = run_id.find('_', second + 1);
  return run_id.substr(second + 1, end == std::string::npos ? std::string::npos : end - second - 1);
}

}  // namespace

std::string tensorboard_base_name(const RunRecord& run) {
  std::string name;
  for (const std::string& tag : run.tags) {
    std::string slug = tag_slug(tag);
    if (slug.empty()) continue;
    name += (name.empty() ? "" : "_") + slug;
  }
  return safe_name(name.empty() ? run.run_id : name);
}

std::vector<std::string> tensorboard_names(const std::vector<RunRecord>& runs) {
  std::map<std::string, int> count;
  std::vector<std::string> names;
  for (const RunRecord& run : runs) names.push_back(tensorboard_base_name(run));
  for (const std::string& name : names) ++count[name];
  for (size_t i = 0; i < names.size(); ++i) {
    if (count[names[i]] > 1) names[i] += "_" + safe_name(random_part(runs[i].run_id));
  }
  std::set<std::string> taken;
  for (std::string& name : names) {
    std::string candidate = name;
    for (int n = 2; taken.count(candidate); ++n) candidate = fmt::format("{}_{}", name, n);
    name = candidate;
    taken.insert(name);
  }
  return names;
}

std::string logdir_spec(const std::vector<TensorBoardRun>& runs) {
  std::string spec;
  for (const TensorBoardRun& run : runs) {
    if (run.name.empty() || run.name.find_first_of(",:") != std::string::npos) {
      throw std::invalid_argument(fmt::format("run name '{}' cannot go into --logdir_spec", run.name));
    }
    if (run.path.find(',') != std::string::npos) {
      throw std::invalid_argument(fmt::format(
          "the log dir {} of run {} holds a ',', which TensorBoard's --logdir_spec cannot take; run "
          "tensorboard --logdir on it by hand",
          run.path, run.run_id));
    }
    spec += (spec.empty() ? "" : ",") + run.name + ":" + run.path;
  }
  return spec;
}

std::vector<TensorBoardRun> tensorboard_runs(const std::vector<std::string>& wanted, const std::string& logs_root,
                                             const std::string& user) {
  std::vector<RunRecord> records;
  std::set<std::string> seen;
  for (const std::string& run : wanted) {
    RunRecord record = read_run_record(find_run_dir(logs_root, user, run));
    if (seen.insert(record.run_id).second) records.push_back(std::move(record));
  }
  std::vector<std::string> names = tensorboard_names(records);
  std::vector<TensorBoardRun> runs;
  for (size_t i = 0; i < records.size(); ++i) {
    const std::string tb = records[i].log_dir + "/tb";
    struct stat st {};
    const bool tb_dir = ::stat(tb.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    const bool profiled = !profile_sessions(records[i].log_dir).empty();
    runs.push_back({records[i].run_id, names[i], tb_dir && !profiled ? tb : records[i].log_dir});
  }
  return runs;
}

}  // namespace tpurun
