#include "execution_owner.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "dorm/actors/namespaces.hpp"

namespace dorm::actors {
namespace {

constexpr std::string_view kOwnerKey = "owner";

class ExecutionOwner : public DurableObject {
 public:
  explicit ExecutionOwner(SessionCounters* counters) : counters_(counters) {}

  caf::behavior behavior() override {
    return {
        [this](const OwnerPut& put) {
          const bool fresh = !get(kOwnerKey).value_or_throw();
          this->put(kOwnerKey, put.record.to_json()).value_or_throw();
          set_alarm(put.record.expires_at_ms).value_or_throw();
          if (fresh && counters_) {
            after_commit(
                [c = counters_] { c->executions_paused.fetch_add(1, std::memory_order_relaxed); });
          }
          return true;
        },
        [this](const OwnerGet& get) -> std::string {
          auto record = read();
          if (!record) {
            dispose_empty();  // an id nobody owns leaves nothing behind
            return "";
          }
          if (record->execution_id != get.execution_id) return "";
          if (record->expires_at_ms <= clock().now_ms()) {
            forget();
            return "";
          }
          return record->to_json();
        },
        [this](const OwnerDelete& del) {
          auto record = read();
          if (!record || record->execution_id == del.execution_id) forget();
          return true;
        },
    };
  }
  void on_alarm(const AlarmInfo&) override { forget(); }

 private:
  std::optional<OwnerRecord> read() {
    auto stored = get(kOwnerKey).value_or_throw();
    if (!stored) return std::nullopt;
    return OwnerRecord::from_json(*stored);
  }
  // Nothing stays: storage, alarm, and the activation.
  void forget() {
    const bool held = get(kOwnerKey).value_or_throw().has_value();
    delete_all().value_or_throw();
    dispose_empty();
    if (held && counters_) {
      after_commit(
          [c = counters_] { c->executions_unpaused.fetch_add(1, std::memory_order_relaxed); });
    }
  }

  SessionCounters* counters_;
};

}  // namespace

std::string OwnerRecord::to_json() const {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("executionId");
  w.String(execution_id.c_str());
  w.Key("session");
  w.String(session_object.c_str());
  w.Key("user");
  w.String(principal.user.c_str());
  w.Key("org");
  w.String(principal.org.c_str());
  w.Key("expiresAt");
  w.Int64(expires_at_ms);
  w.Key("ttlMs");
  w.Int64(ttl_ms);
  w.EndObject();
  return buffer.GetString();
}

std::optional<OwnerRecord> OwnerRecord::from_json(std::string_view text) {
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) return std::nullopt;
  for (const char* key : {"executionId", "session", "user", "org"}) {
    if (!doc.HasMember(key) || !doc[key].IsString()) return std::nullopt;
  }
  for (const char* key : {"expiresAt", "ttlMs"}) {
    if (!doc.HasMember(key) || !doc[key].IsInt64()) return std::nullopt;
  }
  OwnerRecord r;
  r.execution_id = doc["executionId"].GetString();
  r.session_object = doc["session"].GetString();
  r.principal = mcp::Identity{doc["user"].GetString(), doc["org"].GetString()};
  r.expires_at_ms = doc["expiresAt"].GetInt64();
  r.ttl_ms = doc["ttlMs"].GetInt64();
  return r;
}

Result<ObjectHandle> owner_handle(Runtime& runtime, std::string_view execution_id) {
  return runtime.get(runtime.id_from_name(kExecutionOwnerNamespace, execution_id));
}

Result<void> register_execution_owner(Runtime& runtime, SessionCounters* counters) {
  return runtime.register_namespace(
      kExecutionOwnerNamespace, [counters] { return std::make_unique<ExecutionOwner>(counters); });
}

}  // namespace dorm::actors
