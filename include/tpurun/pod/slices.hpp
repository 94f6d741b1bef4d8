#pragma once
// Multi-slice pods and runs (docs/multislice.md): several pods joined into one
// gang, and the MEGASCALE_* variables with which libtpu connects the slices.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tpurun/pod/pod.hpp"

namespace tpurun {

// --pod A,B names a multi-slice pod by its slices.
bool is_slice_list(const std::string& pod);
std::vector<std::string> split_slice_list(const std::string& pod);

// What is wrong with making one pod of the config pods `names`.
struct SliceProblem {
  int index = -1;  // the offending entry of `names`; -1: the list as a whole
  std::string message;
};
// Each name must be a distinct ordinary pod of `pods` (did-you-mean for
// unknown ones), at least two of them, all with the same staging_root,
// logs_root, SSH settings and device patterns (one run, one snapshot, one
// log dir, one way in).
std::optional<SliceProblem> check_slices(const std::vector<std::string>& names,
                                         const std::map<std::string, PodConfig>& pods);

// The pod `name` made of the checked pods `names`: their shared settings, the
// slices with their gcloud specs, no workers yet (see join_slice_workers).
PodConfig make_slices_pod(const std::string& name, const std::vector<std::string>& names,
                          const std::map<std::string, PodConfig>& pods);

// Gives `pod` the slices' workers, slice by slice: global indices, each with
// its slice and slice_worker. Throws std::runtime_error when two slices share a host.
void join_slice_workers(PodConfig& pod, const std::vector<std::vector<Worker>>& per_slice);

// What every worker of a multi-slice run is told (run.json "megascale").
struct MultiSlice {
  int num_slices = 0;
  std::string coordinator;  // the host of slice 0's worker 0
  int port = kDefaultMegascalePort;
};
// nullopt for an ordinary pod.
std::optional<MultiSlice> multislice_of(const PodConfig& pod, int port);

// MEGASCALE_COORDINATOR_ADDRESS, _NUM_SLICES, _SLICE_ID, _PORT, then
// TPURUN_SLICE, TPURUN_SLICE_WORKER and TPURUN_NUM_SLICES, for `worker`.
std::vector<std::pair<std::string, std::string>> slice_env(const MultiSlice& ms, const Worker& worker);
// The MEGASCALE_* names above, which --env may not set on a multi-slice run.
const std::vector<std::string>& megascale_names();

}  // namespace tpurun
