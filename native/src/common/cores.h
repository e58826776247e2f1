#pragma once
// The cores this process may run on: its CPU affinity mask where the platform has one (taskset,
// Docker's --cpuset-cpus, a Kubernetes static CPU policy), else every online core.
// std::thread::hardware_concurrency() counts every core of the host, so a job sized by it on a
// 2-core cpuset of a 64-core host would start 64 threads that share 2 cores.
#include <algorithm>
#include <thread>
#if defined(__linux__)
#include <sched.h>
#endif

namespace gavel {

inline unsigned CoresAvailable() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return unsigned(n);
  }
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace gavel
