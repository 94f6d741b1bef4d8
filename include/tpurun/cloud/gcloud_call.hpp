#pragma once
// gcloud as `up` and `down` run it: bounded, cancellable, each create and
// delete in the user's audit log first; and what its errors mean.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/pod/pod.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

struct GcloudCalls {
  ProcessRunner& processes;
  std::string audit_path;  // "" when nothing is audited (tests)
  std::string user;
  std::string pod;

  // Runs argv; given up after `limit`, or when `cancel` fires.
  ProcessResult run(const std::vector<std::string>& argv, std::chrono::seconds limit, const CancelToken& cancel) const;
  // The audit line first: an error (and nothing is run) when it cannot be written.
  std::optional<std::string> audit(const std::string& event, const GcloudSpec& spec,
                                   const std::vector<std::string>& argv) const;
};

// gcloud's last words, on one line: "exit 1: ERROR: (gcloud...) ...".
std::string gcloud_said(const ProcessResult& r);

// A failure worth trying again, the same call, after a while: a rate limit
// (429), a server error (500, 502, 503, 504), a timeout or a dropped
// connection. Not NOT_FOUND, a refusal or a bad request.
bool is_transient(const ProcessResult& r);

// What a failed `tpu-vm create` means for `up`.
enum class CreateFailure {
  capacity,     // code 8 "There is no more capacity in the zone": the next zone
  reservation,  // code 9 "Insufficient reserved capacity": the next zone
  preempted,    // code 3 while creating (SkyPilot's third): the next zone
  quota,        // "Quota ... exceeded": stop, with the fix
  permission,   // code 7 / PERMISSION_DENIED, 16 / UNAUTHENTICATED: stop, with the fix
  other,        // stop
};
CreateFailure classify_create_failure(const std::string& gcloud_stderr);
bool tries_next_zone(CreateFailure failure);
// What to do about a failure that stops `up` ("" when there is nothing to add).
std::string create_failure_fix(CreateFailure failure, const GcloudSpec& spec);

}  // namespace tpurun
