// Host emulation of native/src/kernels/topk.cuh's two top-k kernels, compiled as host C++
// (GAVEL_TOPK_HOST_EMULATION) so that both are checked on a CPU: every CUDA thread of a block is a
// std::thread, __syncthreads a block barrier, __shfl_xor_sync an exchange through per-warp slots,
// __shared__ arrays statics (blocks run one after another). Each kernel's output is compared, exactly,
// with a plain top-k (a full sort in the same (value, index) order) on random rows with many ties,
// empty skills (m = −1), rows shorter than the block and k from 1 to 16.
//   npm run test:cuda-emu   (c++ -std=c++20; not part of npm test, which needs no compiler)
#include <algorithm>
#include <barrier>
#include <cfloat>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

struct uint3e { unsigned x = 0, y = 0, z = 0; };
thread_local uint3e threadIdx, blockIdx;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __restrict__
#define __shared__ static
#define GAVEL_TOPK_HOST_EMULATION 1

namespace gavel::kernels::topk {
std::barrier<>* g_block = nullptr;
std::barrier<>* g_warp[8] = {};
uint64_t g_slot[8][32];
inline void __syncthreads() { g_block->arrive_and_wait(); }
template <typename T>
T __shfl_xor_sync(unsigned, T v, int x) {
  const int w = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  g_slot[w][lane] = bits;
  g_warp[w]->arrive_and_wait();
  const uint64_t ob = g_slot[w][lane ^ x];
  g_warp[w]->arrive_and_wait();
  T o;
  std::memcpy(&o, &ob, sizeof(T));
  return o;
}
}  // namespace gavel::kernels::topk

#include "kernels/topk.cuh"

namespace topk = gavel::kernels::topk;
using Kernel = void (*)(const float*, int64_t, int, int32_t*, float*);

// Runs kernel over nq rows, one block of kTopThreads std::threads per row.
void Launch(Kernel kernel, const std::vector<float>& m, int64_t nq, int64_t nCols, int kk, std::vector<int32_t>& top,
            std::vector<float>& topM) {
  top.assign(size_t(nq * kk), -7);
  topM.assign(top.size(), -7.f);
  for (int64_t b = 0; b < nq; ++b) {
    std::barrier<> block(topk::kTopThreads);
    std::vector<std::unique_ptr<std::barrier<>>> warps;
    for (int w = 0; w < topk::kTopThreads / 32; ++w) {
      warps.push_back(std::make_unique<std::barrier<>>(32));
      topk::g_warp[w] = warps.back().get();
    }
    topk::g_block = &block;
    std::vector<std::thread> th;
    for (int t = 0; t < topk::kTopThreads; ++t)
      th.emplace_back([&, t]() {
        threadIdx.x = unsigned(t);
        blockIdx.x = unsigned(b);
        kernel(m.data(), nCols, kk, top.data(), topM.data());
      });
    for (auto& x : th) x.join();
  }
}

int main() {
  std::mt19937_64 rng(20261127);
  int failures = 0, cases = 0;
  struct Case { int64_t nq, nCols; int kk; int levels; };
  // levels: how many distinct values (few → many ties); nCols below, at and past the block's 256 threads
  const Case all[] = {{3, 1, 1, 4}, {4, 7, 7, 3}, {5, 200, 10, 5}, {4, 256, 16, 1000}, {6, 1000, 10, 8},
                      {3, 5000, 16, 50}, {2, 4099, 1, 2}, {3, 30000, 10, 100000}, {2, 777, 13, 3}};
  for (const Case& c : all) {
    std::vector<float> m(size_t(c.nq * c.nCols));
    std::uniform_int_distribution<int> lv(0, c.levels - 1);
    std::uniform_real_distribution<double> u(0, 1);
    for (float& x : m) x = u(rng) < 0.05 ? -1.f : float(lv(rng)) / float(c.levels);  // −1: a skill without keys
    // the reference: each row fully sorted in the kernels' order
    std::vector<int32_t> want(size_t(c.nq * c.kk));
    for (int64_t i = 0; i < c.nq; ++i) {
      std::vector<int64_t> idx(size_t(c.nCols));
      for (int64_t j = 0; j < c.nCols; ++j) idx[size_t(j)] = j;
      const float* row = m.data() + i * c.nCols;
      std::sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
      for (int r = 0; r < c.kk; ++r) want[size_t(i * c.kk + r)] = int32_t(idx[size_t(r)]);
    }
    const struct { const char* name; Kernel k; } kernels[] = {{"passes", topk::TopKPasses}, {"onepass<16>", topk::TopKOnePass<16>}};
    for (const auto& k : kernels) {
      std::vector<int32_t> top;
      std::vector<float> topM;
      Launch(k.k, m, c.nq, c.nCols, c.kk, top, topM);
      int bad = 0;
      for (int64_t i = 0; i < c.nq; ++i)
        for (int r = 0; r < c.kk; ++r) {
          const size_t o = size_t(i * c.kk + r);
          if (top[o] != want[o] || topM[o] != m[size_t(i * c.nCols + want[o])]) ++bad;
        }
      ++cases;
      if (bad) ++failures;
      std::printf("%-12s nq %lld, %6lld columns, k %2d, %6d levels: %s (%d of %lld picks differ)\n", k.name, (long long)c.nq,
                  (long long)c.nCols, c.kk, c.levels, bad ? "FAIL" : "ok", bad, (long long)(c.nq * c.kk));
    }
  }
  std::printf("%d of %d cases pass\n", cases - failures, cases);
  return failures == 0 ? 0 : 1;
}
