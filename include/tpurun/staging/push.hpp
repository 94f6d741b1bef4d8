#pragma once
// A snapshot copied to a worker that does not see the staging root (a pod
// with no shared mount): the worker keeps an object store of its own, so a
// stage sends only the content it lacks, over the SSH session the stage
// already holds. An unchanged tree costs one round trip. On the worker the
// snapshot is whole or absent (push_script.cpp has the worker's side).
#include <cstdint>
#include <functional>
#include <string>

#include "tpurun/staging/snapshot.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/result.hpp"

namespace tpurun {

struct PushTarget {
  std::string staging_root;  // on the worker: absolute, or "~/..." (the remote user's home)
  std::string logs_root;     // likewise; with run_id, the run's log dir is made there too
  std::string user;
  std::string project;
  std::string run_id;  // "" : no log dir
};

struct PushResult {
  bool had = false;                // the worker had this snapshot already
  std::uint64_t objects_sent = 0;  // content the worker lacked
  std::uint64_t bytes_sent = 0;
  std::string staged_dir;  // the snapshot there, absolute
  std::string log_dir;     // the run's log dir there, absolute ("" without a run)
};

// `keepalive` is called now and then while content streams (the stage's
// reservation on the same session must hear from it).
Result<PushResult, std::string> push_snapshot(Connection& connection, const StagedSnapshot& snapshot,
                                              const PushTarget& target, const CancelToken& cancel,
                                              const std::function<void()>& keepalive = {});

// A path for the remote shell: "~/x" becomes "$HOME"/'x', others are quoted.
std::string remote_path_word(const std::string& path);

}  // namespace tpurun
