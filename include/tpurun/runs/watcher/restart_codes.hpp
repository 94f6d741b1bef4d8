#pragma once
// --restart-on-exit-codes: which exit codes count as retryable, xpk's way.
// xpk (AI-Hypercomputer/xpk, workload.py get_restart_exit_codes) restarts a
// workload on 42 and 127-255 (signals, a lost host), plus any codes the user
// lists, and fails it at once on any other code. tpurun does the same when the
// flag is given; without it, every failure may be restarted (--restarts).
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tpurun {

class RestartCodes {
 public:
  // 42 and 127-255.
  static RestartCodes xpk_defaults();
  // "" gives the defaults; "1,3-5" gives the defaults plus 1, 3, 4, 5.
  // nullopt (and `error` says why) for anything else: codes are 1-255.
  static std::optional<RestartCodes> parse(const std::string& spec, std::string* error = nullptr);

  bool contains(int code) const;
  // "42,127-255" (merged ranges, ascending): run.json keeps this form.
  std::string text() const;

 private:
  void add(int first, int last);
  std::vector<std::pair<int, int>> ranges_;
};

}  // namespace tpurun
