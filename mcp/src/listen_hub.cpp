#include "dorm/mcp/listen_hub.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "dorm/mcp/modern.hpp"
#include "dorm/mcp/sse_data.hpp"

namespace dorm::mcp {
namespace {

// `params_json` (an object) with _meta.subscriptionId added, as a notification SSE event.
std::string event(std::string_view method, std::string_view params_json, std::string_view id_json) {
  rapidjson::Document params;
  params.Parse(params_json.data(), params_json.size());
  if (params.HasParseError() || !params.IsObject()) params.SetObject();
  auto& a = params.GetAllocator();
  rapidjson::Document id;
  id.Parse(id_json.data(), id_json.size());
  rapidjson::Value meta(rapidjson::kObjectType);
  meta.AddMember("io.modelcontextprotocol/subscriptionId", rapidjson::Value(id, a), a);
  params.RemoveMember("_meta");
  params.AddMember("_meta", meta, a);
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  params.Accept(w);
  std::string out = "event: message\n";
  append_sse_data(out, notification(method, std::string_view(buffer.GetString(), buffer.GetSize())));
  out += '\n';
  return out;
}

}  // namespace

std::string ListenFilter::to_json() const {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  if (tools_list_changed) {
    w.Key("toolsListChanged");
    w.Bool(true);
  }
  if (prompts_list_changed) {
    w.Key("promptsListChanged");
    w.Bool(true);
  }
  if (resources_list_changed) {
    w.Key("resourcesListChanged");
    w.Bool(true);
  }
  for (const auto* set : {&resource_uris, &task_ids}) {
    if (set->empty()) continue;
    w.Key(set == &resource_uris ? "resourceSubscriptions" : "taskIds");
    w.StartArray();
    for (const auto& item : *set) w.String(item.data(), static_cast<rapidjson::SizeType>(item.size()));
    w.EndArray();
  }
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

void ListenHub::write(Subscription& s, std::string_view method, std::string_view params_json) {
  if (s.body->write(event(method, params_json, s.id_json)) > max_unsent_) s.body->abort();
}

void ListenHub::add(std::shared_ptr<StreamBody> body, const RequestId& id, ListenFilter filter) {
  Subscription s{std::move(body), id.to_json(), std::move(filter)};
  std::string ack = "{\"notifications\":" + s.filter.to_json() + "}";
  std::lock_guard lock(mutex_);
  write(s, "notifications/subscriptions/acknowledged", ack);
  subscriptions_.push_back(std::move(s));
}

template <class Wants>
void ListenHub::publish(Wants wants, std::string_view method, std::string_view params_json) {
  std::lock_guard lock(mutex_);
  std::erase_if(subscriptions_, [](const Subscription& s) { return s.body->closed(); });
  for (auto& s : subscriptions_) {
    if (wants(s.filter)) write(s, method, params_json);
  }
}

std::optional<ListenHub::List> ListenHub::list_of(std::string_view method) {
  if (method == "notifications/tools/list_changed") return List::tools;
  if (method == "notifications/prompts/list_changed") return List::prompts;
  if (method == "notifications/resources/list_changed") return List::resources;
  return std::nullopt;
}

void ListenHub::list_changed(List list) {
  switch (list) {
    case List::tools:
      return publish([](const ListenFilter& f) { return f.tools_list_changed; }, "notifications/tools/list_changed", "{}");
    case List::prompts:
      return publish([](const ListenFilter& f) { return f.prompts_list_changed; }, "notifications/prompts/list_changed",
                     "{}");
    case List::resources:
      return publish([](const ListenFilter& f) { return f.resources_list_changed; },
                     "notifications/resources/list_changed", "{}");
  }
}

void ListenHub::resource_updated(std::string_view uri) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("uri");
  w.String(uri.data(), static_cast<rapidjson::SizeType>(uri.size()));
  w.EndObject();
  std::string key(uri);
  publish([&key](const ListenFilter& f) { return f.resource_uris.count(key) > 0; }, "notifications/resources/updated",
          std::string_view(buffer.GetString(), buffer.GetSize()));
}

void ListenHub::task_status(std::string_view task_id, const Identity& owner, std::string_view task_json) {
  std::string key(task_id);
  publish([&](const ListenFilter& f) { return f.task_ids.count(key) > 0 && f.owner == owner; }, "notifications/tasks",
          task_json);
}

void ListenHub::end_all() {
  std::lock_guard lock(mutex_);
  for (auto& s : subscriptions_) {
    std::string result = std::string(R"({"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":)") +
                         s.id_json + "}}";
    rapidjson::Document id;
    id.Parse(s.id_json.c_str());
    auto request_id = id.IsInt64() ? RequestId(id.GetInt64()) : RequestId(std::string(id.GetString(), id.GetStringLength()));
    std::string out = "event: message\n";
    append_sse_data(out, result_response(request_id, result));
    out += '\n';
    s.body->write(out);
    s.body->end();
  }
  subscriptions_.clear();
}

std::size_t ListenHub::size() const {
  std::lock_guard lock(mutex_);
  return subscriptions_.size();
}

}  // namespace dorm::mcp
