// The official TypeScript SDK client's rules (1.32.2, `client/streamableHttp.js`;
// docs/mcp-transport-notes §5) for a call whose SSE stream ends before its result, as
// pure functions, so a simulated client follows one statement of them:
//
//  - A stream that ends, cleanly or by an error, is resumed only if it is reconnectable (a
//    GET stream) or carried an event with an id (a POST stream after its priming event),
//    and only if no *result* arrived on it: after an error response the client resumes
//    once more, and the server's 204 stops it.
//  - A resume is a GET with `Last-Event-ID` = the last id that stream carried (none: a
//    plain GET). Each attempt waits the server's `retry:` hint (the last seen on any
//    stream of the session) or, without one, an exponential backoff; a failed attempt (no
//    connection, a status other than 2xx or 405) schedules the next, and after
//    `max_retries` failures the client gives up for good: the call stays pending until
//    its own timeout. 405 stops reconnecting silently; a 2xx without a body (204) stops it;
//    a 2xx with a body is a new, reconnectable stream whose end starts the count from 0.
#pragma once

#include <cstdint>
#include <optional>

namespace dorm::testing {

// The SDK's DEFAULT_STREAMABLE_HTTP_RECONNECTION_OPTIONS.
struct ReconnectOptions {
  std::int64_t initial_delay_ms = 1000;
  std::int64_t max_delay_ms = 30'000;
  double grow_factor = 1.5;
  int max_retries = 2;
};

// The wait before reconnection attempt `attempt` (0: the first after the stream ended).
std::int64_t reconnect_delay_ms(const ReconnectOptions& options, int attempt,
                                std::optional<std::int64_t> server_retry_ms);

// Whether a stream that just ended is resumed.
bool resumes_after_end(bool reconnectable, bool carried_event_id, bool received_result);

enum class ResumeAnswer {
  stream,     // 2xx with a body: read it as a reconnectable stream
  finished,   // 2xx without a body (204): nothing more will come
  abandoned,  // 405: the server offers no GET stream; stop without an error
  failed,     // anything else, or no connection: counts against max_retries
};
ResumeAnswer classify_resume(int http_status, bool has_body);

}  // namespace dorm::testing
