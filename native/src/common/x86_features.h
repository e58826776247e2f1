// x86 feature tests for the addon's own checks (common/cpu_features.cpp, the kernels' SelectIsa):
// libgcc's / compiler-rt's __builtin_cpu_supports where the toolchain links its __cpu_model (GCC on
// Linux, mingw-w64), cpuid + xgetbv on macOS, where the addon is built with zig, whose compiler-rt has
// no __cpu_model (the symbol would be left for the host process to provide, and loading would fail).
// The names are __builtin_cpu_supports's; a feature with vector registers counts only where the OS
// saves them (XCR0), as libgcc's does.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#if defined(__APPLE__) || defined(GAVEL_X86_CPUID)
#include <cpuid.h>

#include <cstring>

namespace gavel::x86 {

struct CpuidBits {
  unsigned ecx1 = 0, ebx7 = 0, ecx7 = 0;
  unsigned long long xcr0 = 0;
};

inline CpuidBits ReadCpuid() {
  CpuidBits b;
  unsigned a = 0, bx = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &bx, &c, &d)) b.ecx1 = c;
  if (__get_cpuid_count(7, 0, &a, &bx, &c, &d)) {
    b.ebx7 = bx;
    b.ecx7 = c;
  }
  if ((b.ecx1 >> 27) & 1) {  // OSXSAVE: xgetbv is there
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    b.xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  }
  return b;
}

inline bool Supports(const char* name) {
  static const CpuidBits b = ReadCpuid();
  const bool ymm = (b.xcr0 & 0x6) == 0x6;            // SSE and AVX state saved
  const bool zmm = ymm && (b.xcr0 & 0xe0) == 0xe0;   // and the AVX-512 state (opmask, ZMM)
  const auto bit = [](unsigned v, int i) { return ((v >> i) & 1u) != 0; };
  struct Feature {
    const char* name;
    bool present;
  };
  const Feature features[] = {
      {"sse4.2", bit(b.ecx1, 20)},           {"avx", ymm && bit(b.ecx1, 28)},
      {"fma", ymm && bit(b.ecx1, 12)},       {"f16c", ymm && bit(b.ecx1, 29)},
      {"avx2", ymm && bit(b.ebx7, 5)},       {"bmi2", bit(b.ebx7, 8)},
      {"avx512f", zmm && bit(b.ebx7, 16)},   {"avx512dq", zmm && bit(b.ebx7, 17)},
      {"avx512cd", zmm && bit(b.ebx7, 28)},  {"avx512bw", zmm && bit(b.ebx7, 30)},
      {"avx512vl", zmm && bit(b.ebx7, 31)},  {"avx512vbmi", zmm && bit(b.ecx7, 1)},
      {"avx512vnni", zmm && bit(b.ecx7, 11)},
  };
  for (const Feature& f : features)
    if (std::strcmp(f.name, name) == 0) return f.present;
  return false;
}

}  // namespace gavel::x86

#define GAVEL_CPU_INIT() ((void)0)
#define GAVEL_CPU_SUPPORTS(name) (::gavel::x86::Supports(name))
#else
#define GAVEL_CPU_INIT() __builtin_cpu_init()
#define GAVEL_CPU_SUPPORTS(name) __builtin_cpu_supports(name)
#endif
#endif
