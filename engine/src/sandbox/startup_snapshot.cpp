#include "startup_snapshot.hpp"

#include "source_prep.hpp"

namespace dorm::engine::sandbox {

StartupSnapshot* startup_snapshot() {
  static StartupSnapshot* snapshot = []() -> StartupSnapshot* {
    auto* made = new StartupSnapshot();
    std::optional<std::size_t> index;
    {
      v8::SnapshotCreator creator;
      v8::Isolate* isolate = creator.GetIsolate();
      {
        v8::HandleScope handles(isolate);
        creator.SetDefaultContext(v8::Context::New(isolate));
        index = SourcePreparer::add_to_snapshot(creator);
      }
      // Functions compiled while the preparer warmed up keep their bytecode.
      made->blob = creator.CreateBlob(v8::SnapshotCreator::FunctionCodeHandling::kKeep);
    }
    if (!index || made->blob.data == nullptr || made->blob.raw_size <= 0) {
      delete[] made->blob.data;
      delete made;
      return nullptr;
    }
    made->preparer_context = *index;
    return made;  // lives as long as the process: isolates read it while they exist
  }();
  return snapshot;
}

}  // namespace dorm::engine::sandbox
