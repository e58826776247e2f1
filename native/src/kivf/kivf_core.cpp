// The key IVF glance (kivf_core.h).
#include "kivf/kivf_core.h"

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <thread>
#include <unordered_set>

#include "common/failure.h"
#include "common/jobs.h"
#include "common/parallel.h"
#include "index/ivf_core.h"
#include "kivf/kivf_scan.h"

namespace gavel::kivf {

namespace {

// Centroids per GEMM of the glance's centroid scores (their packed panels, 128 KiB at dim 256, stay in L2).
constexpr int64_t kScoreBlock = 128;

// Rows per Assign batch during a sync (whole skills, about this many key rows): enough that every
// coarse group gets rows for one GEMM a thread (64 MiB of float32 rows at dim 256).
constexpr int64_t kAssignChunk = 65536;

// One entry of a row's running top k.
struct Cand {
  float v;
  int32_t col;
};
inline bool Above(float v, int32_t c, const Cand& b) { return v > b.v || (v == b.v && c < b.col); }

// One thread's top k of each row: e = top + row·kk holds the row's n skills unordered; beside them a
// min-heap of their slots, the worst (lowest by (score desc, column asc)) at its root, and a hash of
// column → slot (linear probing, 2k to 4k cells a row). An offer of skill `col` at score v inserts it,
// raises its score when it is there with less, or is dropped below a full set's worst: the set is the
// union's top k (a skill's score the max of its offers), as an offer below a full set's last can never
// enter the final top k. O(log k) an offer; the set is the one a best-first sorted array would hold.
class TopSets {
 public:
  // skip (optional, one byte a column): columns that take no part (never offered, so in no top k)
  TopSets(int64_t nq, int32_t kk, const uint8_t* skip = nullptr) : kk_(kk), skip_(skip) {
    hcap_ = 4;
    while (hcap_ < 2 * int64_t(kk)) hcap_ *= 2;
    top_.resize(static_cast<size_t>(nq * kk));
    count_.assign(static_cast<size_t>(nq), 0);
    heap_.resize(static_cast<size_t>(nq * kk));
    pos_.resize(static_cast<size_t>(nq * kk));
    hash_.assign(static_cast<size_t>(nq * hcap_), 0);
  }
  const Cand* set(int64_t row) const { return top_.data() + row * kk_; }
  int32_t size(int64_t row) const { return count_[row]; }
  // the k-th best score of a full row (a floor under its final k-th best), else -infinity
  float floor(int64_t row) const {
    return count_[row] == kk_ ? top_[row * kk_ + heap_[row * kk_]].v : -std::numeric_limits<float>::infinity();
  }
  void Offer(int64_t row, float v, int32_t col) {
    Cand* e = top_.data() + row * kk_;
    int32_t* heap = heap_.data() + row * kk_;
    int32_t* pos = pos_.data() + row * kk_;
    int32_t* hash = hash_.data() + row * hcap_;
    int32_t& n = count_[row];
    if (skip_ != nullptr && skip_[col] != 0) return;
    if (n == kk_ && !Above(v, col, e[heap[0]])) return;
    int64_t h = Find(e, hash, col);
    if (hash[h] != 0) {
      const int32_t sl = hash[h] - 1;
      if (!(v > e[sl].v)) return;
      e[sl].v = v;
      SiftDown(e, heap, pos, n, pos[sl]);  // better now: away from the root
      return;
    }
    if (n < kk_) {
      const int32_t sl = n++;
      e[sl] = Cand{v, col};
      hash[h] = sl + 1;
      heap[sl] = sl;
      pos[sl] = sl;
      SiftUp(e, heap, pos, sl);
      return;
    }
    const int32_t sl = heap[0];  // the worst leaves
    Erase(e, hash, Find(e, hash, e[sl].col));
    e[sl] = Cand{v, col};
    hash[Find(e, hash, col)] = sl + 1;
    SiftDown(e, heap, pos, n, 0);
  }

 private:
  static uint32_t Mix(int32_t col) { return static_cast<uint32_t>(col) * 0x9E3779B1u; }
  // the cell holding col, or the empty cell where it would go
  int64_t Find(const Cand* e, const int32_t* hash, int32_t col) const {
    const uint64_t mask = static_cast<uint64_t>(hcap_ - 1);
    uint64_t h = (Mix(col) >> 7) & mask;
    while (hash[h] != 0 && e[hash[h] - 1].col != col) h = (h + 1) & mask;
    return static_cast<int64_t>(h);
  }
  // empties cell i, moving later cells of its run back where their home allows (no tombstones)
  void Erase(const Cand* e, int32_t* hash, int64_t i) const {
    const uint64_t mask = static_cast<uint64_t>(hcap_ - 1);
    uint64_t hole = static_cast<uint64_t>(i), j = hole;
    for (;;) {
      j = (j + 1) & mask;
      if (hash[j] == 0) break;
      const uint64_t home = (Mix(e[hash[j] - 1].col) >> 7) & mask;
      // the entry at j may fill the hole unless its home lies cyclically in (hole, j]
      const bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
      if (!stays) {
        hash[hole] = hash[j];
        hole = j;
      }
    }
    hash[hole] = 0;
  }
  // heap order: a above b in the heap (nearer the root) when a ranks below b
  static bool Lower(const Cand* e, int32_t a, int32_t b) { return Above(e[b].v, e[b].col, e[a]); }
  static void SiftUp(const Cand* e, int32_t* heap, int32_t* pos, int32_t i) {
    while (i > 0) {
      const int32_t p = (i - 1) / 2;
      if (!Lower(e, heap[i], heap[p])) break;
      std::swap(heap[i], heap[p]);
      pos[heap[i]] = i;
      pos[heap[p]] = p;
      i = p;
    }
  }
  static void SiftDown(const Cand* e, int32_t* heap, int32_t* pos, int32_t n, int32_t i) {
    for (;;) {
      const int32_t l = 2 * i + 1, r = l + 1;
      int32_t m = i;
      if (l < n && Lower(e, heap[l], heap[m])) m = l;
      if (r < n && Lower(e, heap[r], heap[m])) m = r;
      if (m == i) break;
      std::swap(heap[i], heap[m]);
      pos[heap[i]] = i;
      pos[heap[m]] = m;
      i = m;
    }
  }
  int32_t kk_;
  const uint8_t* skip_;
  int64_t hcap_;
  std::vector<Cand> top_;
  std::vector<int32_t> count_, heap_, pos_, hash_;
};

}  // namespace

int64_t DefaultCentroids(int64_t rows) {
  if (rows <= 8) return 1;
  const double target = 8.0 * std::sqrt(double(rows));
  int64_t c = int64_t(1) << static_cast<int>(std::lround(std::log2(target)));
  c = std::clamp<int64_t>(c, 16, 65536);
  return std::max<int64_t>(1, std::min(c, rows / 8));
}

int64_t Index::bytes() const {
  int64_t b = static_cast<int64_t>((cent_.capacity() + coarse_.capacity() + radius_.capacity() + centNorm_.capacity() +
                                    scores_.capacity()) * sizeof(float) + keySlot_.capacity() * sizeof(int32_t) +
                                   slots_.capacity() * sizeof(Slot) + lists_.capacity() * sizeof(lists_[0]) +
                                   (colOf_.capacity() + colHandle_.capacity() + emptyCols_.capacity()) * sizeof(int32_t));
  for (const auto& l : lists_) b += static_cast<int64_t>(l.capacity() * sizeof(int32_t));
  for (const auto& c : codes_) b += c.Bytes();
  for (const auto& c : listCols_) b += static_cast<int64_t>(c.capacity() * sizeof(int32_t));
  b += static_cast<int64_t>(listColsVer_.capacity() * sizeof(uint64_t));
  b += static_cast<int64_t>(slotOf_.size() * (sizeof(void*) * 2 + 8) + slotOf_.bucket_count() * sizeof(void*));
  return b;
}

void Index::Reset(std::vector<float> centroids, int64_t nc, int64_t trainedRows, double trainSim) {
  cent_ = std::move(centroids);
  nc_ = nc;
  radius_.assign(static_cast<size_t>(nc), 0.f);
  radiusStale_ = false;
  centNorm_.assign(static_cast<size_t>(nc), 0.f);
  for (int64_t c = 0; c < nc; ++c) {
    double ss = 0;
    for (int64_t d = 0; d < dim_; ++d) ss += double(cent_[c * dim_ + d]) * double(cent_[c * dim_ + d]);
    centNorm_[c] = static_cast<float>(std::sqrt(ss));
  }
  coarse_.clear();
  groupStart_.clear();
  trainedRows_ = trainedRows;
  trainSim_ = trainSim;
  slots_.clear();
  keySlot_.clear();
  lists_.assign(static_cast<size_t>(nc), {});
  codes_.clear();
  ++colsVer_;
  slotOf_.clear();
  colOf_.clear();
  colHandle_.clear();
  emptyCols_.clear();
  live_ = liveRows_ = deadRows_ = 0;
  liveSim_ = 0;
  synced_ = 0;
}

void Index::Train(const bank::Snapshot& s, bool halfKeys, const TrainOptions& o, Isa isa, unsigned threads,
                  const std::atomic<bool>* stop) {
  const int64_t rows = s.rows;
  if (rows == 0) throw Failure(Code::INVALID_ARGUMENT, "the bank holds no key to train the key IVF on");
  const int64_t nc = std::min(o.centroids > 0 ? o.centroids : DefaultCentroids(rows), rows);
  const int64_t want = o.sample > 0 ? o.sample : 16 * nc;
  const int64_t n = std::clamp(want, nc, rows);
  std::vector<int64_t> pick = ivf::SampleRows(rows, n, o.seed);
  std::vector<int64_t> start(s.entries.size() + 1, 0);
  for (size_t e = 0; e < s.entries.size(); ++e) start[e + 1] = start[e] + s.entries[e].keys->rows;
  std::vector<float> x(static_cast<size_t>(n * dim_));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = pick[i];
    const size_t e = static_cast<size_t>(std::upper_bound(start.begin(), start.end(), r) - start.begin() - 1);
    const bank::KeyBlock& b = *s.entries[e].keys;
    const int64_t at = (r - start[e]) * dim_;
    float* out = x.data() + i * dim_;
    if (halfKeys)
      kernels::HalfToFloats(b.half.data() + at, out, dim_, isa);
    else
      std::copy(b.data.data() + at, b.data.data() + at + dim_, out);
  }
  threads = Threads(threads);
  const int64_t G = o.groups > 0 ? std::min(o.groups, nc)
                    : nc >= kTwoLevelFrom ? std::max<int64_t>(2, std::llround(std::sqrt(double(nc)))) : 1;
  std::vector<float> cent, coarse;
  std::vector<int64_t> groupStart;
  int64_t total = nc;
  if (G <= 1) {
    cent = ivf::KMeans(x.data(), n, dim_, nc, o.iters, isa, threads, stop);
  } else {
    // two-level: G coarse centroids, then each group's share of the fine ones over its own rows
    coarse = ivf::KMeans(x.data(), n, dim_, G, o.iters, isa, threads, stop);
    std::vector<int32_t> code(static_cast<size_t>(n));
    ivf::Assign(x.data(), n, coarse.data(), G, dim_, code.data(), nullptr, isa, threads, stop);
    std::vector<std::vector<int64_t>> members(static_cast<size_t>(G));
    for (int64_t r = 0; r < n; ++r) members[code[r]].push_back(r);
    groupStart.assign(static_cast<size_t>(G + 1), 0);
    total = 0;
    std::vector<int64_t> share(static_cast<size_t>(G));
    for (int64_t g = 0; g < G; ++g) {
      const int64_t ng = static_cast<int64_t>(members[g].size());
      share[g] = ng == 0 ? 0 : std::clamp<int64_t>(std::llround(double(nc) * double(ng) / double(n)), 1, ng);
      groupStart[g] = total;
      total += share[g];
    }
    // Each group's k-means is small (its share of the rows and centroids): threads take whole groups,
    // largest first, each running one group's k-means on one thread (the result does not depend on
    // the threads: a k-means' assignment and sums are the same on any count).
    cent.assign(static_cast<size_t>(total * dim_), 0.f);
    std::vector<int64_t> order(static_cast<size_t>(G));
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return members[a].size() > members[b].size(); });
    std::atomic<int64_t> next{0};
    Parallel(static_cast<unsigned>(std::min<int64_t>(threads, G)), [&](unsigned) {
      std::vector<float> xg;
      for (int64_t i = next++; i < G; i = next++) {
        const int64_t g = order[i], ng = static_cast<int64_t>(members[g].size());
        if (share[g] == 0) continue;
        xg.resize(static_cast<size_t>(ng * dim_));
        for (int64_t r = 0; r < ng; ++r) std::copy(x.begin() + members[g][r] * dim_, x.begin() + (members[g][r] + 1) * dim_, xg.begin() + r * dim_);
        const std::vector<float> cgC = ivf::KMeans(xg.data(), ng, dim_, share[g], o.iters, isa, 1, stop);
        std::copy(cgC.begin(), cgC.end(), cent.begin() + groupStart[g] * dim_);
      }
    });
    groupStart[G] = total;
  }
  Reset(std::move(cent), total, rows, 0.0);
  coarse_ = std::move(coarse);
  groupStart_ = std::move(groupStart);
  std::vector<float> score(static_cast<size_t>(n));
  AssignRows(x.data(), n, nullptr, score.data(), isa, threads, stop);
  double sim = 0;
  for (float v : score) sim += v;
  trainSim_ = sim / double(n);
  half_ = halfKeys;
  Sync(s, halfKeys, isa, threads, stop);
}

void Index::AssignRows(const float* x, int64_t n, int32_t* code, float* score, Isa isa, unsigned threads,
                       const std::atomic<bool>* stop) const {
  if (coarse_.empty()) {
    ivf::Assign(x, n, cent_.data(), nc_, dim_, code, score, isa, threads, stop);
    return;
  }
  const int64_t G = static_cast<int64_t>(groupStart_.size()) - 1;
  const int64_t t = std::min(kGroupProbe, G);
  std::vector<float> S(static_cast<size_t>(n * G));
  kernels::MatMulABt(x, n, dim_, coarse_.data(), G, S.data(), isa, threads);
  // each row's t best groups (threads take row ranges), then group → (row, which of its t)
  std::vector<int32_t> probe(static_cast<size_t>(n * t));
  const unsigned nt = static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(threads, n / 256)));
  Parallel(nt, [&](unsigned th) {
    std::vector<int32_t> order(static_cast<size_t>(G));
    for (int64_t r = n * th / nt; r < n * (th + 1) / nt; ++r) {
      const float* s = S.data() + r * G;
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + t, order.end(),
                        [s](int32_t a, int32_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
      std::copy(order.begin(), order.begin() + t, probe.begin() + r * t);
    }
  });
  std::vector<std::vector<int64_t>> slotsOf(static_cast<size_t>(G));  // r·t + j, rows in order
  for (int64_t q = 0; q < n * t; ++q) slotsOf[probe[q]].push_back(q);
  if (Stopped(stop)) Aborted("key IVF glance");
  // every (row, probed group) pair's best fine centroid; threads take whole groups, one GEMM each
  std::vector<float> bestOf(static_cast<size_t>(n * t), -std::numeric_limits<float>::infinity());
  std::vector<int32_t> argOf(static_cast<size_t>(n * t), -1);
  std::atomic<int64_t> next{0};
  Parallel(static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(threads, G))), [&](unsigned) {
    std::vector<float> xs, P;
    for (int64_t g = next++; g < G; g = next++) {
      const int64_t c0 = groupStart_[g], cn = groupStart_[g + 1] - c0;
      const std::vector<int64_t>& slots = slotsOf[g];
      const int64_t nr = static_cast<int64_t>(slots.size());
      if (cn == 0 || nr == 0) continue;
      if (Stopped(stop)) Aborted("key IVF glance");
      xs.resize(static_cast<size_t>(nr * dim_));
      for (int64_t i = 0; i < nr; ++i) std::copy(x + (slots[i] / t) * dim_, x + (slots[i] / t + 1) * dim_, xs.begin() + i * dim_);
      P.resize(static_cast<size_t>(nr * cn));
      kernels::MatMulABt(xs.data(), nr, dim_, cent_.data() + c0 * dim_, cn, P.data(), isa, 1);
      for (int64_t i = 0; i < nr; ++i) {
        const float* p = P.data() + i * cn;
        int64_t j = 0;
        for (int64_t c = 1; c < cn; ++c)
          if (p[c] > p[j]) j = c;  // the first best: the lowest centroid of a tie
        bestOf[slots[i]] = p[j];
        argOf[slots[i]] = static_cast<int32_t>(c0 + j);
      }
    }
  });
  // per row, the best over its groups, a tie to the lowest centroid (the order of the groups is moot)
  std::vector<float> best(static_cast<size_t>(n), -std::numeric_limits<float>::infinity());
  std::vector<int32_t> arg(static_cast<size_t>(n), -1);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < t; ++j) {
      const int64_t q = r * t + j;
      if (argOf[q] >= 0 && (arg[r] < 0 || bestOf[q] > best[r] || (bestOf[q] == best[r] && argOf[q] < arg[r])))
        best[r] = bestOf[q], arg[r] = argOf[q];
    }
  std::vector<float> xs;
  // rows whose best groups hold no centroid (groups no training row fell in): every centroid
  std::vector<int64_t> left;
  for (int64_t r = 0; r < n; ++r)
    if (arg[r] < 0) left.push_back(r);
  if (!left.empty()) {
    xs.resize(left.size() * static_cast<size_t>(dim_));
    for (size_t i = 0; i < left.size(); ++i) std::copy(x + left[i] * dim_, x + (left[i] + 1) * dim_, xs.begin() + i * dim_);
    std::vector<int32_t> c(left.size());
    std::vector<float> v(left.size());
    ivf::Assign(xs.data(), static_cast<int64_t>(left.size()), cent_.data(), nc_, dim_, c.data(), v.data(), isa, threads, stop);
    for (size_t i = 0; i < left.size(); ++i) arg[left[i]] = c[i], best[left[i]] = v[i];
  }
  for (int64_t r = 0; r < n; ++r) {
    if (code) code[r] = arg[r];
    if (score) score[r] = best[r];
  }
}

SyncStats Index::Sync(const bank::Snapshot& s, bool halfKeys, Isa isa, unsigned threads,
                      const std::atomic<bool>* stop) {
  SyncStats st;
  const auto t0 = std::chrono::steady_clock::now();
  if (nc_ == 0 || s.generation == synced_) return st;
  if (halfKeys != half_ && !slots_.empty())
    throw Failure(Code::INVALID_ARGUMENT, "the bank's key type differs from the one the key IVF was trained on");
  half_ = halfKeys;
  if (radiusStale_) Radii(isa);
  std::vector<const bank::Entry*> fresh;
  int64_t found = 0;
  for (const auto& e : s.entries) {
    if (slotOf_.count(e.handle)) ++found;
    else fresh.push_back(&e);
  }
  if (found != live_) {
    std::unordered_set<int32_t> held;
    held.reserve(s.entries.size());
    for (const auto& e : s.entries) held.insert(e.handle);
    std::vector<int32_t> gone;
    for (const auto& [h, slot] : slotOf_)
      if (!held.count(h)) gone.push_back(h);
    for (int32_t h : gone) {
      const int32_t slot = slotOf_[h];
      Slot& sl = slots_[slot];
      sl.live = false;
      sl.keys.reset();
      --live_;
      liveRows_ -= sl.rows;
      liveSim_ -= sl.simSum;
      deadRows_ += sl.rows;
      slotOf_.erase(h);
    }
    st.removed = static_cast<int64_t>(gone.size());
    if (deadRows_ > 64 && deadRows_ > liveRows_ / 2) Compact();
  }
  threads = Threads(threads);
  std::vector<const bank::Entry*> batch;
  std::vector<float> x;
  std::vector<int32_t> code;
  std::vector<float> score, reach;
  auto flush = [&]() {
    if (batch.empty()) return;
    int64_t n = 0;
    for (const auto* e : batch) n += e->keys->rows;
    x.resize(static_cast<size_t>(n * dim_));
    std::vector<int64_t> rowOf(batch.size() + 1, 0);
    for (size_t i = 0; i < batch.size(); ++i) rowOf[i + 1] = rowOf[i] + batch[i]->keys->rows;
    const unsigned nc = static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(threads, n / 4096)));
    Parallel(nc, [&](unsigned t) {  // the skills' keys as float32 rows, threads taking skills
      for (size_t i = batch.size() * t / nc; i < batch.size() * (t + 1) / nc; ++i) {
        const bank::KeyBlock& b = *batch[i]->keys;
        if (halfKeys)
          kernels::HalfToFloats(b.half.data(), x.data() + rowOf[i] * dim_, b.rows * dim_, isa);
        else
          std::copy(b.data.begin(), b.data.begin() + b.rows * dim_, x.begin() + rowOf[i] * dim_);
      }
    });
    int64_t at = 0;
    code.resize(static_cast<size_t>(n));
    score.resize(static_cast<size_t>(n));
    AssignRows(x.data(), n, code.data(), score.data(), isa, threads, stop);
    reach.resize(static_cast<size_t>(n));  // each key's distance to its centroid, threads by row ranges
    Parallel(nc, [&](unsigned t) {
      for (int64_t r = n * t / nc; r < n * (t + 1) / nc; ++r) reach[r] = Reach(code[r], x.data() + r * dim_);
    });
    at = 0;
    for (const auto* e : batch) {
      const int64_t r = e->keys->rows;
      const int32_t slot = static_cast<int32_t>(slots_.size());
      const int64_t first = static_cast<int64_t>(keySlot_.size());
      double sim = 0;
      for (int64_t j = 0; j < r; ++j) {
        sim += score[at + j];
        keySlot_.push_back(slot);
        lists_[code[at + j]].push_back(static_cast<int32_t>(first + j));
        if (reach[at + j] > radius_[code[at + j]]) radius_[code[at + j]] = reach[at + j];
      }
      slots_.push_back(Slot{e->handle, true, first, r, sim, e->keys});
      slotOf_[e->handle] = slot;
      ++live_;
      liveRows_ += r;
      liveSim_ += sim;
      at += r;
      ++st.added;
    }
    st.assignedRows += n;
    batch.clear();
  };
  int64_t pending = 0;
  for (const bank::Entry* e : fresh) {
    if (keySlot_.size() + static_cast<size_t>(pending + e->keys->rows) > size_t(std::numeric_limits<int32_t>::max()))
      throw Failure(Code::INVALID_ARGUMENT, "the key IVF holds at most 2^31 - 1 keys");
    batch.push_back(e);
    pending += e->keys->rows;
    if (pending >= kAssignChunk) {
      flush();
      pending = 0;
    }
  }
  flush();
  if (st.removed == 0 && st.added > 0 && colOf_.size() + size_t(st.added) == slots_.size() &&
      (colHandle_.empty() || slots_[colOf_.size()].handle > colHandle_.back())) {
    // installs only, every new handle above the last column's (handles only grow): appended
    for (size_t i = colOf_.size(); i < slots_.size(); ++i) {
      const int32_t col = static_cast<int32_t>(colHandle_.size());
      colOf_.push_back(col);
      colHandle_.push_back(slots_[i].handle);
      if (slots_[i].rows == 0) emptyCols_.push_back(col);
    }
  } else if (st.added > 0 || st.removed > 0 || colOf_.size() != slots_.size()) {
    Columns();
  }
  synced_ = s.generation;
  st.ms = MsSince(t0);
  return st;
}

float Index::Reach(int32_t c, const float* key) const {
  double ss = 0;
  const float* ce = cent_.data() + int64_t(c) * dim_;
  for (int64_t d = 0; d < dim_; ++d) {
    const double x = double(key[d]) - double(ce[d]);
    ss += x * x;
  }
  // rounded up, so the float still bounds the distance
  return std::nextafter(static_cast<float>(std::sqrt(ss)), std::numeric_limits<float>::infinity());
}

void Index::Widen(int32_t c, const float* key) {
  const float r = Reach(c, key);
  if (r > radius_[c]) radius_[c] = r;
}

void Index::Radii(Isa isa) {
  std::fill(radius_.begin(), radius_.end(), 0.f);
  std::vector<float> kf(static_cast<size_t>(dim_));
  for (int64_t c = 0; c < nc_; ++c)
    for (int32_t id : lists_[c]) {
      const Slot& s = slots_[keySlot_[id]];
      if (!s.live) continue;
      const int64_t r = id - s.keyStart;
      if (half_) {
        kernels::HalfToFloats(s.keys->half.data() + r * dim_, kf.data(), dim_, isa);
        Widen(static_cast<int32_t>(c), kf.data());
      } else {
        Widen(static_cast<int32_t>(c), s.keys->data.data() + r * dim_);
      }
    }
  radiusStale_ = false;
}

Index::Exported Index::Export() const {
  Exported e;
  e.centroids = cent_;
  e.coarse = coarse_;
  e.groupStart = groupStart_;
  std::vector<int32_t> code(keySlot_.size(), -1);
  for (int64_t c = 0; c < nc_; ++c)
    for (int32_t id : lists_[c]) code[id] = static_cast<int32_t>(c);
  std::vector<int32_t> order;
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].live) order.push_back(static_cast<int32_t>(i));
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return slots_[a].handle < slots_[b].handle; });
  e.offsets.push_back(0);
  for (int32_t i : order) {
    const Slot& s = slots_[i];
    e.handles.push_back(s.handle);
    e.codes.insert(e.codes.end(), code.begin() + s.keyStart, code.begin() + s.keyStart + s.rows);
    e.offsets.push_back(static_cast<int32_t>(e.codes.size()));
    e.simSums.push_back(s.simSum);
  }
  return e;
}

void Index::Restore(std::vector<float> centroids, std::vector<float> coarse, std::vector<int64_t> groupStart,
                    int64_t trainedRows, double trainSim) {
  const int64_t nc = static_cast<int64_t>(centroids.size()) / dim_;
  if (nc < 1 || nc * dim_ != static_cast<int64_t>(centroids.size()))
    throw Failure(Code::INVALID_ARGUMENT, "centroids must be a positive multiple of dim values");
  const int64_t G = static_cast<int64_t>(coarse.size()) / dim_;
  if (G * dim_ != static_cast<int64_t>(coarse.size()))
    throw Failure(Code::INVALID_ARGUMENT, "coarse centroids must be a multiple of dim values");
  if (G > 0) {
    if (static_cast<int64_t>(groupStart.size()) != G + 1 || groupStart[0] != 0 || groupStart[G] != nc)
      throw Failure(Code::INVALID_ARGUMENT, "group bounds do not cover the centroids");
    for (int64_t g = 0; g < G; ++g)
      if (groupStart[g + 1] < groupStart[g]) throw Failure(Code::INVALID_ARGUMENT, "group bounds decrease");
  } else if (!groupStart.empty()) {
    throw Failure(Code::INVALID_ARGUMENT, "group bounds without coarse centroids");
  }
  Reset(std::move(centroids), nc, trainedRows, trainSim);
  coarse_ = std::move(coarse);
  groupStart_ = std::move(groupStart);
}

int64_t Index::Load(const bank::Snapshot& s, bool halfKeys, const int32_t* handles, int64_t n, const int32_t* offsets,
                    const int32_t* codes, int64_t nCodes, const double* simSums) {
  if (nc_ == 0) throw Failure(Code::INVALID_ARGUMENT, "the key IVF has no centroids");
  if (!slots_.empty() && halfKeys != half_)
    throw Failure(Code::INVALID_ARGUMENT, "the bank's key type differs from the one the key IVF holds");
  if (offsets[0] != 0 || offsets[n] != nCodes) throw Failure(Code::INVALID_ARGUMENT, "code offsets do not fit the codes");
  for (int64_t i = 0; i < n; ++i)
    if (offsets[i + 1] < offsets[i]) throw Failure(Code::INVALID_ARGUMENT, "code offsets decrease");
  for (int64_t j = 0; j < nCodes; ++j)
    if (codes[j] < 0 || codes[j] >= nc_)
      throw Failure(Code::INVALID_ARGUMENT, "code " + std::to_string(codes[j]) + " is not a centroid of this index");
  half_ = halfKeys;
  int64_t taken = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t h = handles[i];
    auto it = std::lower_bound(s.entries.begin(), s.entries.end(), h,
                               [](const bank::Entry& e, int32_t x) { return e.handle < x; });
    if (it == s.entries.end() || it->handle != h || slotOf_.count(h)) continue;
    const int64_t r = it->keys->rows;
    if (r != offsets[i + 1] - offsets[i]) continue;
    if (keySlot_.size() + static_cast<size_t>(r) > size_t(std::numeric_limits<int32_t>::max()))
      throw Failure(Code::INVALID_ARGUMENT, "the key IVF holds at most 2^31 - 1 keys");
    const int32_t slot = static_cast<int32_t>(slots_.size());
    const int64_t first = static_cast<int64_t>(keySlot_.size());
    for (int64_t j = 0; j < r; ++j) {
      keySlot_.push_back(slot);
      lists_[codes[offsets[i] + j]].push_back(static_cast<int32_t>(first + j));
    }
    slots_.push_back(Slot{h, true, first, r, simSums[i], it->keys});
    slotOf_[h] = slot;
    ++live_;
    liveRows_ += r;
    liveSim_ += simSums[i];
    ++taken;
  }
  Columns();
  radiusStale_ = true;  // the next Sync measures the lists' radii
  synced_ = 0;  // the next Sync walks the bank (drops what it lacks, assigns what the file lacked)
  return taken;
}

void Index::Compact() {
  std::vector<Slot> slots;
  std::vector<int32_t> newSlot(slots_.size(), -1);
  std::vector<int64_t> newStart(slots_.size(), 0);
  int64_t next = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (!slots_[i].live) continue;
    newSlot[i] = static_cast<int32_t>(slots.size());
    newStart[i] = next;
    Slot n = slots_[i];
    n.keyStart = next;
    next += n.rows;
    slots.push_back(std::move(n));
  }
  std::vector<int32_t> keySlot(static_cast<size_t>(next));
  for (size_t i = 0; i < slots.size(); ++i)
    std::fill(keySlot.begin() + slots[i].keyStart, keySlot.begin() + slots[i].keyStart + slots[i].rows,
              static_cast<int32_t>(i));
  for (auto& l : lists_) {
    size_t o = 0;
    for (int32_t id : l) {
      const int32_t sl = keySlot_[id];
      if (newSlot[sl] < 0) continue;
      l[o++] = static_cast<int32_t>(newStart[sl] + (id - slots_[sl].keyStart));
    }
    l.resize(o);
  }
  slots_ = std::move(slots);
  keySlot_ = std::move(keySlot);
  codes_.clear();  // the lists were rewritten: their codes are made again by the next i8 glance
  slotOf_.clear();
  for (size_t i = 0; i < slots_.size(); ++i) slotOf_[slots_[i].handle] = static_cast<int32_t>(i);
  deadRows_ = 0;
  Columns();
}

const int32_t* Index::ColsOf(int32_t c) const {
  std::vector<int32_t>& v = listCols_[c];
  const auto& list = lists_[c];
  if (listColsVer_[c] != colsVer_ || v.size() != list.size()) {
    v.resize(list.size());
    for (size_t j = 0; j < list.size(); ++j) v[j] = colOf_[keySlot_[list[j]]];
    listColsVer_[c] = colsVer_;
  }
  return v.data();
}

void Index::Columns() {
  ++colsVer_;
  std::vector<int32_t> order;
  order.reserve(static_cast<size_t>(live_));
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].live) order.push_back(static_cast<int32_t>(i));
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return slots_[a].handle < slots_[b].handle; });
  colOf_.assign(slots_.size(), -1);
  colHandle_.resize(order.size());
  emptyCols_.clear();
  for (size_t c = 0; c < order.size(); ++c) {
    colOf_[order[c]] = static_cast<int32_t>(c);
    colHandle_[c] = slots_[order[c]].handle;
    if (slots_[order[c]].rows == 0) emptyCols_.push_back(static_cast<int32_t>(c));
  }
}

void CentroidScores(const float* q, int64_t nq, const float* cent, int64_t nc, int64_t dim, float* S, kernels::Isa isa,
                    unsigned threads) {
  std::vector<float> Qp;
  kernels::PackQueryPanels(q, nq, dim, isa, Qp);
  const int64_t blocks = (nc + kScoreBlock - 1) / kScoreBlock;
  std::atomic<int64_t> nextBlock{0};
  Parallel(static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(threads, blocks))), [&](unsigned) {
    std::vector<float> scratch;
    for (;;) {
      const int64_t b = nextBlock.fetch_add(1, std::memory_order_relaxed);
      if (b >= blocks) break;
      const int64_t c0 = b * kScoreBlock, cb = std::min(kScoreBlock, nc - c0);
      kernels::ScorePanels(Qp.data(), nq, dim, cent + c0 * dim, cb, S + c0, nc, isa, scratch);
    }
  });
}

std::vector<int64_t> ProbeCounts(const float* w, int64_t nq, int64_t nprobe, int64_t centroids, bool spread) {
  std::vector<int64_t> n(static_cast<size_t>(nq), std::min(nprobe, centroids));
  if (!spread || nprobe >= centroids) return n;
  double W = 0;
  for (int64_t i = 0; i < nq; ++i) W += double(w[i]);
  if (!(W > 0) || !std::isfinite(W)) return n;
  const int64_t lo = std::min(centroids, (nprobe + kSpreadRange - 1) / kSpreadRange);
  const int64_t hi = std::min(centroids, kSpreadRange * nprobe);
  for (int64_t i = 0; i < nq; ++i) {
    const double x = std::floor(double(nprobe) * double(nq) * double(w[i]) / W + 0.5);
    n[i] = x <= double(lo) ? lo : x >= double(hi) ? hi : static_cast<int64_t>(x);
  }
  return n;
}

int64_t Index::ProbeGroups(int64_t probeGroups) const {
  const int64_t G = static_cast<int64_t>(groupStart_.size()) - 1;
  return G <= 0 || probeGroups <= 0 ? 0 : std::min(probeGroups, G);
}

void Index::ProbeTwoLevel(const float* q, int64_t nq, const std::vector<int64_t>& np, int64_t t, std::vector<int64_t>& probeAt,
                          std::vector<int32_t>& probe, Isa isa, unsigned threads, SearchStats& st) const {
  auto t0 = std::chrono::steady_clock::now();
  const int64_t G = static_cast<int64_t>(groupStart_.size()) - 1;
  // each row's t best coarse groups (ties to the lower)
  std::vector<float> S(static_cast<size_t>(nq * G));
  kernels::MatMulABt(q, nq, dim_, coarse_.data(), G, S.data(), isa, threads);
  std::vector<int32_t> best(static_cast<size_t>(nq * t));
  {
    const unsigned nt = static_cast<unsigned>(std::min<int64_t>(threads, nq));
    Parallel(nt, [&](unsigned th) {
      std::vector<int32_t> order(static_cast<size_t>(G));
      for (int64_t i = nq * th / nt; i < nq * (th + 1) / nt; ++i) {
        const float* s = S.data() + i * G;
        std::iota(order.begin(), order.end(), 0);
        if (t < G)
          std::nth_element(order.begin(), order.begin() + (t - 1), order.end(),
                           [s](int32_t a, int32_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
        std::copy(order.begin(), order.begin() + t, best.begin() + i * t);
      }
    });
  }
  // row i's candidates (its groups' fine centroids) at cand[candAt[i] …); group g → (row, offset)
  std::vector<int64_t> candAt(static_cast<size_t>(nq + 1), 0);
  std::vector<int64_t> memberAt(static_cast<size_t>(G + 1), 0);
  for (int64_t i = 0; i < nq; ++i) {
    int64_t n = 0;
    for (int64_t j = 0; j < t; ++j) {
      const int32_t g = best[i * t + j];
      n += groupStart_[g + 1] - groupStart_[g];
      ++memberAt[g + 1];
    }
    candAt[i + 1] = candAt[i] + n;
  }
  for (int64_t g = 0; g < G; ++g) memberAt[g + 1] += memberAt[g];
  struct Member {
    int32_t row;
    int64_t at;  // where its candidates from this group go
  };
  std::vector<Member> members(static_cast<size_t>(memberAt[G]));
  {
    std::vector<int64_t> fill(memberAt.begin(), memberAt.end() - 1);
    for (int64_t i = 0; i < nq; ++i) {
      int64_t at = candAt[i];
      for (int64_t j = 0; j < t; ++j) {
        const int32_t g = best[i * t + j];
        members[fill[g]++] = Member{static_cast<int32_t>(i), at};
        at += groupStart_[g + 1] - groupStart_[g];
      }
    }
  }
  std::vector<float> candScore(static_cast<size_t>(candAt[nq]));
  std::vector<int32_t> candId(static_cast<size_t>(candAt[nq]));
  // every group's rows against its fine centroids, threads taking groups
  std::atomic<int64_t> next{0};
  const unsigned nt = static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(threads, G)));
  Parallel(nt, [&](unsigned) {
    std::vector<float> xs, P;
    for (;;) {
      const int64_t g = next.fetch_add(1, std::memory_order_relaxed);
      if (g >= G) break;
      const int64_t c0 = groupStart_[g], cn = groupStart_[g + 1] - c0;
      const int64_t m0 = memberAt[g], nr = memberAt[g + 1] - m0;
      if (cn == 0 || nr == 0) continue;
      xs.resize(static_cast<size_t>(nr * dim_));
      for (int64_t i = 0; i < nr; ++i)
        std::copy(q + int64_t(members[m0 + i].row) * dim_, q + (int64_t(members[m0 + i].row) + 1) * dim_, xs.begin() + i * dim_);
      P.resize(static_cast<size_t>(nr * cn));
      kernels::MatMulABt(xs.data(), nr, dim_, cent_.data() + c0 * dim_, cn, P.data(), isa, 1);
      for (int64_t i = 0; i < nr; ++i) {
        const int64_t at = members[m0 + i].at;
        std::copy(P.begin() + i * cn, P.begin() + (i + 1) * cn, candScore.begin() + at);
        for (int64_t j = 0; j < cn; ++j) candId[at + j] = static_cast<int32_t>(c0 + j);
      }
    }
  });
  st.centroidMs = MsSince(t0);
  // each row's np[i] best candidates (ties to the lower centroid); all of them when fewer
  for (int64_t i = 0; i < nq; ++i) probeAt[i + 1] = probeAt[i] + std::min(np[i], candAt[i + 1] - candAt[i]);
  probe.resize(static_cast<size_t>(probeAt[nq]));
  {
    const unsigned nr = static_cast<unsigned>(std::min<int64_t>(threads, nq));
    Parallel(nr, [&](unsigned th) {
      std::vector<int32_t> order;
      for (int64_t i = nq * th / nr; i < nq * (th + 1) / nr; ++i) {
        const int64_t c0 = candAt[i], cn = candAt[i + 1] - c0, take = probeAt[i + 1] - probeAt[i];
        const float* s = candScore.data() + c0;
        const int32_t* id = candId.data() + c0;
        order.resize(static_cast<size_t>(cn));
        std::iota(order.begin(), order.end(), 0);
        if (take < cn)
          std::nth_element(order.begin(), order.begin() + (take - 1), order.end(), [s, id](int32_t a, int32_t b) {
            return s[a] > s[b] || (s[a] == s[b] && id[a] < id[b]);
          });
        for (int64_t j = 0; j < take; ++j) probe[probeAt[i] + j] = id[order[j]];
      }
    });
  }
}

void Index::CodeList(int32_t c, Isa isa, float* kf, int8_t* scratch) const {
  ListCodes& lc = codes_[c];
  const auto& list = lists_[c];
  const int64_t n = static_cast<int64_t>(list.size());
  for (int64_t j = lc.n; j < n; ++j) {
    const int32_t id = list[j];
    const Slot& sk = slots_[keySlot_[id]];
    const int64_t r = id - sk.keyStart;
    const float* key = nullptr;
    if (sk.live) {
      if (half_) {
        kernels::HalfToFloats(sk.keys->half.data() + r * dim_, kf, dim_, isa);
        key = kf;
      } else {
        key = sk.keys->data.data() + r * dim_;
      }
    }
    CodeKey(lc, j, key, dim_, !sk.live, scratch);
  }
  lc.n = n;
}

SearchResult Index::Glance(const float* q, int64_t nq, const float* w, int64_t k, int64_t nprobe, Isa isa,
                           unsigned threads, SearchStats* stats, const std::atomic<bool>* stop,
                           int64_t probeGroups, bool prune, bool i8, bool spread,
                           const std::vector<int32_t>* only) const {
  SearchStats st;
  SearchResult out;
  const int64_t nCols = static_cast<int64_t>(colHandle_.size());
  out.handles = colHandle_;
  out.g.assign(static_cast<size_t>(nCols), 0.f);
  st.bankRows = liveRows_;
  if (nCols == 0 || nq == 0 || nc_ == 0) {
    if (stats) *stats = st;
    return out;
  }
  // only the listed skills take part (only): the other columns are offered to no row's top k
  std::vector<uint8_t> skip;
  int64_t skipped = 0;
  if (only != nullptr) {
    skip.assign(static_cast<size_t>(nCols), 1);
    skipped = nCols;
    for (int32_t h : *only) {
      const auto it = slotOf_.find(h);
      if (it == slotOf_.end()) continue;
      const int32_t col = colOf_[static_cast<size_t>(it->second)];
      if (col >= 0 && skip[static_cast<size_t>(col)] != 0) {
        skip[static_cast<size_t>(col)] = 0;
        --skipped;
      }
    }
    if (skipped == 0) skip.clear();
  }
  if (skipped == nCols) {
    if (stats) *stats = st;
    return out;
  }
  const uint8_t* skipCol = skip.empty() ? nullptr : skip.data();
  threads = Threads(threads);
  const int32_t kk = static_cast<int32_t>(std::min<int64_t>(k, nCols - skipped));
  const bool all = nprobe >= nc_;
  const int64_t np = all ? nc_ : nprobe;
  // each row's probe count (every list for every row when all)
  const std::vector<int64_t> npRow = ProbeCounts(w, nq, np, nc_, spread);
  const int64_t npMin = nq > 0 ? *std::min_element(npRow.begin(), npRow.end()) : np;
  // radii not yet measured since a Load (Sync measures them): no bound to prune with
  if (radiusStale_) prune = false;
  // i8: the lists' codes (made or extended now) and the rows in int8, unless a product could
  // overflow (|every f32 score| ≤ 1.01·N·K; beyond, the float32 scan runs and says whether one does)
  const kernels::I8Isa i8isa = kernels::SelectI8Isa(isa);
  const int64_t dim4 = kernels::Dim4(dim_);
  kernels::I8Queries Q8;
  std::vector<float> Rp1;  // i8: each row packed alone for the float32 scan of the keys its bound keeps
  const int64_t P1 = ScanPanelRows(isa, 1);
  double maxQ8 = 0;  // the largest N of the rows (a list's products may overflow past 1e36 / N: float32 there)
  if (i8) {
    if (codes_.size() != static_cast<size_t>(nc_)) codes_.assign(static_cast<size_t>(nc_), ListCodes{});
    if (listCols_.size() != static_cast<size_t>(nc_)) {
      listCols_.assign(static_cast<size_t>(nc_), {});
      listColsVer_.assign(static_cast<size_t>(nc_), 0);
    }
    std::vector<int64_t> rows(static_cast<size_t>(nq));
    std::iota(rows.begin(), rows.end(), 0);
    Q8 = kernels::QuantizeQueries(q, rows, dim_, kernels::I8QueryMax(i8isa));
    for (float v : Q8.norm) maxQ8 = std::max(maxQ8, double(v));
    if (!std::isfinite(maxQ8)) i8 = false;
  }
  std::vector<float> Qf;  // i8: the rows in float32, each zero-padded to Dim4(dim)·4 (the refined scores')
  if (i8) {
    Qf.assign(static_cast<size_t>(nq * dim4 * 4), 0.f);
    for (int64_t i = 0; i < nq; ++i) std::copy(q + i * dim_, q + (i + 1) * dim_, Qf.begin() + i * dim4 * 4);
    Rp1.resize(static_cast<size_t>(nq * P1 * dim_));
    for (int64_t i = 0; i < nq; ++i) {
      const float* rp = q + i * dim_;
      ScanPackRows(isa, &rp, 1, dim_, Rp1.data() + i * P1 * dim_);
    }
  }
  // prune and i8 both scan each row's seed lists first, for a floor under its k-th best
  const bool twoPass = prune || i8;

  // 1. Each row's probed lists: its npRow[i] best centroids (ties to the lower), or every list, as
  // probe[probeAt[i] …); or (probeAll) every list for every row, without a probe array.
  auto t0 = std::chrono::steady_clock::now();
  const int64_t t = twoPass ? 0 : ProbeGroups(probeGroups);
  std::vector<int64_t> probeAt(static_cast<size_t>(nq + 1), 0);
  std::vector<int32_t> probe;
  // nq × nc centroid scores (flat probe, or the bound), in the index's kept buffer
  std::vector<float>& S = scores_;
  bool haveScores = false;  // S holds this glance's nq × nc scores (the flat probe or the bound)
  const bool probeAll = all;
  if (!all || twoPass) {
    if (t > 0) {
      ProbeTwoLevel(q, nq, npRow, t, probeAt, probe, isa, threads, st);
    } else {
      // S = Q·Cᵀ by blocks of kScoreBlock centroids (a block's packed panels stay in cache while every
      // row is scored against them); S is only grown, never cleared, as every element is written.
      if (S.size() < static_cast<size_t>(nq * nc_)) S.resize(static_cast<size_t>(nq * nc_));
      haveScores = true;
      CentroidScores(q, nq, cent_.data(), nc_, dim_, S.data(), isa, threads);
      st.centroidMs = MsSince(t0);
      if (!all) {
        for (int64_t i = 0; i < nq; ++i) probeAt[i + 1] = probeAt[i] + npRow[i];
        probe.resize(static_cast<size_t>(probeAt[nq]));
        const unsigned nt = static_cast<unsigned>(std::min<int64_t>(threads, nq));
        Parallel(nt, [&](unsigned th) {
          SelectScratch scratch;
          for (int64_t i = nq * th / nt; i < nq * (th + 1) / nt; ++i)
            SelectBest(S.data() + i * nc_, nc_, npRow[i], probe.data() + probeAt[i], scratch, isa);
        });
      }
    }
  }
  if (Stopped(stop)) Aborted("key IVF glance");

  // list → rows (ascending) as CSR, from (row, list) pairs that `keep` accepts
  struct Csr {
    std::vector<int64_t> start;
    std::vector<int32_t> rows;
  };
  const auto csr = [&](auto&& pairs) {
    Csr c;
    c.start.assign(static_cast<size_t>(nc_ + 1), 0);
    pairs([&](int32_t, int32_t l) { ++c.start[l + 1]; });
    for (int64_t l = 0; l < nc_; ++l) c.start[l + 1] += c.start[l];
    c.rows.resize(static_cast<size_t>(c.start[nc_]));
    std::vector<int64_t> fill(c.start.begin(), c.start.end() - 1);
    pairs([&](int32_t i, int32_t l) { c.rows[fill[l]++] = i; });
    return c;
  };
  // every (row, list) pair probed, rows in order
  const auto probed = [&](auto&& f) {
    for (int64_t i = 0; i < nq; ++i) {
      if (probeAll) {
        for (int64_t l = 0; l < nc_; ++l) f(static_cast<int32_t>(i), static_cast<int32_t>(l));
      } else {
        for (int64_t j = probeAt[i]; j < probeAt[i + 1]; ++j) f(static_cast<int32_t>(i), probe[j]);
      }
    }
  };

  // Whether list c's codes can score it in int8: no non-finite key, and products that cannot overflow.
  const auto usable8 = [&](int32_t c) { return codes_[c].finite && maxQ8 * double(codes_[c].maxNorm) < 1e36; };
  // The int8 scores of list c's coded keys against the rows m holds for it: P, nr × the returned
  // stride (the list's length padded to whole tiles); q, corr and b are scratch.
  struct Rows8 {
    std::vector<const int8_t*> q;
    std::vector<int32_t> corr;
    std::vector<float> b, P;
  };
  const auto scores8 = [&](const Csr& m, int32_t c, Rows8& r8) {
    const ListCodes& lc = codes_[c];
    const int64_t ldP = static_cast<int64_t>(lc.scale.size());
    const int64_t r0 = m.start[c], nr = m.start[c + 1] - r0;
    r8.q.resize(static_cast<size_t>(nr));
    r8.corr.resize(static_cast<size_t>(nr));
    r8.b.resize(static_cast<size_t>(nr));
    for (int64_t i = 0; i < nr; ++i) {
      const int32_t row = m.rows[r0 + i];
      r8.q[i] = Q8.q.data() + int64_t(row) * Q8.rowBytes;
      r8.corr[i] = Q8.corr[row];
      r8.b[i] = Q8.b[row];
    }
    r8.P.resize(static_cast<size_t>(nr * ldP));
    ListScores8(i8isa, lc, dim4, r8.q.data(), r8.corr.data(), r8.b.data(), nr, r8.P.data(), ldP);
    return ldP;
  };

  // i8: row `row`'s float32 scores of the keys ids[0 … n) into Sc[j·P1], as the exact glance computes
  // them (the row packed alone); kp and Kf are scratch (an f16 bank's keys converted there, exactly).
  const auto scoreKeys = [&](const int32_t* ids, int64_t n, int64_t row, std::vector<const float*>& kp,
                             std::vector<float>& Kf, std::vector<float>& Sc, const float* zero) {
    kp.clear();
    if (half_) Kf.resize(static_cast<size_t>(n * dim_));
    for (int64_t j = 0; j < n; ++j) {
      const Slot& sk = slots_[keySlot_[ids[j]]];
      const int64_t r = ids[j] - sk.keyStart;
      if (half_) {
        float* dst = Kf.data() + j * dim_;
        kernels::HalfToFloats(sk.keys->half.data() + r * dim_, dst, dim_, isa);
        kp.push_back(dst);
      } else {
        kp.push_back(sk.keys->data.data() + r * dim_);
      }
    }
    Sc.resize(static_cast<size_t>(n * P1));
    ScanList(isa, kp.data(), n, Rp1.data() + row * P1 * dim_, 1, dim_, zero, Sc.data());
  };

  // 2. The scan: list by list, threads taking lists (costliest first); each thread's per-row top k,
  // kept across passes (offers only ever add to a row's union).
  const unsigned nt = threads;
  std::vector<TopSets> top;
  top.reserve(nt);
  for (unsigned th = 0; th < nt; ++th) top.emplace_back(nq, kk, skipCol);
  std::vector<int64_t> scored(nt, 0), coded(nt, 0), refined(nt, 0);
  std::vector<double> codeMs(nt, 0.0);
  std::vector<char> finite(nt, 1);
  // codes list c (the keys it gained since) when its codes are behind it; a list is one thread's a
  // pass, so race-free; thread th's time goes to codeMs
  const auto codeIfStale = [&](int32_t c, unsigned th, std::vector<float>& kf, std::vector<int8_t>& scratch) {
    if (codes_[c].n >= static_cast<int64_t>(lists_[c].size())) return;
    const auto tc = std::chrono::steady_clock::now();
    kf.resize(static_cast<size_t>(dim_));
    scratch.resize(static_cast<size_t>(dim4 * 4));
    CodeList(c, isa, kf.data(), scratch.data());
    codeMs[th] += MsSince(tc);
  };
  double scanMs = 0;
  // use8: lists with finite codes scored in int8 first, against each row's floor th8[row] (or its
  // thread's k-th best so far, when higher)
  const auto scan = [&](const Csr& m, bool use8, const float* th8) {
    const auto t1 = std::chrono::steady_clock::now();
    std::vector<int32_t> work;
    for (int64_t c = 0; c < nc_; ++c)
      if (m.start[c + 1] > m.start[c] && !lists_[c].empty()) work.push_back(static_cast<int32_t>(c));
    std::sort(work.begin(), work.end(), [&](int32_t a, int32_t b) {
      const int64_t ca = (m.start[a + 1] - m.start[a]) * int64_t(lists_[a].size());
      const int64_t cb = (m.start[b + 1] - m.start[b]) * int64_t(lists_[b].size());
      return ca > cb || (ca == cb && a < b);
    });
    st.lists += static_cast<int64_t>(work.size());
    std::atomic<size_t> next{0};
    Parallel(static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(nt, int64_t(work.size())))), [&](unsigned th) {
      TopSets& ts = top[th];
      std::vector<float> Rp, Sc, Kf, zero(static_cast<size_t>(dim_), 0.f);
      std::vector<int32_t> col;
      std::vector<const float*> kp, rp;
      Rows8 r8;
      std::vector<int32_t> keep, keepCol, pass8;
      std::vector<float> kf8;
      std::vector<int8_t> scratch8;
      for (;;) {
        const size_t at = next.fetch_add(1, std::memory_order_relaxed);
        if (at >= work.size()) break;
        if (Stopped(stop)) return;
        const int32_t c = work[at];
        if (use8) codeIfStale(c, th, kf8, scratch8);
        if (use8 && usable8(c)) {
          const ListCodes& lc = codes_[c];
          const auto& list = lists_[c];
          const int64_t nkAll = static_cast<int64_t>(list.size());
          const int32_t* cols = ColsOf(c);
          const int64_t r0 = m.start[c], nr = m.start[c + 1] - r0;
          const int64_t ldP = scores8(m, c, r8);
          coded[th] += nr * nkAll;
          bool ok = true;
          for (int64_t i = 0; i < nr; ++i) {
            const int32_t row = m.rows[r0 + i];
            const float low = std::max(th8[row], ts.floor(row));
            const float hw = (Q8.alpha[row] * lc.maxErr + Q8.beta[row] * lc.maxNorm) * (1.f + 1.f / 1024.f);
            const float* pr = r8.P.data() + i * ldP;
            keep.clear();
            keepCol.clear();
            // the keys whose int8 score the bound cannot rule out, found by the ISA's compares
            // (PassingKeys: 16 scores a compare on AVX-512), ascending; a live one is refined (its
            // residual codes against the float32 row) before the float32 scan
            const float* qr = Qf.data() + int64_t(row) * dim4 * 4;
            const float er = RefinedBound(Q8.alpha[row], Q8.norm[row], lc, dim_);
            int64_t nref = 0;
            pass8.clear();
            PassingKeys(i8isa, pr, nkAll, hw, low, pass8);
            for (const int32_t u : pass8) {
              if (cols[u] < 0) continue;  // a dead key
              ++nref;
              if (!(RefinedScore(i8isa, lc, u, qr, dim4) + er < low)) {
                keep.push_back(list[u]);
                keepCol.push_back(cols[u]);
              }
            }
            refined[th] += nref;
            const int64_t ns = static_cast<int64_t>(keep.size());
            if (ns == 0) continue;
            scoreKeys(keep.data(), ns, row, kp, Kf, Sc, zero.data());
            scored[th] += ns;
            for (int64_t j = 0; j < ns; ++j) {
              const float v = Sc[j * P1];
              ok &= std::fabs(v) <= FLT_MAX;
              ts.Offer(row, v, keepCol[j]);
            }
          }
          if (!ok) finite[th] = 0;
          continue;
        }
        // the list's live keys, read in place (an f16 bank's converted, exactly, into Kf)
        col.clear();
        kp.clear();
        const auto& list = lists_[c];
        if (half_) Kf.resize(list.size() * static_cast<size_t>(dim_));
        for (int32_t id : list) {
          const int32_t sl = keySlot_[id];
          const Slot& sk = slots_[sl];
          if (!sk.live) continue;
          const int64_t r = id - sk.keyStart;
          if (half_) {
            float* dst = Kf.data() + int64_t(col.size()) * dim_;
            kernels::HalfToFloats(sk.keys->half.data() + r * dim_, dst, dim_, isa);
            kp.push_back(dst);
          } else {
            kp.push_back(sk.keys->data.data() + r * dim_);
          }
          col.push_back(colOf_[sl]);
        }
        const int64_t nk = static_cast<int64_t>(col.size());
        if (nk == 0) continue;
        const int64_t r0 = m.start[c], nr = m.start[c + 1] - r0;
        rp.resize(static_cast<size_t>(nr));
        for (int64_t i = 0; i < nr; ++i) rp[i] = q + int64_t(m.rows[r0 + i]) * dim_;
        const int64_t P = ScanPanelRows(isa, nr);
        const int64_t ldS = (nr + P - 1) / P * P;
        Rp.resize(static_cast<size_t>(ldS * dim_));
        ScanPackRows(isa, rp.data(), nr, dim_, Rp.data());
        Sc.resize(static_cast<size_t>(nk * ldS));
        ScanList(isa, kp.data(), nk, Rp.data(), nr, dim_, zero.data(), Sc.data());
        scored[th] += nr * nk;
        bool ok = true;
        for (int64_t i = 0; i < nr; ++i) {
          const int32_t row = m.rows[r0 + i];
          const float* sv = Sc.data() + i;
          for (int64_t j = 0; j < nk; ++j) {
            const float v = sv[j * ldS];
            ok &= std::fabs(v) <= FLT_MAX;
            ts.Offer(row, v, col[j]);
          }
        }
        if (!ok) finite[th] = 0;
      }
    });
    scanMs += MsSince(t1);
  };
  // The int8 seed (i8): a row's floor from its seed lists without scoring all their keys in float32.
  // Each seed list's keys are scored in int8 against its rows; per row, each skill keeps its key of
  // best int8 score, and the kCodeSeedKeep·k skills best by it (ties to the lower column) have that
  // key scored in float32 and offered. The floor θ is the k-th best of those true scores: k skills
  // score at least that much, so the row's final k-th best does too, and the rest pass's bound stays
  // exact, whatever the int8 scores chose. Lists whose codes cannot be used (a non-finite key, or
  // products that could overflow) are scanned in float32 whole, as without the codes (seedDone); the
  // others are scanned again, with the bound, in the rest pass. Per (row, seed slot) the list's
  // candidates: one thread writes each.
  struct Cand8 {
    float p;
    int32_t col;
    int32_t list, pos;  // the key's list and its place there (its codes)
  };
  const auto better8 = [](const Cand8& a, const Cand8& b) { return a.p > b.p || (a.p == b.p && a.col < b.col); };
  const auto seedByCodes = [&](const Csr& m, const std::vector<int32_t>& seedOf, int64_t sn, std::vector<char>& done) {
    const auto t1 = std::chrono::steady_clock::now();
    const int64_t keepN = std::min<int64_t>(kCodeSeedKeep * int64_t(kk), nCols);
    std::vector<int32_t> lists;
    for (int64_t c = 0; c < nc_; ++c)
      if (m.start[c + 1] > m.start[c] && !lists_[c].empty()) lists.push_back(static_cast<int32_t>(c));
    // code the seed lists (each by one thread), then split them by whether their codes can be used
    {
      std::atomic<size_t> next{0};
      Parallel(static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(nt, int64_t(lists.size())))), [&](unsigned th) {
        std::vector<float> kf;
        std::vector<int8_t> scratch;
        for (size_t at = next++; at < lists.size(); at = next++) codeIfStale(lists[at], th, kf, scratch);
      });
    }
    std::vector<int32_t> work;
    for (int32_t c : lists)
      if (usable8(c)) {
        work.push_back(c);
        done[c] = 0;
      }
    // the lists whose codes cannot be used, with their rows (scanned whole in float32 below)
    const Csr plain = csr([&](auto&& f) {
      for (int32_t c : lists)
        if (done[c])
          for (int64_t j = m.start[c]; j < m.start[c + 1]; ++j) f(m.rows[j], c);
    });
    st.lists += static_cast<int64_t>(work.size());
    std::vector<std::vector<Cand8>> cands(static_cast<size_t>(nq * sn));
    std::atomic<size_t> next{0};
    Parallel(static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(nt, int64_t(work.size())))), [&](unsigned th) {
      Rows8 r8;
      std::vector<int32_t> at(static_cast<size_t>(nCols), -1);
      for (size_t w8 = next++; w8 < work.size(); w8 = next++) {
        if (Stopped(stop)) return;
        const int32_t c = work[w8];
        const auto& list = lists_[c];
        const int64_t nkAll = static_cast<int64_t>(list.size());
        const int32_t* cols = ColsOf(c);
        const int64_t r0 = m.start[c], nr = m.start[c + 1] - r0;
        const int64_t ldP = scores8(m, c, r8);
        coded[th] += nr * nkAll;
        for (int64_t i = 0; i < nr; ++i) {
          const int32_t row = m.rows[r0 + i];
          int64_t slot = 0;
          while (seedOf[row * sn + slot] != c) ++slot;
          std::vector<Cand8>& out = cands[static_cast<size_t>(row * sn + slot)];
          out.clear();
          const float* pr = r8.P.data() + i * ldP;
          for (int64_t j = 0; j < nkAll; ++j) {
            const int32_t col = cols[j];
            if (col < 0) continue;
            int32_t& a = at[col];
            if (a < 0) {
              a = static_cast<int32_t>(out.size());
              out.push_back(Cand8{pr[j], col, c, static_cast<int32_t>(j)});
            } else if (pr[j] > out[a].p) {
              out[a].p = pr[j];
              out[a].pos = static_cast<int32_t>(j);
            }
          }
          for (const Cand8& x : out) at[x.col] = -1;
          if (static_cast<int64_t>(out.size()) > keepN) {
            std::nth_element(out.begin(), out.begin() + (keepN - 1), out.end(), better8);
            out.resize(static_cast<size_t>(keepN));
          }
        }
      }
    });
    if (Stopped(stop)) Aborted("key IVF glance");
    // per row: the candidates of its seed lists merged (each skill's best), the best 2k refined
    const unsigned nrt = static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(nt, nq)));
    Parallel(nrt, [&](unsigned th) {
      TopSets& ts = top[th];
      std::vector<Cand8> row8;
      std::vector<int32_t> at(static_cast<size_t>(nCols), -1);
      bool ok = true;
      for (int64_t i = nq * th / nrt; i < nq * (th + 1) / nrt; ++i) {
        if (Stopped(stop)) return;
        row8.clear();
        for (int64_t slot = 0; slot < sn; ++slot)
          for (const Cand8& x : cands[static_cast<size_t>(i * sn + slot)]) {
            int32_t& a = at[x.col];
            if (a < 0) {
              a = static_cast<int32_t>(row8.size());
              row8.push_back(x);
            } else if (x.p > row8[a].p) {
              row8[a] = x;
            }
          }
        for (const Cand8& x : row8) at[x.col] = -1;
        if (static_cast<int64_t>(row8.size()) > keepN) {
          std::nth_element(row8.begin(), row8.begin() + (keepN - 1), row8.end(), better8);
          row8.resize(static_cast<size_t>(keepN));
        }
        const int64_t ns = static_cast<int64_t>(row8.size());
        if (ns == 0) continue;
        // each kept skill offered at a lower bound of its best key's float32 score, R − E from its
        // refined score: at most the skill's true max-sim, so the k-th best offer is a floor; the rest
        // pass scans these lists again and offers the true scores of the keys that can count
        refined[th] += ns;
        const float* qr = Qf.data() + i * dim4 * 4;
        for (int64_t j = 0; j < ns; ++j) {
          const ListCodes& lc = codes_[row8[j].list];
          const float v = RefinedScore(i8isa, lc, row8[j].pos, qr, dim4) - RefinedBound(Q8.alpha[i], Q8.norm[i], lc, dim_);
          ok &= std::fabs(v) <= FLT_MAX;
          ts.Offer(i, v, row8[j].col);
        }
      }
      if (!ok) finite[th] = 0;
    });
    scanMs += MsSince(t1);
    // the lists without usable codes: scanned whole in float32
    scan(plain, false, nullptr);
  };
  // a row's top k so far: the threads' offers merged, skills without keys at -1. Each thread's top k
  // is exact for its own offers, so the union's top k lies within theirs: each skill at its best
  // score among them, then the k best by (score desc, column asc), as offering them one by one would
  // leave them: merged[0 … n) holds that set, unordered but for merged[n − 1], the n-th best (the
  // row's floor; the vote adds each skill once a row, so the order within a row changes no sum).
  // Each thread merging rows holds its own set and column map (nCols entries, kept at -1 between rows).
  struct Merger {
    std::vector<Cand> merged;
    std::vector<int32_t> at;
  };
  std::vector<Merger> mergers(std::max<unsigned>(1, static_cast<unsigned>(std::min<int64_t>(threads, nq))));
  const auto mergeRow = [&](int64_t i, Merger& mg) {
    std::vector<Cand>& merged = mg.merged;
    if (mg.at.size() != static_cast<size_t>(nCols)) mg.at.assign(static_cast<size_t>(nCols), -1);
    merged.clear();
    const auto add = [&](float v, int32_t col) {
      int32_t& a = mg.at[col];
      if (a < 0) {
        a = static_cast<int32_t>(merged.size());
        merged.push_back(Cand{v, col});
      } else if (v > merged[a].v) {
        merged[a].v = v;
      }
    };
    for (unsigned th = 0; th < nt; ++th) {
      const Cand* e = top[th].set(i);
      for (int32_t j = 0; j < top[th].size(i); ++j) add(e[j].v, e[j].col);
    }
    for (int32_t c : emptyCols_)
      if (skipCol == nullptr || skipCol[c] == 0) add(-1.f, c);
    for (const Cand& x : merged) mg.at[x.col] = -1;
    const int32_t n = static_cast<int32_t>(std::min<size_t>(static_cast<size_t>(kk), merged.size()));
    if (n > 0)
      std::nth_element(merged.begin(), merged.begin() + (n - 1), merged.end(),
                       [](const Cand& a, const Cand& b) { return Above(a.v, a.col, b); });
    return n;
  };
  // f(i, merger) for every row, the rows shared out among the mergers' threads in contiguous runs
  const auto eachRowMerged = [&](auto&& f) {
    const unsigned nm = static_cast<unsigned>(mergers.size());
    Parallel(nm, [&](unsigned th) {
      for (int64_t i = nq * th / nm; i < nq * (th + 1) / nm; ++i) f(i, mergers[th]);
    });
  };

  if (!twoPass || !haveScores) {
    Csr m = csr(probed);
    st.probeMs = MsSince(t0) - st.centroidMs;
    scan(m, false, nullptr);
  } else {
    // The bound: a key k of list c scores q·k ≤ q·c + |q|·|k − c| ≤ S[i][c] + |q_i|·radius_[c] (+ the
    // float error of both products, `slack`). Seed: each row's kPruneSeed best probed lists; θ_i, the
    // k-th best of row i's offers then (skills without keys at -1), is at most its final k-th best, so
    // a list whose bound stays below θ_i holds no key that could enter row i's top k or raise a skill
    // in it: skipped, with the same result as scanning it.
    std::vector<double> qn(static_cast<size_t>(nq));
    for (int64_t i = 0; i < nq; ++i) {
      double ss = 0;
      for (int64_t d = 0; d < dim_; ++d) ss += double(q[i * dim_ + d]) * double(q[i * dim_ + d]);
      qn[i] = std::sqrt(ss);
    }
    // seeds: the row's kPruneSeed best probed lists by score (ties to the lower)
    // (with the int8 codes: kCodeSeed, and one more per kCodeSeedPerK of k)
    const int64_t seedN = std::min<int64_t>(i8 ? std::max<int64_t>(kCodeSeed, (kk + kCodeSeedPerK - 1) / kCodeSeedPerK) : kPruneSeed, npMin);
    std::vector<int32_t> seed(static_cast<size_t>(nq * seedN));
    {
      const unsigned ns = static_cast<unsigned>(std::min<int64_t>(threads, nq));
      Parallel(ns, [&](unsigned th) {
        std::vector<int32_t> cand;
        for (int64_t i = nq * th / ns; i < nq * (th + 1) / ns; ++i) {
          const float* s = S.data() + i * nc_;
          if (probeAll) {
            cand.resize(static_cast<size_t>(nc_));
            std::iota(cand.begin(), cand.end(), 0);
          } else {
            cand.assign(probe.begin() + probeAt[i], probe.begin() + probeAt[i + 1]);
          }
          std::partial_sort(cand.begin(), cand.begin() + seedN, cand.end(),
                            [s](int32_t a, int32_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
          std::copy(cand.begin(), cand.begin() + seedN, seed.begin() + i * seedN);
        }
      });
    }
    Csr first = csr([&](auto&& f) {
      for (int64_t i = 0; i < nq; ++i)
        for (int64_t j = 0; j < seedN; ++j) f(static_cast<int32_t>(i), seed[i * seedN + j]);
    });
    st.probeMs = MsSince(t0) - st.centroidMs;
    // seedDone[c]: every key of seed list c was scored in float32 for each row seeding from it (the
    // rest pass then skips c for those rows); with the int8 codes, only the lists whose codes cannot
    // be used are (the rest pass scans the others again for their seed rows, with the bound)
    std::vector<char> seedDone(static_cast<size_t>(nc_), 1);
    if (i8) {
      seedByCodes(first, seed, seedN, seedDone);
    } else {
      scan(first, false, nullptr);
    }
    if (Stopped(stop)) Aborted("key IVF glance");
    const auto t2 = std::chrono::steady_clock::now();
    std::vector<float> theta(static_cast<size_t>(nq), -std::numeric_limits<float>::infinity());
    eachRowMerged([&](int64_t i, Merger& mg) {
      if (mergeRow(i, mg) == kk) theta[i] = mg.merged[kk - 1].v;
    });
    // the float error of a computed product ≤ dim·2⁻²³·|a|·|b| (generous: the FMA chains and block
    // sums of both the centroid score and the key score)
    const double eps = double(dim_) * 2.4e-7;
    // rest: each row's probed lists that its seed did not finish and the bound keeps, as list → rows
    // CSR. The mergers' threads take contiguous runs of rows, each keeping its rows' lists in row
    // order and counting them per list; then each fills its rows in at its offset within every list:
    // rows ascending in each list, as a one-thread build leaves them. The kept lists take 4 bytes a
    // (row, list) pair, at most as much as S (at nprobe "all" without the bound, as much).
    const unsigned nr = static_cast<unsigned>(mergers.size());
    std::vector<std::vector<int64_t>> cnt(nr);
    std::vector<std::vector<int32_t>> kept(nr);    // thread th's rows' lists, row after row
    std::vector<std::vector<int64_t>> keptAt(nr);  // where each of its rows' lists start in kept[th]
    Csr rest;
    rest.start.assign(static_cast<size_t>(nc_ + 1), 0);
    Parallel(nr, [&](unsigned th) {
      std::vector<char> seen(static_cast<size_t>(nc_), 0);
      std::vector<int64_t>& c = cnt[th];
      std::vector<int32_t>& out = kept[th];
      std::vector<int64_t>& at = keptAt[th];
      c.assign(static_cast<size_t>(nc_), 0);
      const int64_t i0 = nq * th / nr, i1 = nq * (th + 1) / nr;
      at.assign(static_cast<size_t>(i1 - i0 + 1), 0);
      for (int64_t i = i0; i < i1; ++i) {
        for (int64_t j = 0; j < seedN; ++j) seen[seed[i * seedN + j]] = seedDone[seed[i * seedN + j]];
        const float* s = S.data() + i * nc_;
        const double th_i = theta[i];
        const auto visit = [&](int32_t l) {
          if (seen[l]) return;
          const double bound = double(s[l]) + qn[i] * double(radius_[l]);
          const double slack = eps * qn[i] * (2.0 * double(centNorm_[l]) + double(radius_[l])) + 1e-30;
          if (!prune || !(bound + slack < th_i)) {  // NaN: kept
            out.push_back(l);
            ++c[l];
          }
        };
        if (probeAll) {
          for (int64_t l = 0; l < nc_; ++l) visit(static_cast<int32_t>(l));
        } else {
          for (int64_t j = probeAt[i]; j < probeAt[i + 1]; ++j) visit(probe[j]);
        }
        for (int64_t j = 0; j < seedN; ++j) seen[seed[i * seedN + j]] = 0;
        at[i - i0 + 1] = static_cast<int64_t>(out.size());
      }
    });
    for (int64_t l = 0; l < nc_; ++l) {
      int64_t at = rest.start[l];
      for (unsigned th = 0; th < nr; ++th) {
        const int64_t n = cnt[th][l];
        cnt[th][l] = at;  // thread th's fill position in list l
        at += n;
      }
      rest.start[l + 1] = at;
    }
    rest.rows.resize(static_cast<size_t>(rest.start[nc_]));
    Parallel(nr, [&](unsigned th) {
      std::vector<int64_t>& fill = cnt[th];
      const std::vector<int32_t>& ls = kept[th];
      const std::vector<int64_t>& at = keptAt[th];
      const int64_t i0 = nq * th / nr;
      for (size_t r = 0; r + 1 < at.size(); ++r)
        for (int64_t j = at[r]; j < at[r + 1]; ++j) rest.rows[fill[ls[j]]++] = static_cast<int32_t>(i0 + static_cast<int64_t>(r));
    });
    st.probeMs += MsSince(t2);
    scan(rest, i8, theta.data());
  }
  if (Stopped(stop)) Aborted("key IVF glance");
  for (char f : finite)
    if (!f) throw Failure(Code::INVALID_ARGUMENT, "key IVF glance: a score came out non-finite");
  for (int64_t x : scored) st.scored += x;
  for (int64_t x : coded) st.coded += x;
  for (int64_t x : refined) st.refined += x;
  for (double x : codeMs) st.codeMs += x;
  st.scanMs = scanMs;

  // 3. Per row: the threads' top k merged, skills without keys at -1, then the vote in row order.
  t0 = std::chrono::steady_clock::now();
  double W = 0.0;
  for (int64_t i = 0; i < nq; ++i) W += w[i];
  // each row's set merged by the threads, then summed in row order (the same sums as one thread's)
  std::vector<Cand> sets(static_cast<size_t>(nq * kk));
  std::vector<int32_t> setN(static_cast<size_t>(nq), 0);
  eachRowMerged([&](int64_t i, Merger& mg) {
    if (w[i] == 0.0f) return;
    setN[i] = mergeRow(i, mg);
    std::copy(mg.merged.begin(), mg.merged.begin() + setN[i], sets.begin() + i * kk);
  });
  std::vector<double> acc(static_cast<size_t>(nCols), 0.0);
  for (int64_t i = 0; i < nq; ++i) {
    const double wi = w[i];
    if (wi == 0.0) continue;
    const Cand* e = sets.data() + i * kk;
    for (int32_t j = 0; j < setN[i]; ++j) acc[e[j].col] += wi * double(e[j].v);
  }
  for (int64_t s = 0; s < nCols; ++s) out.g[s] = static_cast<float>(acc[s] / W);
  st.voteMs = MsSince(t0);
  if (stats) *stats = st;
  return out;
}

}  // namespace gavel::kivf
