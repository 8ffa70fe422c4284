#include "inspect.hpp"

#include <cstdio>

#include "dorm/actors/namespaces.hpp"
#include "dorm/runtime/keys.hpp"
#include "dorm/runtime/log.hpp"
#include "dorm/storage/open.hpp"

namespace dorm::tools {
namespace {

Result<SessionReport> read_session_report(StoreInspector& inspector, storage::Backend& backend,
                                          StoredObject object, const InspectOptions& options) {
  SessionReport out;
  auto usage = inspector.usage(object);
  if (!usage) return std::move(usage).error();
  out.usage = *usage;
  auto alarms = inspector.object_alarms(object);
  if (!alarms) return std::move(alarms).error();
  out.alarms = std::move(*alarms);
  mcp::ReadOnlySessionStore store(backend, StoreInspector::data_prefix(object));
  mcp::SnapshotOptions snapshot;
  snapshot.max_events = options.events;
  auto read = mcp::read_session(store, snapshot);
  if (!read) return std::move(read).error();
  out.snapshot = std::move(*read);
  out.object = std::move(object);
  return out;
}

}  // namespace

Result<StoreReport> collect_report(storage::Backend& backend, const InspectOptions& options) {
  StoreReport report;
  report.options = options;
  report.storage = backend.describe();
  auto opened = StoreInspector::open(backend);
  if (!opened) return std::move(opened).error();
  StoreInspector& inspector = *opened;
  report.ids_complete = inspector.ids_complete();

  auto state = inspector.runtime_state();
  if (!state) return std::move(state).error();
  report.runtime = std::move(*state);
  auto namespaces = inspector.namespaces();
  if (!namespaces) return std::move(namespaces).error();
  report.namespaces = std::move(*namespaces);
  for (const auto& ns : report.namespaces) {
    if (ns.ns == actors::kMcpSessionNamespace) report.sessions_total = ns.objects;
  }

  auto indexes = inspector.indexes();
  if (!indexes) return std::move(indexes).error();
  for (auto& count : *indexes) {
    IndexReport index{std::move(count), {}};
    if (index.count.index == keys::kAlarmIndex) {
      // Shown as alarms, decoded.
      report.alarms_total = index.count.entries;
    } else {
      auto entries = inspector.index_entries(index.count.index, options.limit);
      if (!entries) return std::move(entries).error();
      index.entries = std::move(*entries);
    }
    report.indexes.push_back(std::move(index));
  }
  auto alarms = inspector.alarms(options.limit);
  if (!alarms) return std::move(alarms).error();
  report.alarms = std::move(*alarms);

  std::vector<StoredObject> chosen;
  if (options.session.empty() || options.session == "all") {
    auto objects = inspector.objects(actors::kMcpSessionNamespace,
                                     options.session == "all" ? 0 : options.limit);
    if (!objects) return std::move(objects).error();
    chosen = std::move(*objects);
  } else {
    auto found = inspector.find_object(actors::kMcpSessionNamespace, options.session);
    if (!found) return std::move(found).error();
    if (!*found) {
      return Error{ErrorCode::not_found,
                   "no session '" + options.session + "' in " + report.storage};
    }
    chosen.push_back(std::move(**found));
  }
  for (auto& object : chosen) {
    auto session = read_session_report(inspector, backend, std::move(object), options);
    if (!session) return std::move(session).error();
    report.sessions.push_back(std::move(*session));
  }
  return report;
}

int inspect(const InspectOptions& options) {
  std::optional<storage::BackupManifest> backup;
  std::string uri = options.storage;
  if (storage::is_backup_dir(options.storage)) {
    auto manifest = storage::read_backup_manifest(options.storage);
    if (!manifest) {
      log::error("inspect_failed",
                 {{"storage", options.storage}, {"error", manifest.error().message}});
      return 1;
    }
    uri = storage::backup_store_uri(options.storage, *manifest).to_string();
    backup = std::move(*manifest);
  }
  auto backend = storage::open_backend(uri, storage::OpenMode::read_only);
  if (!backend) {
    log::error("inspect_failed",
               {{"storage", options.storage}, {"error", backend.error().message}});
    return 1;
  }
  auto report = collect_report(**backend, options);
  if (!report) {
    log::error("inspect_failed", {{"storage", options.storage}, {"error", report.error().message}});
    return 1;
  }
  report->backup = std::move(backup);
  std::string out = options.json ? format_json(*report) + "\n" : format_text(*report);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace dorm::tools
