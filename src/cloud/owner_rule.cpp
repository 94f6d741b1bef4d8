#include "owner_rule.hpp"

#include <fmt/format.h>

#include <cctype>

namespace tpurun {

std::string owner_label_of(const std::string& user) {
  std::string value;
  for (char c : user) {
    const auto u = static_cast<unsigned char>(c);
    value.push_back(std::isalnum(u) ? static_cast<char>(std::tolower(u)) : (c == '-' ? '-' : '_'));
  }
  return value.substr(0, 63);
}

std::string labelled_owner(const QueuedResource& qr) {
  auto it = qr.labels.find("tpurun-user");
  return it == qr.labels.end() ? "" : it->second;
}

FoundAction on_found(const QueuedResource& qr, const std::string& caller_label) {
  if (qr.state == "NOT_FOUND") return FoundAction::create;
  const std::string owner = labelled_owner(qr);
  if (!owner.empty() && owner != caller_label) return FoundAction::refuse;
  if (qr.pending() || qr.state == "ACTIVE") return FoundAction::wait;
  // FAILED, SUSPENDED, DELETING...: only the caller's own is deleted and made again.
  return owner == caller_label ? FoundAction::delete_first : FoundAction::refuse;
}

AfterCreateError after_create_error(const QueuedResource& described, const std::string& create_stderr,
                                    const std::string& caller_label) {
  if (described.state == "NOT_FOUND") return AfterCreateError::nothing_made;
  if (create_stderr.find("ALREADY_EXISTS") != std::string::npos ||
      create_stderr.find("already exists") != std::string::npos) {
    return AfterCreateError::not_ours;
  }
  return labelled_owner(described) == caller_label ? AfterCreateError::made : AfterCreateError::not_ours;
}

std::string found_text(const QueuedResource& qr, const std::string& zone) {
  const std::string owner = labelled_owner(qr);
  return fmt::format("queued resource {} in {} ({}{})", qr.name, zone, qr.state,
                     owner.empty() ? ", not made by tpurun" : ", " + owner + "'s");
}

}  // namespace tpurun
