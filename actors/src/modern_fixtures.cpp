// The conformance suite's fixtures for MCP 2026-07-28 (part of `--fixtures conformance`):
// the tools its server-stateless and input-required-result-* scenarios call by name. Each
// asks for input through ToolContext::ask under the key the scenario expects, so in the
// modern era it answers `input_required` and in a 2025 session it sends the client the
// same requests over the call's stream.
#include <rapidjson/document.h>

#include <map>
#include <memory>
#include <string>

#include "conformance_fixtures.hpp"
#include "dorm/mcp/jsonrpc.hpp"
#include "dorm/mcp/prompt_registry.hpp"
#include "dorm/mcp/tool_registry.hpp"

namespace dorm::actors {
namespace {

using mcp::ClientReply;
using mcp::ToolContext;
using mcp::ToolResult;
using mcp::ToolSpec;

constexpr const char* kNoArguments = R"({"type":"object","properties":{}})";

std::string ask_text(std::string_view message, std::string_view field, std::string_view type) {
  rapidjson::Document params(rapidjson::kObjectType);
  auto& a = params.GetAllocator();
  auto str = [&a](std::string_view s) { return rapidjson::Value(s.data(), static_cast<rapidjson::SizeType>(s.size()), a); };
  params.AddMember("message", str(message), a);
  rapidjson::Value schema(rapidjson::kObjectType), properties(rapidjson::kObjectType), property(rapidjson::kObjectType),
      required(rapidjson::kArrayType);
  property.AddMember("type", str(type), a);
  properties.AddMember(str(field), property, a);
  required.PushBack(str(field), a);
  schema.AddMember("type", "object", a);
  schema.AddMember("properties", properties, a);
  schema.AddMember("required", required, a);
  params.AddMember("requestedSchema", schema, a);
  return json_of(params);
}

std::string sampling(std::string_view prompt, int max_tokens) {
  rapidjson::Document params(rapidjson::kObjectType);
  auto& a = params.GetAllocator();
  rapidjson::Value messages(rapidjson::kArrayType), message(rapidjson::kObjectType), content(rapidjson::kObjectType);
  content.AddMember("type", "text", a);
  content.AddMember("text", rapidjson::Value(prompt.data(), static_cast<rapidjson::SizeType>(prompt.size()), a), a);
  message.AddMember("role", "user", a);
  message.AddMember("content", content, a);
  messages.PushBack(message, a);
  params.AddMember("messages", messages, a);
  params.AddMember("maxTokens", max_tokens, a);
  return json_of(params);
}

// What the client answered, in a few words: the accepted field of an elicitation, the
// text of a sampling answer, the URIs of a roots list.
std::string summary(const ClientReply& reply, std::string_view field = {}) {
  if (reply.kind != ClientReply::Kind::result) return "(" + reply.message + ")";
  rapidjson::Document answer;
  answer.Parse(reply.json.c_str());
  if (answer.HasParseError() || !answer.IsObject()) return "(unreadable)";
  if (answer.HasMember("action")) {
    std::string action = answer["action"].IsString() ? answer["action"].GetString() : "?";
    if (action != "accept") return action;
    if (!field.empty() && answer.HasMember("content") && answer["content"].IsObject()) {
      const auto& content = answer["content"];
      std::string key(field);
      if (content.HasMember(key.c_str())) return json_of(content[key.c_str()]);
    }
    return "accepted";
  }
  if (answer.HasMember("roots") && answer["roots"].IsArray()) {
    std::string out;
    for (const auto& root : answer["roots"].GetArray()) {
      if (root.IsObject() && root.HasMember("uri") && root["uri"].IsString()) {
        out += (out.empty() ? "" : ", ") + std::string(root["uri"].GetString());
      }
    }
    return out.empty() ? "no roots" : out;
  }
  if (answer.HasMember("content") && answer["content"].IsObject() && answer["content"].HasMember("text") &&
      answer["content"]["text"].IsString()) {
    return answer["content"]["text"].GetString();
  }
  return "answered";
}

// A tool with no arguments that asks one question and finishes with `done(summary)`.
ToolSpec one_question(const char* name, const char* description, const char* key, const char* method,
                      std::string params, std::string field,
                      std::function<std::string(const std::string&)> done) {
  ToolSpec t;
  t.name = name;
  t.description = description;
  t.input_schema = kNoArguments;
  t.handler = [key, method, params = std::move(params), field = std::move(field),
               done = std::move(done)](std::shared_ptr<ToolContext> ctx) {
    auto asked = ctx->ask(key, method, params, [ctx, field, done](const ClientReply& reply) {
      ctx->finish(ToolResult::text(done(summary(reply, field))));
    });
    if (!asked) ctx->finish(ToolResult::error(asked.error().message));
  };
  return t;
}

// Asks every question of `questions` (key, method, params) at once and finishes when all
// are answered.
ToolSpec all_at_once(const char* name, const char* description,
                     std::vector<std::array<std::string, 3>> questions) {
  ToolSpec t;
  t.name = name;
  t.description = description;
  t.input_schema = kNoArguments;
  t.handler = [questions = std::move(questions)](std::shared_ptr<ToolContext> ctx) {
    auto answers = std::make_shared<std::map<std::string, std::string>>();
    for (const auto& [key, method, params] : questions) {
      auto asked = ctx->ask(key, method, params, [ctx, answers, key, n = questions.size()](const ClientReply& reply) {
        (*answers)[key] = summary(reply, "name");
        if (answers->size() < n) return;
        std::string text;
        for (const auto& [k, v] : *answers) text += (text.empty() ? "" : "; ") + k + ": " + v;
        ctx->finish(ToolResult::text(text));
      });
      if (!asked) return ctx->finish(ToolResult::error(asked.error().message));
    }
  };
  return t;
}

ToolSpec task_tool(const char* name, const char* description, const char* schema, mcp::TaskSupport support,
                   mcp::ToolHandler handler) {
  ToolSpec t;
  t.name = name;
  t.description = description;
  t.input_schema = schema;
  t.task_support = support;
  t.handler = std::move(handler);
  return t;
}

std::string string_arg(const std::shared_ptr<ToolContext>& ctx, const char* key) {
  rapidjson::Document args;
  args.Parse(ctx->arguments().c_str());
  return args.HasMember(key) && args[key].IsString() ? args[key].GetString() : std::string();
}

// The Tasks extension's scenarios (tasks-*): a quick tool that never becomes a task, slow
// and failing work that does, and tasks that stop for input.
std::vector<ToolSpec> task_fixtures(const std::string& name_question) {
  using mcp::TaskSupport;
  std::vector<ToolSpec> out;
  out.push_back(task_tool("greet", "Greets `name` at once (never a task).",
                          R"({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]})",
                          TaskSupport::forbidden, [](std::shared_ptr<ToolContext> ctx) {
                            ctx->finish(ToolResult::text("Hello, " + string_arg(ctx, "name") + "!"));
                          }));
  out.push_back(task_tool(
      "slow_compute", "Works for `seconds` (0 to 3600), then reports `label`; a task when the client allows.",
      R"({"type":"object","properties":{"seconds":{"type":"integer","minimum":0,"maximum":3600},"label":{"type":"string"}},"required":["seconds"]})",
      TaskSupport::optional, [](std::shared_ptr<ToolContext> ctx) {
        rapidjson::Document args;
        args.Parse(ctx->arguments().c_str());
        std::int64_t seconds = args["seconds"].GetInt64();
        std::string label = args.HasMember("label") && args["label"].IsString() ? args["label"].GetString() : "work";
        ctx->after(std::chrono::seconds(seconds), [ctx, seconds, label] {
          ctx->finish(ToolResult::text("computed " + label + " in " + std::to_string(seconds) + " s"));
        });
      }));
  out.push_back(task_tool("failing_job", "Runs only as a task; after a second its tool fails (an isError result).",
                          kNoArguments, TaskSupport::required, [](std::shared_ptr<ToolContext> ctx) {
                            ctx->after(std::chrono::seconds(1),
                                       [ctx] { ctx->finish(ToolResult::error("the job failed, as it always does")); });
                          }));
  out.push_back(task_tool("protocol_error_job", "After half a second ends with a protocol error (-32603): a failed task.",
                          kNoArguments, TaskSupport::optional, [](std::shared_ptr<ToolContext> ctx) {
                            ctx->after(std::chrono::milliseconds(500),
                                       [ctx] { ctx->fail(mcp::kInternalError, "the job's machinery broke"); });
                          }));
  out.push_back(task_tool(
      "confirm_delete", "Asks the user to confirm deleting `filename` (as a task: through tasks/get and tasks/update).",
      R"({"type":"object","properties":{"filename":{"type":"string"}},"required":["filename"]})", TaskSupport::optional,
      [](std::shared_ptr<ToolContext> ctx) {
        std::string file = string_arg(ctx, "filename");
        ctx->after(std::chrono::milliseconds(50), [ctx, file] {
          auto asked = ctx->ask("confirm", "elicitation/create", ask_text("Delete " + file + "?", "confirm", "boolean"),
                                [ctx, file](const ClientReply& reply) {
                                  bool yes = summary(reply, "confirm") == "true";
                                  ctx->finish(ToolResult::text(yes ? "deleted " + file : "kept " + file));
                                });
          if (!asked) ctx->finish(ToolResult::error(asked.error().message));
        });
      }));
  out.push_back(task_tool(
      "multi_input", "Asks two questions at once (a name and a confirmation); either may be answered first.",
      kNoArguments, TaskSupport::optional, [name_question](std::shared_ptr<ToolContext> ctx) {
        ctx->after(std::chrono::milliseconds(50), [ctx, name_question] {
          auto answers = std::make_shared<std::map<std::string, std::string>>();
          for (const auto& [key, params] : {std::pair<std::string, std::string>{"name", name_question},
                                            {"confirm", ask_text("Go ahead?", "confirm", "boolean")}}) {
            auto asked = ctx->ask(key, "elicitation/create", params, [ctx, answers, key = key](const ClientReply& reply) {
              (*answers)[key] = summary(reply, key);
              if (answers->size() == 2) {
                ctx->finish(ToolResult::text("name " + (*answers)["name"] + ", confirm " + (*answers)["confirm"]));
              }
            });
            if (!asked) return ctx->finish(ToolResult::error(asked.error().message));
          }
        });
      }));
  out.push_back(task_tool(
      "test_tool_with_task",
      "Asks the user's name on the request itself (input_required), then does its work as a task.", kNoArguments,
      TaskSupport::required, [name_question](std::shared_ptr<ToolContext> ctx) {
        auto asked = ctx->ask("user_name", "elicitation/create", name_question, [ctx](const ClientReply& reply) {
          std::string name = summary(reply, "name");
          ctx->after(std::chrono::milliseconds(100), [ctx, name] { ctx->finish(ToolResult::text("Hello, " + name + "!")); });
        });
        if (!asked) ctx->finish(ToolResult::error(asked.error().message));
      }));
  return out;
}

}  // namespace

Result<void> register_modern_conformance_tools(mcp::ToolRegistry& registry) {
  std::vector<ToolSpec> out;
  const std::string name_question = ask_text("What is your name?", "name", "string");
  out.push_back(one_question("test_input_required_result_elicitation",
                             "Asks the user's name (input_required with elicitation/create, key user_name).",
                             "user_name", "elicitation/create", name_question, "name",
                             [](const std::string& name) { return "Hello, " + name + "!"; }));
  out.push_back(one_question("test_input_required_result_sampling",
                             "Asks the model for the capital of France (key capital_question).",
                             "capital_question", "sampling/createMessage",
                             sampling("What is the capital of France?", 100), {},
                             [](const std::string& text) { return "The model answered: " + text; }));
  out.push_back(one_question("test_input_required_result_list_roots", "Asks the client for its roots (key client_roots).",
                             "client_roots", "roots/list", "{}", {},
                             [](const std::string& roots) { return "Client roots: " + roots; }));
  for (const char* name : {"test_input_required_result_request_state", "test_input_required_result_tampered_state"}) {
    out.push_back(one_question(name, "Asks for a confirmation; the answer comes back with the requestState (key confirm).",
                               "confirm", "elicitation/create", ask_text("Please confirm", "ok", "boolean"), "ok",
                               [](const std::string& ok) { return "state-ok: confirmed " + ok; }));
  }
  out.push_back(all_at_once("test_input_required_result_multiple_inputs",
                            "Asks three questions at once: a name, a greeting from the model, the roots.",
                            {{"user_name", "elicitation/create", name_question},
                             {"greeting", "sampling/createMessage", sampling("Generate a greeting", 50)},
                             {"client_roots", "roots/list", "{}"}}));
  {
    ToolSpec t;
    t.name = "test_input_required_result_multi_round";
    t.description = "Asks a name, then a favourite colour: two rounds (keys step1, step2).";
    t.input_schema = kNoArguments;
    t.handler = [](std::shared_ptr<ToolContext> ctx) {
      auto asked = ctx->ask("step1", "elicitation/create", ask_text("Step 1: What is your name?", "name", "string"),
                            [ctx](const ClientReply& first) {
                              auto name = summary(first, "name");
                              auto again = ctx->ask(
                                  "step2", "elicitation/create",
                                  ask_text("Step 2: What is your favorite color?", "color", "string"),
                                  [ctx, name](const ClientReply& second) {
                                    ctx->finish(ToolResult::text("name " + name + ", color " + summary(second, "color")));
                                  });
                              if (!again) ctx->finish(ToolResult::error(again.error().message));
                            });
      if (!asked) ctx->finish(ToolResult::error(asked.error().message));
    };
    out.push_back(std::move(t));
  }
  {
    // Asks by whatever the request's client declared: a form if it can show one, else the
    // model. Neither: the call stops and the answer is -32021.
    ToolSpec t;
    t.name = "test_input_required_result_capabilities";
    t.description = "Asks the user by elicitation if the client declared it, else by sampling.";
    t.input_schema = kNoArguments;
    t.handler = [](std::shared_ptr<ToolContext> ctx) {
      auto finish = [ctx](const ClientReply& reply) { ctx->finish(ToolResult::text("Answer: " + summary(reply, "name"))); };
      if (ctx->ask("user_name", "elicitation/create", ask_text("What is your name?", "name", "string"), finish)) return;
      auto asked = ctx->ask("user_input", "sampling/createMessage", sampling("Make up a name", 20), finish);
      if (!asked) ctx->finish(ToolResult::error(asked.error().message));
    };
    out.push_back(std::move(t));
  }
  {
    // Needs sampling and nothing else will do: a client that did not declare it gets -32021.
    ToolSpec t;
    t.name = "test_missing_capability";
    t.description = "Needs the sampling capability (a request without it is answered -32021).";
    t.input_schema = kNoArguments;
    t.handler = [](std::shared_ptr<ToolContext> ctx) {
      auto asked = ctx->ask("sample", "sampling/createMessage", sampling("Say hello", 20), [ctx](const ClientReply& reply) {
        ctx->finish(ToolResult::text("Sampled: " + summary(reply)));
      });
      if (!asked) ctx->finish(ToolResult::error(asked.error().message));
    };
    out.push_back(std::move(t));
  }
  {
    // Progress first, then a question: the response stream carries notifications and the
    // result, never a request of the server's.
    ToolSpec t;
    t.name = "test_streaming_elicitation";
    t.description = "Reports progress, then asks the user for a name.";
    t.input_schema = kNoArguments;
    t.handler = [name_question](std::shared_ptr<ToolContext> ctx) {
      ctx->progress(1, 2, "about to ask");
      auto asked = ctx->ask("user_name", "elicitation/create", name_question, [ctx](const ClientReply& reply) {
        ctx->finish(ToolResult::text("Hello, " + summary(reply, "name") + "!"));
      });
      if (!asked) ctx->finish(ToolResult::error(asked.error().message));
    };
    out.push_back(std::move(t));
  }
  {
    ToolSpec t;
    t.name = "test_logging_tool";
    t.description = "Logs three messages (sent only to a request that set a logLevel), then finishes.";
    t.input_schema = kNoArguments;
    t.handler = [](std::shared_ptr<ToolContext> ctx) {
      for (const char* level : {"info", "warning", "error"}) {
        ctx->log(level, std::string(R"({"message":"a )") + level + R"( message from test_logging_tool"})");
      }
      ctx->finish(ToolResult::text("logged 3 messages"));
    };
    out.push_back(std::move(t));
  }
  {
    // An argument the client also sends as a header (Mcp-Param-Region), for proxies that
    // route by it without reading the body (x-mcp-header, MCP 2026-07-28).
    ToolSpec t;
    t.name = "test_header_param";
    t.description = "Echoes its region argument, which clients of 2026-07-28 also send as Mcp-Param-Region.";
    t.input_schema =
        R"({"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]})";
    t.handler = [](std::shared_ptr<ToolContext> ctx) {
      rapidjson::Document args;
      args.Parse(ctx->arguments().c_str());
      ctx->finish(ToolResult::text(std::string("region: ") + args["region"].GetString()));
    };
    out.push_back(std::move(t));
  }
  for (const char* list : {"tools", "prompts"}) {
    // Says the list changed (the list itself is fixed: the notification is what is tested).
    ToolSpec t;
    t.name = std::string("test_trigger_") + (list == std::string("tools") ? "tool" : "prompt") + "_change";
    t.description = std::string("Announces that the ") + list + " list changed (notifications/" + list +
                    "/list_changed to every listener).";
    t.input_schema = kNoArguments;
    t.handler = [method = std::string("notifications/") + list + "/list_changed"](std::shared_ptr<ToolContext> ctx) {
      ctx->notify_session(method, "{}");
      ctx->finish(ToolResult::text("announced " + method));
    };
    out.push_back(std::move(t));
  }
  for (auto& spec : task_fixtures(name_question)) out.push_back(std::move(spec));
  for (auto& spec : out) {
    if (auto ok = registry.add(std::move(spec)); !ok) return ok;
  }
  return {};
}

Result<void> register_modern_conformance_prompts(mcp::PromptRegistry& registry) {
  // Asks the user what context to use (key user_context); a 2025 session cannot ask, and
  // gets the prompt without it.
  mcp::PromptSpec p;
  p.name = "test_input_required_result_prompt";
  p.description = "A prompt that asks the user for its context first (input_required on prompts/get).";
  p.handler = [](const mcp::PromptGet& get) -> Result<std::string> {
    std::string context = "(no context given)";
    if (get.input) {
      auto answer = get.input->ask("user_context", "elicitation/create",
                                   ask_text("What context should the prompt use?", "context", "string"));
      if (!answer) return std::move(answer).error();
      if (*answer) {
        rapidjson::Document reply;
        reply.Parse((*answer)->c_str());
        if (reply.HasMember("content") && reply["content"].IsObject() && reply["content"].HasMember("context") &&
            reply["content"]["context"].IsString()) {
          context = reply["content"]["context"].GetString();
        }
      }
    }
    return mcp::prompt_result(
        {mcp::PromptMessage::user(mcp::Content::text("Answer with this context in mind: " + context))});
  };
  return registry.add(std::move(p));
}

}  // namespace dorm::actors
