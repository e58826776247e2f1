// Runs fn(t) for t in [0, n) on n threads (t = 0 on the caller's), rethrowing the first exception:
// an exception escaping a std::thread would terminate the process. Shared by the kernels and the trainer.
#pragma once
#include <exception>
#include <thread>
#include <vector>

namespace gavel {

template <typename Fn>
void Parallel(unsigned n, Fn fn) {
  if (n <= 1) {
    fn(0u);
    return;
  }
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> pool;
  pool.reserve(n - 1);
  auto guarded = [&](unsigned t) {
    try {
      fn(t);
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  for (unsigned t = 1; t < n; ++t) pool.emplace_back(guarded, t);
  guarded(0);
  for (auto& th : pool) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace gavel
