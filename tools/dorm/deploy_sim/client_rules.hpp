// The rules of the official TypeScript SDK client (1.32.2, `client/streamableHttp.js`)
// that decide what happens to a call when its stream drops, as pure functions, so the
// simulated client and its tests follow one statement of them.
//
//  - A stream that ends — cleanly or by an error — is resumed only if it is reconnectable
//    (a GET stream) or has carried an event with an id (a POST stream after its priming
//    event), and only while no *result* response arrived on it. An error response does
//    not count: after one the client resumes once more and stops on the server's 204.
//  - Resuming is a GET with `Last-Event-ID` (the last id the stream carried; a stream that
//    carried none resumes with a plain GET). The attempts wait the server's `retry:` hint
//    (the last one seen on any stream of the session) or, without one, an exponential
//    backoff; a failed attempt (no connection, a status other than 2xx or 405) schedules
//    the next, and after `max_retries` failures the client gives up: the call stays
//    pending until its own timeout. A 405 ends reconnection silently; a 2xx without a body
//    (204) ends it too; a 2xx with a body is a new stream, reconnectable, whose end starts
//    the count again from 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dorm::deploy_sim {

// The SDK's DEFAULT_STREAMABLE_HTTP_RECONNECTION_OPTIONS.
struct ReconnectOptions {
  std::int64_t initial_delay_ms = 1000;
  std::int64_t max_delay_ms = 30'000;
  double grow_factor = 1.5;
  int max_retries = 2;
};

// The wait before reconnection attempt `attempt` (0 for the first after a drop).
std::int64_t reconnect_delay_ms(const ReconnectOptions& options, int attempt,
                                std::optional<std::int64_t> server_retry_ms);

// Whether a stream that just ended is resumed.
bool resumes_after_end(bool reconnectable, bool carried_event_id, bool received_result);

// What the answer to one resume attempt means.
enum class ResumeAnswer {
  stream,     // 2xx with a body: read it as a reconnectable stream
  finished,   // 2xx without a body (204): nothing more will come; stop
  abandoned,  // 405: the server offers no GET stream; stop silently
  failed,     // anything else, or no answer at all: counts against max_retries
};
ResumeAnswer classify_resume(int http_status, bool has_body);

// How a call ended, as its client saw it.
enum class OutcomeKind {
  answered,  // a result response
  failed,    // an error response, or the POST itself failed (no stream to wait on)
  hung,      // nothing by the client's timeout
};
std::string_view to_string(OutcomeKind kind);

struct Outcome {
  OutcomeKind kind = OutcomeKind::hung;
  int code = 0;        // failed by an error response: its JSON-RPC code
  std::string reason;  // failed: the error's data.reason, else "code N", or why the POST failed
};

// The outcome an error response's `error` member (compact JSON text) gives its call.
Outcome outcome_of_error(std::string_view error_json);

}  // namespace dorm::deploy_sim
