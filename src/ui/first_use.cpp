#include "tpurun/ui/first_use.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>

#include "tpurun/pod/config.hpp"
#include "tpurun/transport/key_offer.hpp"
#include "tpurun/ui/confirm.hpp"
#include "tpurun/util/subprocess.hpp"

namespace tpurun {
namespace {

class StderrSink : public OutputSink {
 public:
  explicit StderrSink(std::FILE* err) : err_(err) {}
  void write(Stream, std::string_view data) override {
    std::fwrite(data.data(), 1, data.size(), err_);
    std::fflush(err_);
  }

 private:
  std::FILE* err_;
};

std::string where(const GcloudSpec& spec) {
  return fmt::format("zone {}{}", spec.zone, spec.project.empty() ? "" : ", project " + spec.project);
}

}  // namespace

std::unique_ptr<Transport> with_first_use_offer(std::unique_ptr<Transport> transport, const PodConfig& pod,
                                                Context& ctx) {
  if (!pod.gcloud || pod.local) return transport;
  const GcloudSpec spec = *pod.gcloud;
  const std::vector<std::string> argv = gcloud_import_argv(spec, "all");
  const std::string command = fmt::format("{}", fmt::join(argv, " "));
  const std::string key = pod.ssh.identity_file.empty() ? "your key" : pod.ssh.identity_file + ".pub";
  std::string hint = fmt::format(
      "on a gcloud pod that means TPU VM {} ({}) does not have {} yet: `tpurun --pod {} hostkeys --import` puts it "
      "in the VM's metadata the way gcloud does (it runs: {})",
      spec.name, where(spec), key, pod.name, command);
  auto offer = [&ctx, spec, argv, command, key, name = pod.name]() -> bool {
    if (!can_ask(ctx)) return false;  // the refusal's hint says what to run
    if (!confirm(fmt::format("\ntpurun: TPU VM {} (pod '{}', {}) refused {}: gcloud puts users' keys on TPU VMs "
                             "through their metadata, and has not done so for you yet.\n"
                             "tpurun: do it now, the way gcloud does? It runs:\n  {}\n",
                             spec.name, name, where(spec), key, command),
                 ctx)) {
      fmt::print(ctx.err, "tpurun: not changed; `tpurun --pod {} hostkeys --import` does it later\n", name);
      return false;
    }
    StderrSink sink(ctx.err);
    auto done = run_subprocess(argv, "", std::nullopt, sink, ctx.cancel);
    if (!done || done->code != 0) {
      fmt::print(ctx.err, "tpurun: gcloud failed ({}); nothing else was tried\n",
                 done ? fmt::format("exit {}", done->code) : done.error());
      return false;
    }
    fmt::print(ctx.err, "tpurun: your key is on TPU VM {} now; trying again\n", spec.name);
    return true;
  };
  return std::make_unique<KeyOfferTransport>(std::move(transport), std::move(offer), std::move(hint));
}

}  // namespace tpurun
