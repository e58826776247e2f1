// What the two index objects' N-API layers share (index/ivf_napi.cpp, the glance index;
// kivf/kivf_napi.cpp, the key IVF): the native state behind the JS object (the index and the mutex
// its jobs hold, shared with the jobs so a disposed object frees nothing a job reads) and the check
// of the bank argument their methods take.
#pragma once
#include <napi.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "bank/bank.h"
#include "bank/bank_core.h"
#include "common/napi_args.h"

namespace gavel {

template <typename Index>
struct HeldIndex {
  std::mutex mu;
  Index index;
  explicit HeldIndex(int64_t dim) : index(dim) {}
};

// The bank argument `v` of an index of dimension `dim`: its current snapshot and key type
// (halfKeys). A bank of another dimension is INVALID_ARGUMENT.
inline std::shared_ptr<const bank::Snapshot> BankSnapshotFor(const Napi::Value& v, int64_t dim, bool& halfKeys) {
  bank::Bank& b = UnwrapBank(v, "bank");
  if (b.dim() != dim)
    Bad("bank dim (" + std::to_string(b.dim()) + ") differs from the index's (" + std::to_string(dim) + ")");
  halfKeys = b.halfKeys();
  return b.Current();
}

}  // namespace gavel
