// Checks common/x86_features.h's cpuid path (the one macOS builds take) against libgcc's
// __builtin_cpu_supports on this CPU, feature by feature: exit 1 on any difference.
// Run: npm run test:x86-cpuid (x86-64 Linux with GCC or clang)
#define GAVEL_X86_CPUID 1
#include "common/x86_features.h"

#include <cstdio>

int main() {
  __builtin_cpu_init();
  struct Pair {
    const char* name;
    bool libgcc;
  };
  const Pair pairs[] = {
      {"sse4.2", __builtin_cpu_supports("sse4.2") != 0},   {"avx", __builtin_cpu_supports("avx") != 0},
      {"fma", __builtin_cpu_supports("fma") != 0},         {"f16c", __builtin_cpu_supports("f16c") != 0},
      {"avx2", __builtin_cpu_supports("avx2") != 0},       {"bmi2", __builtin_cpu_supports("bmi2") != 0},
      {"avx512f", __builtin_cpu_supports("avx512f") != 0}, {"avx512dq", __builtin_cpu_supports("avx512dq") != 0},
      {"avx512cd", __builtin_cpu_supports("avx512cd") != 0}, {"avx512bw", __builtin_cpu_supports("avx512bw") != 0},
      {"avx512vl", __builtin_cpu_supports("avx512vl") != 0}, {"avx512vbmi", __builtin_cpu_supports("avx512vbmi") != 0},
      {"avx512vnni", __builtin_cpu_supports("avx512vnni") != 0},
  };
  int bad = 0;
  for (const Pair& p : pairs) {
    const bool mine = gavel::x86::Supports(p.name);
    std::printf("%-11s libgcc %d cpuid %d%s\n", p.name, p.libgcc, mine, p.libgcc == mine ? "" : "  DIFFERENT");
    bad += p.libgcc != mine;
  }
  if (gavel::x86::Supports("no-such-feature")) ++bad;
  return bad == 0 ? 0 : 1;
}
