// The example backend against dorm's conformance kit, exactly as an embedder would run it.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <dorm/storage/conformance.hpp>

#include "append_log_backend.hpp"

namespace {

dorm::storage::conformance::Factory append_log(dorm::storage::Durability durability) {
  return {[durability](const std::string& dir)
              -> dorm::Result<std::unique_ptr<dorm::storage::Backend>> {
    auto opened = example::AppendLogBackend::open(dir + "/store.log", durability);
    if (!opened) return std::move(opened).error();
    return std::unique_ptr<dorm::storage::Backend>(std::move(opened).value());
  }};
}

}  // namespace

DORM_BACKEND_CONFORMANCE("append-log", append_log(dorm::storage::Durability::process))
DORM_BACKEND_CONFORMANCE("append-log fsync", append_log(dorm::storage::Durability::fsync))
