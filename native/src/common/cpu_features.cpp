#include "common/cpu_features.h"

#include <cstring>

#include "common/x86_features.h"

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
  // GAVEL_CPU_SUPPORTS (common/x86_features.h) needs literal names; its answer includes the OS's (XSAVE) support of
  // the AVX registers. Every name of GAVEL_CPU_FEATURES must appear here.
  GAVEL_CPU_INIT();
  struct Feature {
    const char* name;
    bool present;
  };
  const Feature features[] = {
      {"sse4.2", GAVEL_CPU_SUPPORTS("sse4.2") != 0}, {"avx", GAVEL_CPU_SUPPORTS("avx") != 0},
      {"avx2", GAVEL_CPU_SUPPORTS("avx2") != 0},     {"fma", GAVEL_CPU_SUPPORTS("fma") != 0},
      {"f16c", GAVEL_CPU_SUPPORTS("f16c") != 0},     {"bmi2", GAVEL_CPU_SUPPORTS("bmi2") != 0},
      {"avx512f", GAVEL_CPU_SUPPORTS("avx512f") != 0},
      {"avx512cd", GAVEL_CPU_SUPPORTS("avx512cd") != 0},
      {"avx512vl", GAVEL_CPU_SUPPORTS("avx512vl") != 0},
      {"avx512dq", GAVEL_CPU_SUPPORTS("avx512dq") != 0},
      {"avx512bw", GAVEL_CPU_SUPPORTS("avx512bw") != 0},
      {"avx512vbmi", GAVEL_CPU_SUPPORTS("avx512vbmi") != 0},
      {"avx512vnni", GAVEL_CPU_SUPPORTS("avx512vnni") != 0},
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
