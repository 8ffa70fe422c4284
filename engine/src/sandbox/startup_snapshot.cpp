#include "startup_snapshot.hpp"

#include <climits>

#include "source_prep.hpp"

namespace dorm::engine::sandbox {

namespace {

std::vector<std::intptr_t> external_references(std::span<const BridgeFunction> bridge) {
  std::vector<std::intptr_t> table;
  for (const BridgeFunction& f : bridge) table.push_back(reinterpret_cast<std::intptr_t>(f.callback));
  table.push_back(0);
  return table;
}

}  // namespace

std::unique_ptr<StartupSnapshot> build_startup_snapshot(std::span<const BridgeFunction> bridge) {
  auto made = std::make_unique<StartupSnapshot>();
  made->external_references = external_references(bridge);
  std::optional<std::size_t> index;
  v8::StartupData blob{nullptr, 0};
  {
    v8::SnapshotCreator creator(made->external_references.data());
    v8::Isolate* isolate = creator.GetIsolate();
    {
      v8::HandleScope handles(isolate);
      creator.SetDefaultContext(v8::Context::New(isolate));
      index = SourcePreparer::add_to_snapshot(creator);
      if (index && !bridge.empty()) made->prelude = add_prelude_context(creator, bridge);
    }
    // Functions compiled while the preparer warmed up keep their bytecode.
    blob = creator.CreateBlob(v8::SnapshotCreator::FunctionCodeHandling::kKeep);
  }
  std::unique_ptr<const char[]> owned(blob.data);
  if (!index || blob.data == nullptr || blob.raw_size <= 0) return nullptr;
  made->set_bytes(std::string(blob.data, static_cast<std::size_t>(blob.raw_size)));
  made->preparer_context = *index;
  return made;
}

wire::Snapshot to_wire(const StartupSnapshot& snapshot, std::uint64_t hash_seed) {
  wire::Snapshot m;
  m.hash_seed = hash_seed;
  m.preparer_context = static_cast<std::uint32_t>(snapshot.preparer_context);
  m.has_prelude = snapshot.prelude.has_value();
  if (snapshot.prelude) {
    m.prelude_context = static_cast<std::uint32_t>(snapshot.prelude->context);
    m.prelude_hooks = static_cast<std::uint32_t>(snapshot.prelude->hooks);
  }
  m.blob.assign(snapshot.blob.data, static_cast<std::size_t>(snapshot.blob.raw_size));
  return m;
}

std::unique_ptr<StartupSnapshot> from_wire(wire::Snapshot message,
                                           std::span<const BridgeFunction> bridge) {
  // A prelude context needs the bridge it was made over; V8 refuses a blob over INT_MAX.
  if (message.blob.empty() || message.blob.size() > static_cast<std::size_t>(INT_MAX) ||
      (message.has_prelude && bridge.empty())) {
    return nullptr;
  }
  auto adopted = std::make_unique<StartupSnapshot>();
  adopted->external_references = external_references(bridge);
  adopted->preparer_context = message.preparer_context;
  if (message.has_prelude) {
    adopted->prelude = PreludeContextIndex{message.prelude_context, message.prelude_hooks};
  }
  adopted->set_bytes(std::move(message.blob));
  return adopted;
}

StartupSnapshot* startup_snapshot(std::span<const BridgeFunction> bridge) {
  static StartupSnapshot* snapshot = build_startup_snapshot(bridge).release();
  return snapshot;
}

}  // namespace dorm::engine::sandbox
