#include "dorm/mcp/notifications.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "dorm/mcp/jsonrpc.hpp"

namespace dorm::mcp {

std::string progress_notification(std::string_view token_json, double progress, std::optional<double> total,
                                  std::string_view message) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("progressToken");
  w.RawValue(token_json.data(), token_json.size(), rapidjson::kStringType);
  w.Key("progress");
  w.Double(progress);
  if (total) {
    w.Key("total");
    w.Double(*total);
  }
  if (!message.empty()) {
    w.Key("message");
    w.String(message.data(), static_cast<rapidjson::SizeType>(message.size()));
  }
  w.EndObject();
  return notification("notifications/progress", buffer.GetString());
}

std::string log_notification(std::string_view level, std::string_view data_json) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("level");
  w.String(level.data(), static_cast<rapidjson::SizeType>(level.size()));
  w.Key("data");
  w.RawValue(data_json.data(), data_json.size(), rapidjson::kObjectType);
  w.EndObject();
  return notification("notifications/message", buffer.GetString());
}

}  // namespace dorm::mcp
