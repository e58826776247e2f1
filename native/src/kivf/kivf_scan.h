// The key IVF's scan: every (key, row) score of one inverted list, bit for bit the exact glance's
// max-sim products (kivf_scan_body.inc says why), without packing the keys (they are read in place,
// row by row; the list's rows are packed instead, k-major, in panels of ScanPanelRows).
#pragma once
#include <cstdint>

#include "kernels/kernels_core.h"

namespace gavel::kivf {

// Rows a panel holds for a list probed by nr rows.
int ScanPanelRows(kernels::Isa isa, int64_t nr);
// The nr rows packed into Rp (ceil(nr / P) · P · dim floats, P = ScanPanelRows(isa, nr)).
void ScanPackRows(kernels::Isa isa, const float* const* rows, int64_t nr, int64_t dim, float* Rp);
// S[j·ldS + i] = ⟨keys[j], row i⟩ (ldS = ceil(nr / P) · P; i < nr meaningful). keys[j]: dim floats;
// zero: dim zeros.
void ScanList(kernels::Isa isa, const float* const* keys, int64_t nk, const float* Rp, int64_t nr, int64_t dim,
              const float* zero, float* S);

}  // namespace gavel::kivf
