// A lane: one of the run's concurrent clients. While the run is in its load phase a lane
// takes steps, one at a time, drawn from its own seeded generator (so a seed gives every
// lane the same sequence of choices, whatever the timing):
//
//   append   (65 %)  ledger_append with a token used nowhere else: an acknowledged write
//   sleep    (15 %)  the sleep fixture, 100 ms to 2 s: a slow call a kill may interrupt
//   resume   (15 %)  sleep for 300 ms to 1.5 s; 50 ms to (sleep - 50 ms) after its POST got
//                    its response header, the lane's client drops every connection: the
//                    call's stream is resumed by the SDK's rules
//   session   (5 %)  a new session, which the lane uses from then on (the old one stays and
//                    is checked at every restart); an append instead at the session cap
//
// and between steps waits 0-20 ms. Odd lanes are writers: their sleep and resume steps
// are appends as well. A kill finds lanes in the middle of any of these.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <memory>
#include <string>

#include "run_state.hpp"

namespace dorm::torture {

// Opens a session on the run's server and adds it to run.sessions. Returns its index, or
// an error text when initialize did not succeed.
boost::asio::awaitable<std::string> open_session(std::shared_ptr<Run> run, std::size_t* index);

// Lane `lane`, starting on session `session`; returns once the run's phase is done.
boost::asio::awaitable<void> run_lane(std::shared_ptr<Run> run, int lane, std::size_t session);

// The ledger token of a lane's n-th append in a cycle: "c<cycle>.l<lane>.<n>".
std::string ledger_token(int cycle, int lane, std::int64_t n);

}  // namespace dorm::torture
