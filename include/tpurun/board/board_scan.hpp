#pragma once
// The pods of the board, loaded once and scanned as often as asked: once for
// `status --all`, once per refresh for `--watch` (with the SSH connections
// kept open in between).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tpurun/board/board_entry.hpp"
#include "tpurun/transport/context.hpp"

namespace tpurun {

class BoardScanner {
 public:
  // Loads every pod of the config (sequentially: gcloud lookups), then lists
  // board.gcloud's TPU VMs (once). A config pod that cannot be loaded scans
  // as `error`, and is loaded again on the next scan; a listed TPU VM that is
  // not READY scans as `unreachable` with its gcloud state.
  BoardScanner(Context& ctx, int fanout, bool keep_connections);
  ~BoardScanner();

  const std::vector<std::string>& pods() const { return names_; }
  size_t name_width() const { return width_; }

  // Scans every pod at once, one thread per pod. on_entry(i, entry) is called
  // as pod i answers, one call at a time. Returns the entries in pods() order.
  using OnEntry = std::function<void(size_t, const BoardEntry&)>;
  std::vector<BoardEntry> scan(const CancelToken& cancel, WallClock::time_point now, const OnEntry& on_entry);

 private:
  struct Pod;
  void load(Pod& pod);
  void attach_transport(Pod& pod);

  Context& ctx_;
  int fanout_;
  bool keep_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<Pod>> pods_;
  size_t width_ = 0;
  int scans_ = 0;
};

}  // namespace tpurun
