#include "seccomp_filter.hpp"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <unistd.h>

#include <initializer_list>

namespace dorm::engine::sandbox {

bool install_seccomp_filter() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
  if (ctx == nullptr) return false;
  bool ok = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1) == 0;

  // Computing, memory, time, threads already running, and the socket that is already open.
  for (int call : {
           SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev),
           SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mprotect), SCMP_SYS(madvise),
           SCMP_SYS(mremap), SCMP_SYS(brk), SCMP_SYS(futex), SCMP_SYS(getpid), SCMP_SYS(gettid),
           SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(clock_gettime),
           SCMP_SYS(clock_getres), SCMP_SYS(clock_nanosleep), SCMP_SYS(nanosleep),
           SCMP_SYS(gettimeofday), SCMP_SYS(sched_yield), SCMP_SYS(sched_getaffinity),
           SCMP_SYS(getrandom), SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigprocmask),
           SCMP_SYS(sigaltstack), SCMP_SYS(set_robust_list), SCMP_SYS(rseq),
           SCMP_SYS(restart_syscall), SCMP_SYS(getrusage), SCMP_SYS(membarrier),
           SCMP_SYS(poll), SCMP_SYS(ppoll),
       }) {
    ok = ok && seccomp_rule_add(ctx, SCMP_ACT_ALLOW, call, 0) == 0;
  }
  // New threads only (V8 may grow its pools); a new process is a kill.
  ok = ok && seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD)) == 0;
  // glibc tries clone3 first and falls back to clone on ENOSYS; clone3's flags sit in
  // memory, out of a filter's reach, so it is refused outright.
  ok = ok && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) == 0;
  // abort() and V8's fatal paths signal their own thread.
  ok = ok && seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
                              SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(getpid()))) == 0;
  // Tolerated failures (see the header).
  for (int call : {SCMP_SYS(openat), SCMP_SYS(open), SCMP_SYS(newfstatat), SCMP_SYS(fstat),
                   SCMP_SYS(stat), SCMP_SYS(readlink), SCMP_SYS(lseek), SCMP_SYS(close),
                   SCMP_SYS(prctl), SCMP_SYS(statx), SCMP_SYS(access), SCMP_SYS(faccessat),
                   SCMP_SYS(ioctl), SCMP_SYS(uname), SCMP_SYS(rt_sigaction)}) {
    ok = ok && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), call, 0) == 0;
  }
  ok = ok && seccomp_load(ctx) == 0;
  seccomp_release(ctx);
  return ok;
}

}  // namespace dorm::engine::sandbox
