// Envelope — what a sender puts in an object's mailbox, with the ReplySink that answers it.
#pragma once

#include <atomic>
#include <memory>
#include <optional>

#include <caf/expected.hpp>
#include <caf/message.hpp>

#include "dorm/runtime/errors.hpp"
#include "dorm/runtime/runtime.hpp"
#include "dorm/runtime/tracing.hpp"

namespace dorm::detail {

// Answers one request exactly once. If the message carrying it is dropped unanswered
// (its object was reset, or stopped, before handling it), the destructor answers with
// object_reset, so a sender never waits for a reply that will not come.
class ReplySink {
 public:
  // `drop_reason` is the runtime's: object_reset, or node_restarting once it crashed.
  ReplySink(ReplyHandler handler, std::shared_ptr<const std::atomic<RuntimeErrc>> drop_reason)
      : handler_(std::move(handler)), drop_reason_(std::move(drop_reason)) {}
  ~ReplySink() {
    if (!done_.exchange(true) && handler_) handler_(make_error(drop_reason_->load()));
  }
  void deliver(caf::expected<caf::message> reply) {
    if (!done_.exchange(true) && handler_) handler_(std::move(reply));
  }

 private:
  ReplyHandler handler_;
  std::shared_ptr<const std::atomic<RuntimeErrc>> drop_reason_;
  std::atomic<bool> done_{false};
};

// What a sender puts in an object's mailbox.
struct Envelope {
  caf::message payload;
  std::shared_ptr<ReplySink> reply;  // null for a plain send
  std::optional<trace::TraceContext> trace;  // the sender's span, if it traces
};

}  // namespace dorm::detail
