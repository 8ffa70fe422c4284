#include "startup_snapshot.hpp"

#include "source_prep.hpp"

namespace dorm::engine::sandbox {

std::unique_ptr<StartupSnapshot> build_startup_snapshot(std::span<const BridgeFunction> bridge) {
  auto made = std::make_unique<StartupSnapshot>();
  for (const BridgeFunction& f : bridge) {
    made->external_references.push_back(reinterpret_cast<std::intptr_t>(f.callback));
  }
  made->external_references.push_back(0);
  std::optional<std::size_t> index;
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
    made->blob = creator.CreateBlob(v8::SnapshotCreator::FunctionCodeHandling::kKeep);
  }
  if (!index || made->blob.data == nullptr || made->blob.raw_size <= 0) return nullptr;
  made->preparer_context = *index;
  return made;
}

StartupSnapshot* startup_snapshot(std::span<const BridgeFunction> bridge) {
  static StartupSnapshot* snapshot = build_startup_snapshot(bridge).release();
  return snapshot;
}

}  // namespace dorm::engine::sandbox
