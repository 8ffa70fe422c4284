// `dorm serve`: the serving library (dorm/server/server.hpp) run with the command line's
// options, and nothing else.
#pragma once

#include "dorm/server/server.hpp"

namespace dorm::tools {

// The command line fills the library's options directly (see add_serve in main.cpp).
using ServeOptions = server::ServerOptions;

// Runs the server in the calling thread until a stop signal; returns the exit status
// (0 after a signal, 1 when start-up failed, with the reason logged).
int serve(const ServeOptions& options);

}  // namespace dorm::tools
