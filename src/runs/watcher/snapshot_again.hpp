#pragma once
// No shared mount: a recreated TPU VM's new disk has neither the run's
// snapshot nor its log dir. Before the next attempt starts there, the
// snapshot is read back from this host's copy (the record's staged_dir), its
// tree hash checked against the record, and pushed to every worker as the
// stage did: a worker that has it whole answers in one round trip, a new one
// gets only what it lacks.
#include <string>
#include <vector>

#include "tpurun/pod/pod.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/util/cancel.hpp"

namespace tpurun {

struct SnapshotAgain {
  std::vector<std::string> failed;  // "w1 10.0.0.2: why", one per worker that did not get it
  std::string error;                // the snapshot could not be read here at all
  size_t sent_to = 0;               // workers that lacked it (and have it now)
  std::uint64_t bytes = 0;
  bool ok() const { return error.empty() && failed.empty(); }
};

SnapshotAgain push_snapshot_again(const RunRecord& record, const PodConfig& pod, const std::vector<Worker>& workers,
                                  Transport& transport, int fanout, const CancelToken& cancel);

}  // namespace tpurun
