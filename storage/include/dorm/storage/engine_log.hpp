// Where the storage engines' own diagnostics go.
//
// RocksDB writes an info log of its own (options at open, flushes, compactions, errors).
// By default it writes a LOG file into the database directory, and that file's writer
// asserts (and so aborts the process, as Debian builds RocksDB with assertions on) when a
// write to it fails on a full disk. dorm gives RocksDB a logger of its own instead, which
// hands each line to the sink set here and drops a line it cannot hand on: a full disk
// never stops the store from logging, and logging never stops the store.
//
// The storage layer has no logging library of its own (an embedder compiles it without
// one): `dorm::log::configure` installs a sink that writes to dorm's log. With no sink,
// lines are dropped.
#pragma once

#include <functional>
#include <string_view>

namespace dorm::storage {

enum class EngineLogLevel { debug, info, warn, error };

// `engine` names the source ("rocksdb"); `message` is one line without a newline.
using EngineLogSink =
    std::function<void(EngineLogLevel level, std::string_view engine, std::string_view message)>;

// Replaces the process-wide sink (an empty function drops every line). Thread-safe; lines
// being written while it changes go to the old sink or the new one.
void set_engine_log_sink(EngineLogSink sink);

// Hands one line to the sink; for the engines' loggers. Never throws.
void engine_log(EngineLogLevel level, std::string_view engine, std::string_view message) noexcept;

}  // namespace dorm::storage
