// The x86 features the statically linked ggml was compiled for (GAVEL_CPU_FEATURES, set by
// CMakeLists.txt) against what this CPU (and its OS) supports. src/native/cpu.ts refuses such a CPU
// before the addon is loaded; this is the same check inside the addon, for a load that bypassed it.
#pragma once
#include <string>

namespace gavel {

/** The features of GAVEL_CPU_FEATURES this CPU lacks, comma-separated; empty when all are present. */
std::string MissingCpuFeatures();

/** GAVEL_CPU_FEATURES: the comma-separated features the build requires ("" off x86-64). */
const char* RequiredCpuFeatures();

}  // namespace gavel
