// Small helpers the index jobs share (the glance index, index/ivf_core.cpp, and the key IVF,
// kivf/kivf_core.cpp): a cooperative stop flag, the typed abort, elapsed milliseconds and the
// thread count a job runs on.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "common/cores.h"
#include "common/failure.h"

namespace gavel {

// Whether a job's stop flag (nullptr: none) was raised.
inline bool Stopped(const std::atomic<bool>* stop) { return stop != nullptr && stop->load(std::memory_order_relaxed); }

// Throws Failure(ABORTED, "<what> aborted").
[[noreturn]] inline void Aborted(const char* what) { throw Failure(Code::ABORTED, std::string(what) + " aborted"); }

// Milliseconds since t0 (steady clock).
inline double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The threads a job runs on: `threads`, or every core when 0.
inline unsigned Threads(unsigned threads) {
  return threads == 0 ? CoresAvailable() : threads;
}

}  // namespace gavel
