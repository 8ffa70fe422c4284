#include "dorm/mcp/sse_sink.hpp"

#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/send.hpp>

#include "dorm/runtime/log.hpp"

namespace dorm::mcp {
namespace {

using keep_alive_atom = caf::atom_constant<caf::atom("keepalive")>;
using peer_gone_atom = caf::atom_constant<caf::atom("peergone")>;

struct SinkState {
  std::size_t allowance = 0;  // replayed bytes, not counted against max_unsent
};

caf::behavior sse_sink(caf::stateful_actor<SinkState>* self, std::shared_ptr<StreamBody> body,
                       SinkOptions options, std::size_t replayed) {
  self->state.allowance = replayed;
  // Whatever ends this actor ends the connection; after a clean end this does nothing.
  self->attach_functor([body](const caf::error&) { body->abort(); });
  // The client went away (or the response ended): nothing left to do here. Weak, so
  // the body does not keep a finished sink alive.
  caf::actor_addr weak = self->address();
  body->on_closed([weak] {
    if (auto me = caf::actor_cast<caf::actor>(weak)) caf::anon_send(me, peer_gone_atom::value);
  });
  self->delayed_send(self, options.keep_alive, keep_alive_atom::value);
  auto write = [self, body, options](std::string_view bytes) {
    std::size_t unsent = body->write(bytes);
    if (unsent > options.max_unsent + self->state.allowance) {
      log::info("sse_slow_reader_closed",
                {{"unsent", static_cast<std::int64_t>(unsent)},
                 {"limit", static_cast<std::int64_t>(options.max_unsent)}});
      body->abort();
      self->quit();
    }
  };
  return {
      [self, body, write](SinkWrite& w) {
        if (w.replay) self->state.allowance += w.bytes.size();
        if (!w.bytes.empty()) write(w.bytes);
        if (w.end && !body->closed()) {
          body->end();
          self->quit();
        }
      },
      [self, body](SinkClose) {
        body->end();
        self->quit();
      },
      [self, write, options](keep_alive_atom) {
        write(kKeepAliveComment);
        self->delayed_send(self, options.keep_alive, keep_alive_atom::value);
      },
      [self](peer_gone_atom) { self->quit(); },
  };
}

}  // namespace

caf::actor spawn_sse_sink(caf::actor_system& system, std::shared_ptr<StreamBody> body,
                          SinkOptions options, std::size_t replayed) {
  return system.spawn(sse_sink, std::move(body), options, replayed);
}

}  // namespace dorm::mcp
