#include "runs/launch/reservation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "tpurun/fanout/fanout.hpp"
#include "tpurun/fanout/gather.hpp"
#include "tpurun/worker/tokens.hpp"

namespace tpurun {
namespace {

using Clock = std::chrono::steady_clock;

// Reads until `done(out)` or the end of the command's output. The deadline
// only guards against a worker that takes the connection and then says
// nothing; a dropped link is a read error.
Result<bool, TransportError> read_until(ExecStream& stream, std::string& out, Clock::time_point deadline,
                                        const CancelToken* cancel, bool (*done)(const std::string&)) {
  while (!done(out)) {
    if (cancel != nullptr && cancel->cancelled()) {
      return unexpected(TransportError{ErrorKind::interrupted, interrupted_by()});
    }
    if (Clock::now() > deadline) {
      return unexpected(TransportError{ErrorKind::timeout, "the worker did not answer within the time allowed"});
    }
    auto got = stream.read(200);
    if (!got) return unexpected(got.error());
    if (got->eof) return false;
    out += got->data;
  }
  return true;
}

bool ready(const std::string& out) { return out.find(worker::kReserveReady) != std::string::npos; }
const std::string kDoneLine = std::string(worker::kReserveDone) + "\n";
bool ran(const std::string& out) { return out.ends_with(kDoneLine); }
bool never(const std::string&) { return false; }
// The script has said whether it holds the lock (the TPU scan comes after).
bool taken(const std::string& out) {
  return out.find(std::string(worker::kReserveOk) + "\n") != std::string::npos || reserve_answer_complete(out);
}
// ... and it may go on: held, or (not required) busy but going ahead anyway.
bool lock_taken(const std::string& out, bool required) {
  return out.find(std::string(worker::kReserveOk) + "\n") != std::string::npos ||
         (!required && out.find(std::string(worker::kReserveBusy) + "\n") != std::string::npos);
}

std::string last_line(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const size_t nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

}  // namespace

struct Reservations::Slot {
  size_t position = 0;
  std::unique_ptr<Connection> connection;
  std::unique_ptr<ExecStream> stream;
  std::mutex mutex;  // the keepalive and the launch take turns on the stream
};

Reservations::Reservations(const std::vector<Worker>& workers, Transport& transport, ReserveSpec spec,
                           const CancelToken& cancel)
    : spec_(std::move(spec)), transport_(transport) {
  for (size_t i = 0; i < workers.size(); ++i) {
    workers_.push_back(WorkerReservation{workers[i], ReserveState::not_tried, {}, std::nullopt, ""});
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->position = i;
  }
  if (workers.empty()) return;
  std::vector<size_t> order(workers.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(workers[a].host, workers[a].port) < std::tie(workers[b].host, workers[b].port);
  });
  keepalive_ = std::thread([this] { keep_alive(); });
  // Connecting takes nothing on a worker: every handshake at once, then the
  // reservations in their order.
  std::vector<std::unique_ptr<Connection>> connections(workers.size());
  run_parallel(workers.size(), spec_.fanout, [&](size_t i) {
    auto connection = transport_.connect(workers_[i].worker, cancel);
    if (connection) {
      connections[i] = std::move(*connection);
    } else {
      workers_[i].state = ReserveState::failed;
      workers_[i].error = connection.error().message;
    }
  });
  // The rest start once the first worker's lock is taken, while its TPU scan
  // still runs: a racing stage is refused there all the same.
  std::thread rest;
  struct Join {
    std::thread& thread;
    ~Join() {
      if (thread.joinable()) thread.join();
    }
  } join_rest{rest};
  auto reserve_rest = [&] {
    rest = std::thread([&] {
      run_parallel(order.size() - 1, spec_.fanout, [&](size_t i) {
        const size_t at = order[i + 1];
        if (connections[at]) reserve_one(*slots_[at], std::move(connections[at]), cancel, {});
      });
    });
  };
  const size_t first = order.front();
  if (connections[first]) reserve_one(*slots_[first], std::move(connections[first]), cancel, reserve_rest);
}

Reservations::~Reservations() { give_up(); }

void Reservations::reserve_one(Slot& slot, std::unique_ptr<Connection> connection, const CancelToken& cancel,
                               const std::function<void()>& on_taken) {
  WorkerReservation& w = workers_[slot.position];
  auto fail = [&](const std::string& why) {
    w.state = ReserveState::failed;
    w.error = why;
    std::lock_guard lock(slot.mutex);
    slot.stream.reset();
    slot.connection.reset();
  };
  auto stream = connection->open_exec("exec sh -s", cancel);
  if (!stream) return fail(stream.error().message);
  std::string out;
  if (auto error = (*stream)->write(reserve_script(spec_))) return fail(error->message);
  const auto deadline = Clock::now() + std::chrono::seconds(120 + spec_.wait_s);
  auto answered = read_until(**stream, out, deadline, &cancel, taken);
  if (answered && *answered && on_taken && lock_taken(out, spec_.required)) on_taken();
  if (answered && *answered) answered = read_until(**stream, out, deadline, &cancel, ready);
  if (!answered) return fail(answered.error().message);
  const ReserveAnswer answer = parse_reserve_answer(out);
  if (answer.state == ReserveAnswer::State::refused) return fail("cannot take the reservation: " + answer.why);
  if (answer.state == ReserveAnswer::State::busy && !answer.ready) {
    w.state = ReserveState::busy;
    w.holders = answer.holders;
    return;
  }
  if (!answer.ready) {
    std::string why = last_line((*stream)->err());
    return fail("the reservation script ended early" + (why.empty() ? std::string() : ": " + why));
  }
  w.state = answer.state == ReserveAnswer::State::ok ? ReserveState::reserved : ReserveState::unreserved;
  w.holders = answer.holders;
  if (spec_.scan) {
    WorkerScanResult result{w.worker, TpuState::error, std::nullopt, ""};
    if (auto scan = parse_scan(answer.scan_text)) {
      result.state = state_from_scan(*scan);
      result.scan = std::move(*scan);
    } else {
      result.error = scan.error();
    }
    w.scan = std::move(result);
  }
  std::lock_guard lock(slot.mutex);
  slot.connection = std::move(connection);
  slot.stream = std::move(*stream);
}

bool Reservations::complete() const {
  return !workers_.empty() && std::all_of(workers_.begin(), workers_.end(), [this](const WorkerReservation& w) {
    return w.state == ReserveState::reserved || (!spec_.required && w.state == ReserveState::unreserved);
  });
}

std::vector<std::string> Reservations::busy_lines() const {
  std::map<std::string, std::vector<int>> by_holder;
  for (const WorkerReservation& w : workers_) {
    if (w.state != ReserveState::busy && w.state != ReserveState::unreserved) continue;
    if (w.holders.empty()) {
      by_holder["a process whose holder record is gone"].push_back(w.worker.index);
      continue;
    }
    for (const ReservationHolder& h : w.holders) {
      const std::string run = h.run_id == "-" ? "a stage" : "run " + h.run_id;
      by_holder[fmt::format("{}'s {} (since {})", h.user, run, h.since)].push_back(w.worker.index);
    }
  }
  std::vector<std::string> lines;
  for (const auto& [who, indices] : by_holder) lines.push_back(fmt::format("{}: {}", compact_worker_set(indices), who));
  return lines;
}

LaunchResult Reservations::launch(const LaunchSpec& spec) {
  stop_keepalive();
  LaunchResult result;
  result.outcomes.resize(workers_.size());
  run_parallel(slots_.size(), spec_.fanout, [&](size_t i) {
    Slot& slot = *slots_[i];
    WorkerOutcome& outcome = result.outcomes[i];
    outcome.worker = workers_[i].worker;
    std::lock_guard lock(slot.mutex);
    if (!slot.stream) {
      outcome.result = TransportError{ErrorKind::channel, "not launched: the worker was not reserved"};
      return;
    }
    const auto started = Clock::now();
    std::string out;
    if (auto error = slot.stream->write(std::string(worker::kReserveGo) + "\n" +
                                        launch_command(spec, outcome.worker).stdin_data)) {
      outcome.result = *error;
      return;
    }
    slot.stream->close_input();
    auto ended = read_until(*slot.stream, out, Clock::now() + std::chrono::seconds(120), nullptr, never);
    outcome.out = out;
    outcome.err = slot.stream->err();
    outcome.duration_s = std::chrono::duration<double>(Clock::now() - started).count();
    if (!ended) {
      outcome.result = ended.error();
      return;
    }
    outcome.result = CommandExit{slot.stream->exit_code().value_or(255), std::nullopt};
  });
  for (WorkerOutcome& launch : result.outcomes) settle_launch(launch, result);
  give_up();  // the wrappers hold the locks now; the scripts have ended
  return result;
}

void Reservations::give_up() {
  stop_keepalive();
  for (auto& slot : slots_) {
    std::lock_guard lock(slot->mutex);
    slot->stream.reset();
    slot->connection.reset();
  }
}

bool Reservations::with_connection(size_t position, const std::function<void(Connection&)>& fn) {
  Slot& slot = *slots_.at(position);
  std::lock_guard lock(slot.mutex);
  if (!slot.connection) return false;
  fn(*slot.connection);
  return true;
}

Result<std::string, std::string> Reservations::run_in_reservation(size_t position, const std::string& command_line) {
  const std::string end = std::string(worker::kReserveEndOfCommand) + "\n";
  if (("\n" + command_line + "\n").find("\n" + end) != std::string::npos) {
    return unexpected(std::string("the command holds the line that ends it"));
  }
  Slot& slot = *slots_.at(position);
  std::lock_guard lock(slot.mutex);
  if (!slot.stream) return unexpected(std::string("the worker is not reserved"));
  if (auto error = slot.stream->write(std::string(worker::kReserveRun) + "\n" + command_line + "\n" + end)) {
    return unexpected(error->message);
  }
  std::string out;
  auto answered = read_until(*slot.stream, out, Clock::now() + std::chrono::seconds(120), nullptr, ran);
  if (!answered) return unexpected(answered.error().message);
  if (!*answered) return unexpected(std::string("the reservation's script ended"));
  out.resize(out.size() - kDoneLine.size());
  return out;
}

void Reservations::keep_alive() {
  std::unique_lock lock(keepalive_mutex_);
  while (!keepalive_wake_.wait_for(lock, spec_.keepalive, [this] { return keepalive_stop_; })) {
    for (auto& slot : slots_) {
      std::unique_lock held(slot->mutex, std::try_to_lock);
      if (held && slot->stream) slot->stream->write(std::string(worker::kReserveKeepalive) + "\n");
    }
  }
}

void Reservations::stop_keepalive() {
  {
    std::lock_guard lock(keepalive_mutex_);
    keepalive_stop_ = true;
  }
  keepalive_wake_.notify_all();
  if (keepalive_.joinable()) keepalive_.join();
}

bool Reservations::with_connection_kept(
    size_t position, const std::function<void(Connection&, const std::function<void()>& keepalive)>& fn) {
  Slot& slot = *slots_.at(position);
  std::lock_guard lock(slot.mutex);
  if (!slot.connection) return false;
  const std::function<void()> keepalive = [&slot] {
    if (slot.stream) slot.stream->write(std::string(worker::kReserveKeepalive) + "\n");
  };
  fn(*slot.connection, keepalive);
  return true;
}

}  // namespace tpurun
