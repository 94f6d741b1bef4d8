#pragma once
// TensorBoard's --logdir_spec for a set of runs: one "name:path" per run,
// comma-separated, named by the runs' tags. tpurun tensorboard uses it; only
// tensorboard_runs reads the log dirs, the rest is pure.
#include <string>
#include <vector>

#include "tpurun/runs/record/run_record.hpp"

namespace tpurun {

struct TensorBoardRun {
  std::string run_id;
  std::string name;  // unique, and free of ',' and ':' (the spec's separators)
  std::string path;  // the directory TensorBoard reads (recursively)
};

// A run's base name: its tags ("b1024_lr0.1" for --tag b1024 --tag lr=0.1),
// else its run id. Only [A-Za-z0-9._-] survive.
std::string tensorboard_base_name(const RunRecord& run);

// Names for `runs` (in order), unique: a name shared by several runs gets the
// run id's random part appended ("b1024_d4awst"), then a counter if needed.
std::vector<std::string> tensorboard_names(const std::vector<RunRecord>& runs);

// "name1:/path1,name2:/path2". Throws std::invalid_argument when a path holds
// a ',' (TensorBoard would split it) or a name is unusable.
std::string logdir_spec(const std::vector<TensorBoardRun>& runs);

// The runs `wanted` names (ids, unique prefixes, 'last'), in that order, each
// once, from `user`'s log dirs under `logs_root`, named by tensorboard_names.
// Each is read from <log dir>/tb when the job made one and the run has no
// profiles (`tpurun profile` writes them under the log dir's plugins/profile,
// where the Profile tab looks; tb/ is then found as a sub-run), else whole.
std::vector<TensorBoardRun> tensorboard_runs(const std::vector<std::string>& wanted, const std::string& logs_root,
                                             const std::string& user);

}  // namespace tpurun
