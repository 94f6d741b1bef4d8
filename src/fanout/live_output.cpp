#include "tpurun/fanout/live_output.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace tpurun {
namespace {

constexpr size_t kRedrawKept = 512;  // more never fits on one terminal line

}  // namespace

// Cuts lines like PrefixedSink, but hands them to the collapser.
class LiveOutput::CollapsingSink : public WorkerSink {
 public:
  CollapsingSink(LiveOutput& live, size_t slot) : live_(live), slot_(slot) {}
  void write(Stream stream, std::string_view data) override {
    LineSplitter& lines = lines_[stream == Stream::out ? 0 : 1];
    const auto now = live_.now();
    lines.feed(data, [&](std::string_view line) { live_.collapser_->add(index(), stream, line, now); });
    live_.saw_output(slot_, stream, lines.progress(kRedrawKept));
  }
  void flush() override {
    for (int i = 0; i < 2; ++i) {
      if (auto last = lines_[i].finish()) {
        live_.collapser_->add(index(), i == 0 ? Stream::out : Stream::err, *last, live_.now());
      }
    }
    live_.saw_progress(slot_, Stream::out, {});
    live_.saw_progress(slot_, Stream::err, {});
    live_.collapser_->worker_ended(index(), live_.now());
  }

 private:
  int index() const { return live_.workers_[slot_].index; }
  LiveOutput& live_;
  size_t slot_;
  LineSplitter lines_[2];
};

// Prints every line as it comes (PrefixedSink), and keeps the status current.
class LiveOutput::RawSink : public WorkerSink {
 public:
  RawSink(LiveOutput& live, size_t slot)
      : live_(live),
        slot_(slot),
        lines_(live.printer_, live.workers_[slot], [this](Stream stream, const std::string& progress) {
          live_.saw_progress(slot_, stream, progress.substr(0, kRedrawKept));
        }) {}
  void write(Stream stream, std::string_view data) override {
    live_.saw_output(slot_, stream, std::nullopt);
    lines_.write(stream, data);
  }
  void flush() override { lines_.flush(); }

 private:
  LiveOutput& live_;
  size_t slot_;
  PrefixedSink lines_;
};

LiveOutput::LiveOutput(LinePrinter& printer, std::vector<Worker> workers, LiveOutputOptions options)
    : printer_(printer), workers_(std::move(workers)), options_(std::move(options)) {
  std::vector<int> indices;
  for (size_t i = 0; i < workers_.size(); ++i) {
    slots_[workers_[i].index] = i;
    indices.push_back(workers_[i].index);
    displays_.push_back(workers_[i].display());
  }
  if (options_.collapse && workers_.size() > 1) {
    collapser_ = std::make_unique<LineCollapser>(
        indices, [this](const CollapsedLine& line) { emit(line); }, options_.collapse_options);
  }
  const auto now = options_.clock();
  activity_.resize(workers_.size());
  for (Activity& a : activity_) a.last_output = now;
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (collapser_) {
      sinks_.push_back(std::make_unique<CollapsingSink>(*this, i));
    } else {
      sinks_.push_back(std::make_unique<RawSink>(*this, i));
    }
  }
}

LiveOutput::~LiveOutput() = default;

size_t LiveOutput::slot(int worker_index) const {
  auto it = slots_.find(worker_index);
  if (it == slots_.end()) throw std::out_of_range(fmt::format("w{} is not a followed worker", worker_index));
  return it->second;
}

WorkerSink& LiveOutput::sink(int worker_index) { return *sinks_[slot(worker_index)]; }

void LiveOutput::set_state(int worker_index, WorkerRunState state) {
  const size_t s = slot(worker_index);
  std::lock_guard lock(mutex_);
  activity_[s].state = state;
}

std::chrono::steady_clock::time_point LiveOutput::now() const {
  const long long pass = pass_time_.load(std::memory_order_relaxed);
  if (pass == kNoPass) return options_.clock();
  return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(pass));
}

void LiveOutput::begin_pass(bool continues) {
  if (!continues || last_pass_ == kNoPass) last_pass_ = options_.clock().time_since_epoch().count();
  pass_time_.store(last_pass_, std::memory_order_relaxed);
  printer_.begin_batch();
}

void LiveOutput::end_pass() {
  pass_time_.store(kNoPass, std::memory_order_relaxed);
  tick_as_of_.store(last_pass_, std::memory_order_relaxed);
  printer_.end_batch();
}

void LiveOutput::saw_output(size_t s, Stream stream, std::optional<std::string> progress) {
  const auto now = this->now();
  std::lock_guard lock(mutex_);
  activity_[s].last_output = now;
  if (progress) activity_[s].progress[stream == Stream::out ? 0 : 1] = std::move(*progress);
}

void LiveOutput::saw_progress(size_t s, Stream stream, std::string progress) {
  std::lock_guard lock(mutex_);
  activity_[s].progress[stream == Stream::out ? 0 : 1] = std::move(progress);
}

// Called under the collapser's lock, so the label cache needs no lock of its own.
void LiveOutput::emit(const CollapsedLine& line) {
  if (line.workers.size() == 1 && !line.late) {
    auto it = slots_.find(line.workers[0]);
    if (it != slots_.end()) {
      printer_.worker_line(line.workers[0], displays_[it->second], line.stream, line.text);
      return;
    }
  }
  if (line.workers != label_workers_ || line.late != label_late_) {  // most lines have the last one's label
    label_workers_ = line.workers;
    label_late_ = line.late;
    label_ = (line.late ? "+" : "") + worker_range_label(line.workers);
  }
  printer_.labelled_line(label_, line.stream, line.text);
}

std::string LiveOutput::bottom_line() {
  const auto now = options_.clock();
  std::vector<WorkerActivity> activities;
  std::string redraw;
  {
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < workers_.size(); ++i) {
      const Activity& a = activity_[i];
      auto quiet = std::chrono::duration_cast<std::chrono::seconds>(now - a.last_output);
      activities.push_back({workers_[i].index, a.state, std::max(quiet, std::chrono::seconds(0))});
      for (const std::string& progress : a.progress) {
        if (redraw.empty() && !progress.empty()) redraw = fmt::format("{}: {}", workers_[i].label(), progress);
      }
    }
  }
  std::string line = workers_.size() > 1 ? format_follow_status(activities, options_.quiet_rule) : "";
  if (!redraw.empty()) line += (line.empty() ? "" : " · ") + redraw;
  return line;
}

void LiveOutput::tick() {
  if (collapser_) {
    auto now = options_.clock();
    if (const long long as_of = tick_as_of_.exchange(kNoPass); as_of != kNoPass) {
      now = std::min(now, std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(as_of)));
    }
    printer_.begin_batch();
    collapser_->tick(now);
    printer_.end_batch();
  }
  if (!options_.status_line || !printer_.color_err()) return;
  const std::string line = bottom_line();
  if (line.empty()) {
    printer_.clear_progress();
  } else {
    printer_.progress(line);
  }
}

void LiveOutput::finish() {
  printer_.begin_batch();
  for (auto& sink : sinks_) sink->flush();
  if (collapser_) collapser_->flush_all();
  printer_.end_batch();
  printer_.clear_progress();
}

LiveOutputTicker::LiveOutputTicker(LiveOutput& live, std::chrono::milliseconds every)
    : live_(live), thread_([this, every] {
        std::unique_lock lock(mutex_);
        while (!wake_.wait_for(lock, every, [this] { return stop_; })) {
          lock.unlock();
          live_.tick();
          lock.lock();
        }
      }) {}

LiveOutputTicker::~LiveOutputTicker() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::vector<WorkerOutcome> run_with_live_output(const FanoutPlan& plan, Transport& transport, LinePrinter& printer,
                                                bool collapse, const CancelToken& cancel) {
  const bool stream_live = !plan.capture;
  LiveOutputOptions live_options;
  live_options.collapse = collapse;
  LiveOutput live(printer, plan.workers, live_options);
  std::vector<OutputSink*> live_sinks(plan.workers.size(), nullptr);
  std::optional<LiveOutputTicker> ticker;
  if (stream_live) {
    for (size_t i = 0; i < plan.workers.size(); ++i) live_sinks[i] = &live.sink(plan.workers[i].index);
    ticker.emplace(live);
  }
  std::atomic<size_t> done{0};
  auto outcomes = run_on_workers(plan, transport, live_sinks, cancel, [&](const WorkerOutcome& outcome) {
    if (stream_live) {  // its last line shows now, and no collapsed line waits for it any longer
      live.set_state(outcome.worker.index, outcome.ok() ? WorkerRunState::exited : WorkerRunState::failed);
      live.sink(outcome.worker.index).flush();
    }
    size_t n = ++done;
    if (!stream_live) printer.progress(fmt::format("{}/{} workers done", n, plan.workers.size()));
  });
  ticker.reset();
  if (stream_live) live.finish();
  printer.clear_progress();
  return outcomes;
}

}  // namespace tpurun
