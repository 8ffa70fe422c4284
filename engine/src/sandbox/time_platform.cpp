// Compiled with -fno-rtti: HostTimePlatform derives from v8::Platform, and Debian's libnode
// exports no typeinfo for it.
#include "time_platform.hpp"

#include <libplatform/libplatform.h>
#include <v8.h>

#include <cmath>
#include <sys/random.h>

namespace dorm::engine::sandbox {
namespace {

thread_local double t_host_time = NAN;

class HostTimePlatform final : public v8::Platform {
 public:
  explicit HostTimePlatform(std::unique_ptr<v8::Platform> inner) : inner_(std::move(inner)) {}

  v8::Platform& inner() { return *inner_; }

  v8::PageAllocator* GetPageAllocator() override { return inner_->GetPageAllocator(); }
  void OnCriticalMemoryPressure() override { inner_->OnCriticalMemoryPressure(); }
  int NumberOfWorkerThreads() override { return inner_->NumberOfWorkerThreads(); }
  std::shared_ptr<v8::TaskRunner> GetForegroundTaskRunner(v8::Isolate* isolate) override {
    return inner_->GetForegroundTaskRunner(isolate);
  }
  void CallOnWorkerThread(std::unique_ptr<v8::Task> task) override {
    inner_->CallOnWorkerThread(std::move(task));
  }
  void CallBlockingTaskOnWorkerThread(std::unique_ptr<v8::Task> task) override {
    inner_->CallBlockingTaskOnWorkerThread(std::move(task));
  }
  void CallLowPriorityTaskOnWorkerThread(std::unique_ptr<v8::Task> task) override {
    inner_->CallLowPriorityTaskOnWorkerThread(std::move(task));
  }
  void CallDelayedOnWorkerThread(std::unique_ptr<v8::Task> task, double delay) override {
    inner_->CallDelayedOnWorkerThread(std::move(task), delay);
  }
  bool IdleTasksEnabled(v8::Isolate* isolate) override { return inner_->IdleTasksEnabled(isolate); }
  std::unique_ptr<v8::JobHandle> PostJob(v8::TaskPriority priority,
                                         std::unique_ptr<v8::JobTask> job) override {
    return inner_->PostJob(priority, std::move(job));
  }
  double MonotonicallyIncreasingTime() override { return inner_->MonotonicallyIncreasingTime(); }
  double CurrentClockTimeMillis() override {
    return std::isnan(t_host_time) ? inner_->CurrentClockTimeMillis() : t_host_time;
  }
  StackTracePrinter GetStackTracePrinter() override { return inner_->GetStackTracePrinter(); }
  v8::TracingController* GetTracingController() override { return inner_->GetTracingController(); }
  void DumpWithoutCrashing() override { inner_->DumpWithoutCrashing(); }

 private:
  std::unique_ptr<v8::Platform> inner_;
};

// V8 asks for entropy for hash seeds and Math.random's default state; getrandom(2) works
// before and after the seccomp filter (which denies /dev/urandom).
bool entropy(unsigned char* buffer, size_t length) {
  size_t done = 0;
  while (done < length) {
    ssize_t n = getrandom(buffer + done, length - done, 0);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

v8::Platform& init_v8_with_host_time(const char* flags) {
  static HostTimePlatform* platform = [flags] {
    v8::V8::SetEntropySource(entropy);
    v8::V8::SetFlagsFromString(flags);
    v8::V8::InitializeICU();
    auto* p = new HostTimePlatform(v8::platform::NewDefaultPlatform());
    v8::V8::InitializePlatform(p);
    v8::V8::Initialize();
    return p;
  }();
  return platform->inner();
}

void set_thread_host_time(double ms) { t_host_time = ms; }

}  // namespace dorm::engine::sandbox
