// See train_resident.h.
#include "common/cores.h"
#include "train/train_resident.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>

#include "common/failure.h"
#include "common/parallel.h"

namespace gavel::train {
namespace {

const float* HalfTable() {
  static const std::vector<float> t = [] {
    std::vector<float> v(65536);
    for (uint32_t h = 0; h < 65536; ++h) {
      const uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
      uint32_t bits;
      if (e == 0) {
        const float mag = std::ldexp(float(m), -24);  // subnormal (or zero): exact
        std::memcpy(&bits, &mag, 4);
        bits |= sign;
      } else if (e == 0x1f) {
        bits = sign | 0x7f800000u | (m << 13);
      } else {
        bits = sign | ((e + 112) << 23) | (m << 13);
      }
      std::memcpy(&v[h], &bits, 4);
    }
    return v;
  }();
  return t.data();
}

unsigned Threads(unsigned threads, size_t n) {
  if (threads == 0) threads = CoresAvailable();
  return n < (size_t(1) << 18) ? 1u : std::min<unsigned>(threads, 16);
}

}  // namespace

uint16_t HalfFromFloat(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  const uint32_t sign = (u >> 16) & 0x8000u, abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) return uint16_t(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);
  if (abs < 0x38800000u) {
    if (abs < 0x33000000u) return uint16_t(sign);
    const uint32_t e = abs >> 23, m = (abs & 0x7fffffu) | 0x800000u, shift = 126 - e;
    const uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    return uint16_t(sign | (r + ((rem > halfway || (rem == halfway && (r & 1))) ? 1 : 0)));
  }
  const uint32_t r = (abs - 0x38000000u) >> 13, rem = abs & 0x1fffu;
  return uint16_t(sign | (r + ((rem > 0x1000u || (rem == 0x1000u && (r & 1))) ? 1 : 0)));
}

float FloatFromHalf(uint16_t h) { return HalfTable()[h]; }

Placement Place(const ResidentStore& s, const int32_t* rows, int64_t n, int64_t width) {
  Placement p;
  p.chunk.resize(size_t(n));
  p.row0.resize(size_t(n));
  const int64_t chunkRowsDefault = std::max<int64_t>(1, int64_t(ResidentStore::kChunkBytes / 2) / width);
  int64_t cur = int64_t(s.chunkRows.size()) - 1;  // the chunk being filled (−1: none)
  int64_t cap = cur >= 0 ? s.chunkRows[cur] : 0, used = cur >= 0 ? s.chunkUsed[cur] : 0;
  p.lastUsedAfter = used;
  int64_t remaining = 0;  // rows of this call not yet placed
  for (int64_t i = 0; i < n; ++i) remaining += rows[i];
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = rows[i];
    if (r == 0) {  // no rows, no place: never gathered
      p.chunk[i] = -1;
      p.row0[i] = 0;
      continue;
    }
    if (cur < 0 || used + r > cap) {
      // A new chunk: what is left of this call, at most the default chunk, at least this skill.
      const int64_t want = std::max<int64_t>(r, std::min(remaining, chunkRowsDefault));
      p.newChunkRows.push_back(want);
      cur = int64_t(s.chunkRows.size() + p.newChunkRows.size()) - 1;
      cap = want;
      used = 0;
    }
    p.chunk[i] = int32_t(cur);
    p.row0[i] = used;
    used += r;
    remaining -= r;
    if (cur == int64_t(s.chunkRows.size()) - 1) p.lastUsedAfter = used;
  }
  return p;
}

void CheckAndConvert(const float* src, size_t n, uint16_t* dst, unsigned threads) {
  const unsigned nt = Threads(threads, n);
  std::vector<size_t> bad(nt, n);
  Parallel(nt, [&](unsigned th) {
    const size_t a = n * th / nt, e = n * (th + 1) / nt;
    for (size_t i = a; i < e; ++i) {
      const float x = src[i];
      if (!(std::fabs(x) < kHalfLimit)) {  // NaN, ±Inf, or beyond binary16
        bad[th] = i;
        return;
      }
      dst[i] = HalfFromFloat(x);
    }
  });
  const size_t first = *std::min_element(bad.begin(), bad.end());
  if (first < n)
    throw Failure(Code::INVALID_ARGUMENT, "states[" + std::to_string(first) + "] = " + std::to_string(src[first]) +
                                              " is not finite or beyond binary16's range (|x| < 65520)");
}

void GatherHost(const ResidentStore& s, Batch& b, unsigned threads) {
  const int64_t nEntries = static_cast<int64_t>(b.refs.size()), w = s.width;
  b.s.resize(size_t(int64_t(b.sOff[nEntries]) * w));
  const float* table = HalfTable();
  const unsigned nt = Threads(threads, b.s.size());
  std::atomic<int64_t> next{0};
  Parallel(nt, [&](unsigned) {
    for (int64_t e; (e = next.fetch_add(1)) < nEntries;) {
      const int32_t sk = b.refs[e];
      const int64_t n = b.sOff[e + 1] - b.sOff[e];
      if (n == 0) continue;
      const uint16_t* base = s.host[s.chunk[sk]].get() + s.row0[sk] * w;
      const int32_t k0 = b.keepOff[e], k1 = b.keepOff[e + 1];
      float* out = b.s.data() + int64_t(b.sOff[e]) * w;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t r = k1 > k0 ? b.keep[k0 + j] : j;
        const uint16_t* h = base + r * w;
        float* o = out + j * w;
        for (int64_t c = 0; c < w; ++c) o[c] = table[h[c]];
      }
    }
  });
}

}  // namespace gavel::train
