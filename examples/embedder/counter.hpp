// Counter — an example durable object class: a count of events in windows of time.
//
// Each counter is a durable object in the "counter" namespace, addressed by name. `add`
// adds to the open window's count; the first add of a window sets the object's alarm to
// the window's end, and when the alarm fires the window closes: its count becomes
// `previous`, `windows` grows by one and the count starts again from 0. The count and the
// alarm live in the runtime's storage, so a counter comes back after a crash with both,
// and an alarm that came due while the process was down fires at the next start.
//
// Like any object, a counter is used through messages, from outside the runtime with
// Runtime::request(handle, on_reply, add_atom_v, by):
//   (add_atom, std::int64_t by)  -> std::int64_t: the open window's count after adding
//   (read_atom)                  -> std::string: {"count":N,"previous":N,"windows":N}
#pragma once

#include <dorm/runtime/runtime.hpp>

#include <cstdint>
#include <string_view>

namespace example {

using add_atom = caf::atom_constant<caf::atom("add")>;
using read_atom = caf::atom_constant<caf::atom("read")>;

inline constexpr std::string_view kCounterNamespace = "counter";

// Registers the "counter" namespace on `runtime`, with windows `window_ms` long (> 0).
// Errors: invalid_argument for a window of 0 or less, or when the namespace is taken.
dorm::Result<void> register_counter(dorm::Runtime& runtime, std::int64_t window_ms);

}  // namespace example
