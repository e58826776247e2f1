// IEEE 754 binary16 (f16) conversions in plain C++ (no intrinsics, no CUDA), written once for the
// bank's 16-bit keys: on the host (KeyBank's "f16" storage), for the device copy's upload and for
// the queries a device glance converts. The same rules as src/util/half.ts: round to nearest even,
// subnormals exact both ways. Callers never pass NaN/Inf (keys and queries are checked finite first)
// and check FitsHalf before converting, so overflow to Inf is never reached in practice.
//
// Why f16 and not bf16 for keys: keys and queries are unit vectors, every component in [-1, 1], so
// bf16's wider exponent range buys nothing, while f16's 10 stored mantissa bits (against 7) make
// the rounding of a component 8× smaller: |Δ⟨q, k⟩| ≤ 2⁻¹¹·‖q‖‖k‖ ≈ 4.9e-4 for rounded keys (bf16:
// 3.9e-3), and tensor cores run both at the same rate.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace gavel {

// The largest finite f16 (values at or beyond 65520 round to Inf).
constexpr float kHalfMax = 65504.f;

inline bool FitsHalf(float x) { return std::fabs(x) < 65520.f; }

inline uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return uint16_t(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: Inf
  if (abs < 0x38800000u) {                                  // subnormal half or zero: units of 2^-24
    if (abs < 0x33000000u) return uint16_t(sign);           // below half the smallest subnormal
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;
    const uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    return uint16_t(sign | (r + ((rem > halfway || (rem == halfway && (r & 1u))) ? 1u : 0u)));
  }
  // Normal: rebias 127 → 15, keep 10 mantissa bits, round to nearest even (a carry may bump the
  // exponent, which is the right answer).
  const uint32_t rem = abs & 0x1fffu;
  uint32_t h = ((abs - 0x38000000u) >> 13);
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return uint16_t(sign | h);
}

inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  uint32_t x;
  if (e == 0) {
    if (m == 0) {
      x = sign;
    } else {  // subnormal: m · 2^-24, exact in float
      const float v = float(m) * 5.9604644775390625e-8f;
      std::memcpy(&x, &v, 4);
      x |= sign;
    }
  } else if (e == 0x1f) {
    x = sign | 0x7f800000u | (m << 13);
  } else {
    x = sign | ((e + 112u) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace gavel
