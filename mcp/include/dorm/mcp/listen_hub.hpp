// ListenHub — the open `subscriptions/listen` streams of MCP 2026-07-28, and what is
// published to them.
//
// The modern era has no session stream: a client that wants to hear of list changes and
// resource updates opens a subscription, one POST of `subscriptions/listen` whose SSE
// response stays open. Its first event is `notifications/subscriptions/acknowledged` with
// the part of the filter the server honours; every later event is a notification the
// filter asked for, and each carries `_meta["io.modelcontextprotocol/subscriptionId"]`, the
// listen request's id. The hub keeps the open subscriptions of this process (they are
// connections, not durable state: a client whose stream breaks listens again); tools
// publish to it through their ToolContext once their turn has committed, in either era.
//
// Thread-safe. A subscription whose client does not read (more than `max_unsent` bytes
// queued) is cut, as the sessions' live connections are; one whose connection closed is
// forgotten at the next publish.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/mcp/auth_tokens.hpp"
#include "dorm/mcp/http_server.hpp"
#include "dorm/mcp/jsonrpc.hpp"

namespace dorm::mcp {

// What a subscription hears (SubscriptionFilter, as honoured).
struct ListenFilter {
  bool tools_list_changed = false;
  bool prompts_list_changed = false;
  bool resources_list_changed = false;
  std::set<std::string> resource_uris;  // resourceSubscriptions
  std::set<std::string> task_ids;       // taskIds (the Tasks extension)
  Identity owner;                       // who listens: a task's changes reach its owner only

  // {"toolsListChanged":true,…}: what the acknowledgement says is honoured.
  std::string to_json() const;
};

class ListenHub {
 public:
  explicit ListenHub(std::size_t max_unsent = 1024 * 1024) : max_unsent_(max_unsent) {}

  // Starts a subscription answering request `id` on `body` (whose response head the
  // caller sends): writes the acknowledgement first.
  void add(std::shared_ptr<StreamBody> body, const RequestId& id, ListenFilter filter);

  // notifications/{tools,prompts,resources}/list_changed to the subscriptions that asked.
  enum class List { tools, prompts, resources };
  void list_changed(List list);
  // notifications/resources/updated {uri} to the subscriptions of `uri`.
  void resource_updated(std::string_view uri);
  // notifications/tasks (params: the DetailedTask `task_json`, an object) to the
  // subscriptions of `owner` that asked for `task_id`.
  void task_status(std::string_view task_id, const Identity& owner, std::string_view task_json);
  // The notification method of a list change, or nullopt for any other method.
  static std::optional<List> list_of(std::string_view method);

  // Ends every subscription with its SubscriptionsListenResult (the server is stopping).
  void end_all();
  // Open subscriptions (those whose connection closed are counted until the next publish).
  std::size_t size() const;

 private:
  struct Subscription {
    std::shared_ptr<StreamBody> body;
    std::string id_json;
    ListenFilter filter;
  };
  // Writes `method` with `params_json` (an object, without _meta) to each subscription
  // `wants` accepts; forgets closed ones and cuts slow readers.
  template <class Wants>
  void publish(Wants wants, std::string_view method, std::string_view params_json);
  void write(Subscription& s, std::string_view method, std::string_view params_json);

  const std::size_t max_unsent_;
  mutable std::mutex mutex_;
  std::vector<Subscription> subscriptions_;
};

}  // namespace dorm::mcp
