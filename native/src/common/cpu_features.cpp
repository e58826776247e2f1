#include "common/cpu_features.h"

#include <cstring>

#ifndef GAVEL_CPU_FEATURES
#define GAVEL_CPU_FEATURES ""
#endif

namespace gavel {

const char* RequiredCpuFeatures() {
#if defined(__x86_64__)
  return GAVEL_CPU_FEATURES;
#else
  return "";
#endif
}

std::string MissingCpuFeatures() {
  std::string missing;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // __builtin_cpu_supports needs literal names; libgcc's answer includes the OS's (XSAVE) support of
  // the AVX registers. Every name of GAVEL_CPU_FEATURES must appear here.
  __builtin_cpu_init();
  struct Feature {
    const char* name;
    bool present;
  };
  const Feature features[] = {
      {"sse4.2", __builtin_cpu_supports("sse4.2") != 0}, {"avx", __builtin_cpu_supports("avx") != 0},
      {"avx2", __builtin_cpu_supports("avx2") != 0},     {"fma", __builtin_cpu_supports("fma") != 0},
      {"f16c", __builtin_cpu_supports("f16c") != 0},     {"bmi2", __builtin_cpu_supports("bmi2") != 0},
      {"avx512f", __builtin_cpu_supports("avx512f") != 0},
      {"avx512cd", __builtin_cpu_supports("avx512cd") != 0},
      {"avx512vl", __builtin_cpu_supports("avx512vl") != 0},
      {"avx512dq", __builtin_cpu_supports("avx512dq") != 0},
      {"avx512bw", __builtin_cpu_supports("avx512bw") != 0},
      {"avx512vbmi", __builtin_cpu_supports("avx512vbmi") != 0},
      {"avx512vnni", __builtin_cpu_supports("avx512vnni") != 0},
  };
  std::string required = std::string(",") + RequiredCpuFeatures() + ",";
  for (const Feature& f : features) {
    if (f.present || required.find(std::string(",") + f.name + ",") == std::string::npos) continue;
    if (!missing.empty()) missing += ",";
    missing += f.name;
  }
#endif
  return missing;
}

}  // namespace gavel
