// The worker's system-call filter (seccomp-bpf through libseccomp).
//
// Installed once the platform, every slot's isolate and first context exist, and applied to
// every thread of the process at once (SCMP_FLTATR_CTL_TSYNC: without it a V8 thread created
// earlier could still open files). After it, the worker can compute, allocate, use its
// socket and futexes, and nothing else: no files, no network, no processes, no signals to
// others. A forbidden call kills the whole process (SIGSYS); the host sees it die and fails
// that worker's executions with engine_crashed.
//
// A few calls return an error instead of killing, because libraries try them on paths that
// tolerate failure: ICU opens time zone files, glibc reads /proc/sys/vm/overcommit_memory,
// V8 names its threads. They fail with EACCES and open nothing.
#pragma once

namespace dorm::engine::sandbox {

// Returns false if the kernel refused the filter (the worker must then not run code).
bool install_seccomp_filter();

}  // namespace dorm::engine::sandbox
