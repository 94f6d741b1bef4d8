#pragma once
// A snapshot copied to a worker that does not see the staging root (a pod
// with no shared mount): the worker keeps an object store of its own, so a
// stage sends only the content it lacks, over the SSH session the stage
// already holds. An unchanged tree costs one round trip. On the worker the
// snapshot is whole or absent (worker/push.py is the worker's side; docs/protocols.md).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

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
  // Where the time went (for -v): the manifest's answer, the content sent,
  // the snapshot built and checked there after the last byte.
  std::int64_t manifest_ms = 0, send_ms = 0, build_ms = 0;
};

// What every worker's push of one snapshot shares, made once: the
// manifest's bytes and the snapshot's content by object name. Made per
// worker, these were most of the client's memory at 32 workers x 10k files.
struct PushContent {
  explicit PushContent(const StagedSnapshot& snapshot);
  const StagedSnapshot& snapshot;  // outlives this
  std::string manifest;
  std::unordered_map<std::string_view, const SnapshotEntry*> by_object;
};

// `keepalive` is called now and then while content streams (the stage's
// reservation on the same session must hear from it).
Result<PushResult, std::string> push_snapshot(Connection& connection, const PushContent& content,
                                              const PushTarget& target, const CancelToken& cancel,
                                              const std::function<void()>& keepalive = {});
// The same for one worker.
Result<PushResult, std::string> push_snapshot(Connection& connection, const StagedSnapshot& snapshot,
                                              const PushTarget& target, const CancelToken& cancel,
                                              const std::function<void()>& keepalive = {});

// The first question push_snapshot asks (has this worker the snapshot
// whole?) as sh commands that need no python3 (worker/push_have.sh): run in a shell the
// stage already holds there (its reservation), it costs no new channel or
// interpreter. When the worker has it, the command also makes the run's log
// dir (as the push would) and says "have"; parse_have_answer then returns
// what push_snapshot would. Anything else (nullopt) means: push it.
std::string have_command(const StagedSnapshot& snapshot, const PushTarget& target);
std::optional<PushResult> parse_have_answer(const std::string& out);

// A path for the remote shell: "~/x" becomes "$HOME"/'x', others are quoted.
std::string remote_path_word(const std::string& path);

}  // namespace tpurun
