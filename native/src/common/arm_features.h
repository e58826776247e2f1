// arm64 feature tests for the int8 kernels' choice (kernels/i8_glance.cpp, SelectI8Isa): whether this
// CPU runs ARMv8.2's dot-product instructions (sdot / udot, FEAT_DotProd, an optional feature from
// ARMv8.2-A: Apple silicon, Neoverse N1 / V1 / N2, Cortex-A55 / A76 and newer have it; Cortex-A53 / A72,
// the Raspberry Pi 3 / 4's, do not). Linux: the kernel's hwcap bit HWCAP_ASIMDDP; macOS: the sysctl
// hw.optional.arm.FEAT_DotProd (macOS 12 and later; on 11 the sysctl is missing and the answer is no
// unless the build's baseline has the feature). Where the build's baseline already has it
// (__ARM_FEATURE_DOTPROD, e.g. a build for apple-m1) the answer is yes without asking. Other systems: no.
#pragma once

#if defined(__aarch64__)
#if defined(__linux__)
#include <sys/auxv.h>
#elif defined(__APPLE__)
#include <sys/sysctl.h>
#include <sys/types.h>
#endif

namespace gavel::arm {

inline bool ReadDotProd() {
#if defined(__ARM_FEATURE_DOTPROD)
  return true;
#elif defined(__linux__)
#if defined(HWCAP_ASIMDDP)
  constexpr unsigned long kAsimdDp = HWCAP_ASIMDDP;
#else
  constexpr unsigned long kAsimdDp = 1UL << 20;  // the Linux kernel's arm64 uapi value
#endif
  return (getauxval(AT_HWCAP) & kAsimdDp) != 0;
#elif defined(__APPLE__)
  int v = 0;
  size_t n = sizeof(v);
  return sysctlbyname("hw.optional.arm.FEAT_DotProd", &v, &n, nullptr, 0) == 0 && v != 0;
#else
  return false;
#endif
}

// The answer, read once per process.
inline bool HasDotProd() {
  static const bool has = ReadDotProd();
  return has;
}

}  // namespace gavel::arm
#endif
