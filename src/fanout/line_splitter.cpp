#include "tpurun/fanout/line_splitter.hpp"

namespace tpurun {
namespace {

// The length of `text` without a UTF-8 sequence that the cut left incomplete.
std::size_t whole_utf8_prefix(std::string_view text) {
  std::size_t start = text.size();
  while (start > 0 && (static_cast<unsigned char>(text[start - 1]) & 0xC0) == 0x80) --start;
  if (start == 0) return text.size();
  const auto lead = static_cast<unsigned char>(text[start - 1]);
  std::size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return text.size() - (start - 1) < want ? start - 1 : text.size();
}

}  // namespace

void LineSplitter::feed(std::string_view data, const std::function<void(std::string_view)>& on_line) {
  std::size_t i = 0;
  while (i < data.size()) {
    if (dropping_) {
      const std::size_t nl = data.find('\n', i);
      if (nl == std::string_view::npos) return;
      dropping_ = false;
      i = nl + 1;
      continue;
    }
    const std::size_t stop = data.find_first_of("\r\n", i);
    const std::size_t end = stop == std::string_view::npos ? data.size() : stop;
    const std::size_t room = kMaxLine - pending_.size();
    if (end - i > room) {  // the line outgrows the bound before it ends
      pending_.append(data.substr(i, room));
      i += room;
      cut_line(on_line);
      continue;
    }
    pending_.append(data.substr(i, end - i));
    i = end;
    if (stop == std::string_view::npos) break;
    if (data[stop] == '\n') {
      end_line(on_line);
    } else {
      redrawn_ = true;
      if (!pending_.empty()) {  // "\r\r" or "\r\n" keep the state before
        redraw_ = std::move(pending_);
        pending_.clear();
      }
    }
    ++i;
  }
}

void LineSplitter::end_line(const std::function<void(std::string_view)>& on_line) {
  on_line(pending_.empty() ? redraw_ : pending_);
  reset_line();
}

void LineSplitter::cut_line(const std::function<void(std::string_view)>& on_line) {
  pending_.resize(whole_utf8_prefix(pending_));
  pending_.append(kCutNote);
  on_line(pending_);
  reset_line();
  dropping_ = true;
}

void LineSplitter::reset_line() {
  pending_.clear();
  redraw_.clear();
  redrawn_ = false;
}

std::string LineSplitter::progress(std::size_t max) const {
  if (!redrawn_) return {};
  const std::string& latest = pending_.empty() ? redraw_ : pending_;
  return latest.substr(0, max);
}

std::optional<std::string> LineSplitter::finish() {
  std::optional<std::string> last;
  if (!pending_.empty()) {
    last = std::move(pending_);
  } else if (!redraw_.empty()) {
    last = std::move(redraw_);
  }
  reset_line();
  dropping_ = false;
  return last;
}

}  // namespace tpurun
