#include "staging/snapshot_name.hpp"

#include <fmt/format.h>

#include <ctime>
#include <random>

namespace tpurun::staging {
namespace {

bool all_of(std::string_view s, bool (*pred)(char)) {
  for (char c : s) {
    if (!pred(c)) return false;
  }
  return true;
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_lower_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z'); }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }

}  // namespace

std::string snapshot_name(std::chrono::system_clock::time_point now, std::string_view suffix,
                          std::string_view short_sha) {
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm local{};
  ::localtime_r(&t, &local);
  char stamp[16];
  std::strftime(stamp, sizeof stamp, "%y%m%d%H%M%S", &local);
  return fmt::format("{}-{}-{}-code", stamp, suffix, short_sha);
}

bool is_snapshot_name(std::string_view name) {
  // ^\d{12}-[a-z0-9]{6}-([0-9a-f]{7}|nogit)-code$
  if (name.size() != 12 + 1 + 6 + 1 + 7 + 5 && name.size() != 12 + 1 + 6 + 1 + 5 + 5) return false;
  std::string_view sha = name.substr(20, name.size() - 25);
  return all_of(name.substr(0, 12), is_digit) && name[12] == '-' &&
         all_of(name.substr(13, 6), is_lower_alnum) && name[19] == '-' &&
         (sha == "nogit" || (sha.size() == 7 && all_of(sha, is_hex))) &&
         name.substr(name.size() - 5) == "-code";
}

std::optional<std::chrono::system_clock::time_point> snapshot_name_time(std::string_view name) {
  if (!is_snapshot_name(name)) return std::nullopt;
  auto field = [&](int at) { return (name[at] - '0') * 10 + (name[at + 1] - '0'); };
  std::tm local{};
  local.tm_year = 100 + field(0);
  local.tm_mon = field(2) - 1;
  local.tm_mday = field(4);
  local.tm_hour = field(6);
  local.tm_min = field(8);
  local.tm_sec = field(10);
  local.tm_isdst = -1;
  std::time_t t = ::mktime(&local);
  if (t == -1) return std::nullopt;
  return std::chrono::system_clock::from_time_t(t);
}

std::string random_suffix() {
  static constexpr char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<int> pick(0, 35);
  std::string out(6, 'a');
  for (char& c : out) c = alphabet[pick(rng)];
  return out;
}

}  // namespace tpurun::staging
