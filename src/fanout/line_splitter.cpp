#include "tpurun/fanout/line_splitter.hpp"

#include <cstring>

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
  // Every byte of every worker's output passes here: two memchr() per line,
  // and a line that lies whole in `data` is handed on without a copy.
  const char* const bytes = data.data();
  const std::size_t size = data.size();
  auto find = [&](char c, std::size_t from, std::size_t to) {
    const void* at = std::memchr(bytes + from, c, to - from);
    return at == nullptr ? to : static_cast<std::size_t>(static_cast<const char*>(at) - bytes);
  };
  std::size_t i = 0;
  std::size_t nl = 0;  // the first '\n' at or after i (size: none), once found
  bool nl_found = false;
  while (i < size) {
    if (!nl_found || nl < i) {
      nl = find('\n', i, size);
      nl_found = true;
    }
    if (dropping_) {
      if (nl == size) return;
      dropping_ = false;
      i = nl + 1;
      continue;
    }
    const std::size_t stop = find('\r', i, nl);  // size: the line goes on in the next data
    const std::size_t room = kMaxLine - pending_.size();
    if (stop - i > room) {  // the line outgrows the bound before it ends
      pending_.append(data.substr(i, room));
      i += room;
      cut_line(on_line);
      continue;
    }
    if (stop == size) {
      pending_.append(data.substr(i));
      break;
    }
    if (bytes[stop] == '\n' && pending_.empty() && stop > i) {  // a line (or its last state) whole in data
      on_line(data.substr(i, stop - i));
      reset_line();
      i = stop + 1;
      continue;
    }
    pending_.append(data.substr(i, stop - i));
    i = stop;
    if (bytes[stop] == '\n') {
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
