// The addon's run-time settings. Native code reads no environment variable: src/config.ts resolves
// them (GAVEL_LOG, GAVEL_KERNEL_ISA, GAVEL_GLANCE_*) once per process and the loader
// (src/native/binding.ts) passes them in through configure() right after the addon loads. Benches and
// tests may call configure() again to switch a setting; each field is an atomic, read where it acts.
#pragma once
#include <atomic>

namespace gavel::settings {

// GAVEL_KERNEL_ISA: the most the CPU kernels may use (kNone: the CPU's best).
enum class IsaCap : int { kNone = 0, kGeneric = 1, kAvx2 = 2, kAvx512 = 3 };
// GAVEL_GLANCE_DEVICE: where a whole-bank glance computes its max-sim.
enum class GlanceDevice : int { kAuto = 0, kCpu = 1, kCuda = 2 };
// GAVEL_GLANCE_KERNEL: the CUDA max-sim (kAuto: wgmma where the device code has it, else WMMA).
enum class GlanceKernel : int { kAuto = 0, kWmma = 1 };
// GAVEL_GLANCE_EXACT8: the CPU glance through the int8 prefilter (kernels/i8_glance.h).
enum class GlanceExact8 : int { kOff = 0, kOn = 1 };

struct Settings {
  std::atomic<bool> logEcho{false};           // GAVEL_LOG=1: llama.cpp's log to stderr
  std::atomic<int> isaCap{0};                 // IsaCap
  std::atomic<int> glanceDevice{0};           // GlanceDevice
  std::atomic<int> glanceKernel{0};           // GlanceKernel
  std::atomic<int> glanceExact8{0};           // GlanceExact8
  std::atomic<bool> topKPasses{false};        // GAVEL_GLANCE_TOPK=passes: the k-pass top-k at every k
  std::atomic<bool> cpAsyncLoader{false};     // GAVEL_GLANCE_LOADER=cp.async: wgmma keys by cp.async, not TMA
};

// The process's settings (defaults until configure() sets them).
Settings& Current();

}  // namespace gavel::settings
