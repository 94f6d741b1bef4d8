#pragma once
// What `gcloud ... describe` said about a TPU VM, kept for a few minutes on
// this host: describe costs 0.6 s of gcloud's start-up on every command,
// more than an exec on 32 workers. A kept answer is used only while it is
// young and READY; a worker that does not answer as recorded makes the
// command describe again (RedescribeTransport), so a preempted, stopped or
// recreated TPU VM is noticed at once.
#include <chrono>
#include <optional>
#include <string>

#include "tpurun/pod/pod.hpp"
#include "tpurun/pod/tpu_node.hpp"
#include "tpurun/util/result.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

// TPURUN_DESCRIBE_MAX_AGE (seconds; 0 turns keeping off), else 600.
std::chrono::seconds describe_max_age(const Environment& env);

// ~/.cache/tpurun/describe/<project>_<zone>_<name>.json
std::string describe_cache_path(const GcloudSpec& spec, const Environment& env);

// The kept answer, if it is younger than `max_age` and READY.
std::optional<TpuNode> read_kept_describe(const GcloudSpec& spec, const Environment& env);
// Keeps a READY answer (a failure to write is ignored: the cache is only a cache).
void keep_describe(const GcloudSpec& spec, const TpuNode& node, const Environment& env);
// Forgets it (the TPU VM did not answer as recorded).
void forget_describe(const GcloudSpec& spec, const Environment& env);

// Describes `pod`'s TPU VM again and keeps the answer: its workers now, or
// what gcloud reported when they cannot be used (not READY, gone, gcloud failed).
Result<std::vector<Worker>, std::string> describe_again(const PodConfig& pod, const Environment& env,
                                                        ProcessRunner& processes);

}  // namespace tpurun
