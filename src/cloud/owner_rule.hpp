#pragma once
// Whose a queued resource is, and what `up` may do with one it meets. The
// rule: `up` deletes only what it created in this invocation. One it found
// is never its own (an earlier `up --keep` of yours is waited on, not
// deleted); one labelled for another user (tpurun-user) is neither waited
// on nor deleted, but named with that user's name. After a create that
// gcloud reported failed, what exists decides (a 429 or a 5xx may come after
// the API accepted the create).
#include <string>

#include "tpurun/pod/queued_resource.hpp"

namespace tpurun {

// The label value `up` puts on what it makes for `user` (tpurun-user=VALUE).
std::string owner_label_of(const std::string& user);
// The tpurun-user label of a queued resource, "" when it has none.
std::string labelled_owner(const QueuedResource& qr);

enum class FoundAction {
  create,        // nothing there
  wait,          // waiting or ACTIVE, and not another user's: waited on, never deleted by this up
  delete_first,  // the caller's own, FAILED or SUSPENDED: deleted, then created again
  refuse,        // another user's, or a failed one tpurun did not make: named, left alone
};
FoundAction on_found(const QueuedResource& qr, const std::string& caller_label);

enum class AfterCreateError {
  nothing_made,  // not there: gcloud's error is the whole story
  made,          // there, the caller's, and the create did not say ALREADY_EXISTS: this up made it
  not_ours,      // there, but someone else's (or made by another create that won): left alone
};
AfterCreateError after_create_error(const QueuedResource& described, const std::string& create_stderr,
                                    const std::string& caller_label);

// "queued resource NAME in ZONE (STATE, alice's)" for messages.
std::string found_text(const QueuedResource& qr, const std::string& zone);

}  // namespace tpurun
