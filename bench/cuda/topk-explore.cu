// Issue 15: the glance's two top-k kernels (native/src/kernels/topk.cuh) on a GPU in one device call:
// TopKOnePass<16> against TopKPasses (the default) on random m with many ties and empty skills (m = −1),
// output compared bit for bit, then both timed at issue 15's shapes (k = 10, the vote's). Standalone:
//   nvcc -O3 -std=c++17 -arch=sm_90 -I native/src bench/cuda/topk-explore.cu -o /tmp/tk && /tmp/tk
// Their agreement is also checked on a CPU (native/test/topk_emu.cpp, npm run test:cuda-emu).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "check.cuh"
#include "kernels/topk.cuh"


namespace topk = gavel::kernels::topk;

// m[e] in {0, 1/levels, …} (ties), or −1 (a skill without keys) for about 1 in 20.
__global__ void Fill(float* m, int64_t n, int levels, uint64_t seed) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    uint64_t x = (uint64_t(e) + 1) * 0x9E3779B97F4A7C15ULL ^ seed;
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
    m[e] = (x % 20 == 0) ? -1.f : float((x >> 8) % uint64_t(levels)) / float(levels);
  }
}

int main() {
  struct Shape { const char* name; int nq; int64_t nCols; int kk, levels; };
  const Shape shapes[] = {{"ties-small", 37, 300, 16, 3},   {"ties-odd", 130, 4099, 13, 7},   {"d256-10k", 1300, 10000, 10, 1 << 20},
                          {"d256-30k", 1300, 30000, 10, 1 << 20}, {"d256-100k", 1300, 100000, 10, 1 << 20}, {"d768-1k", 239, 1000, 10, 1 << 20},
                          {"d768-10k", 239, 10000, 10, 1 << 20},  {"d768-30k", 239, 30000, 10, 1 << 20}};
  bool ok = true;
  for (const Shape& s : shapes) {
    float *m, *am, *bm;
    int32_t *a, *b;
    const size_t n = size_t(s.nq) * size_t(s.nCols), nk = size_t(s.nq) * size_t(s.kk);
    CK(cudaMalloc(&m, n * 4));
    CK(cudaMalloc(&a, nk * 4));
    CK(cudaMalloc(&b, nk * 4));
    CK(cudaMalloc(&am, nk * 4));
    CK(cudaMalloc(&bm, nk * 4));
    Fill<<<1024, 256>>>(m, int64_t(n), s.levels, 15);
    topk::TopKPasses<<<s.nq, topk::kTopThreads>>>(m, s.nCols, s.kk, a, am);
    topk::TopKOnePass<16><<<s.nq, topk::kTopThreads>>>(m, s.nCols, s.kk, b, bm);
    CK(cudaDeviceSynchronize());
    std::vector<int32_t> ha(nk), hb(nk);
    std::vector<float> hma(nk), hmb(nk);
    CK(cudaMemcpy(ha.data(), a, nk * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hb.data(), b, nk * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hma.data(), am, nk * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hmb.data(), bm, nk * 4, cudaMemcpyDeviceToHost));
    size_t differ = 0;
    for (size_t e = 0; e < nk; ++e) differ += ha[e] != hb[e] || hma[e] != hmb[e];
    ok &= differ == 0;
    const float tp = MedianMs([&]() { topk::TopKPasses<<<s.nq, topk::kTopThreads>>>(m, s.nCols, s.kk, a, am); }, 7);
    const float to = MedianMs([&]() { topk::TopKOnePass<16><<<s.nq, topk::kTopThreads>>>(m, s.nCols, s.kk, b, bm); }, 7);
    std::printf("{\"shape\":\"%s\",\"rows\":%d,\"columns\":%lld,\"k\":%d,\"picksDiffer\":%zu,\"passesMs\":%.3f,\"onePassMs\":%.3f}\n", s.name, s.nq,
                (long long)s.nCols, s.kk, differ, tp, to);
    cudaFree(m); cudaFree(a); cudaFree(b); cudaFree(am); cudaFree(bm);
  }
  std::printf(ok ? "one pass = passes, bit for bit\n" : "one pass DIFFERS from passes\n");
  return ok ? 0 : 1;
}
