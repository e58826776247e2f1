// The glance index (ivf_core.h).
#include "index/ivf_core.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <thread>
#include <unordered_set>

#include "common/failure.h"
#include "common/jobs.h"
#include "common/parallel.h"

namespace gavel::ivf {

namespace {

// Rows per GEMM call of Assign: big enough to amortise packing the centroids, small enough that the
// score block (rows × nc floats) stays a few MiB.
constexpr int64_t kAssignChunk = 1024;

// The key rows of one bank skill as float32 (an f16 bank's converted; a float32 bank's as they are).
const float* SkillRows(const bank::KeyBlock& b, bool halfKeys, int64_t dim, std::vector<float>& scratch, Isa isa) {
  if (!halfKeys) return b.data.data();
  scratch.resize(static_cast<size_t>(b.rows * dim));
  kernels::HalfToFloats(b.half.data(), scratch.data(), b.rows * dim, isa);
  return scratch.data();
}

}  // namespace

double Mulberry32::Next() {
  state += 0x6d2b79f5u;
  uint32_t t = state;
  t = (t ^ (t >> 15)) * (t | 1u);
  t ^= t + (t ^ (t >> 7)) * (t | 61u);
  return double(t ^ (t >> 14)) / 4294967296.0;
}

std::vector<int64_t> SampleRows(int64_t n, int64_t count, uint32_t seed) {
  count = std::min(count, n);
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), int64_t{0});
  Mulberry32 rng(seed);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t j = i + static_cast<int64_t>(std::floor(rng.Next() * double(n - i)));
    std::swap(idx[i], idx[j]);
  }
  idx.resize(static_cast<size_t>(count));
  return idx;
}

void Assign(const float* x, int64_t n, const float* centroids, int64_t c, int64_t dim, int32_t* code, float* score,
            Isa isa, unsigned threads, const std::atomic<bool>* stop) {
  if (n == 0) return;
  std::vector<float> S(static_cast<size_t>(std::min(n, kAssignChunk) * c));
  for (int64_t r0 = 0; r0 < n; r0 += kAssignChunk) {
    if (Stopped(stop)) Aborted("glance index");
    const int64_t r1 = std::min(n, r0 + kAssignChunk);
    kernels::MatMulABt(x + r0 * dim, r1 - r0, dim, centroids, c, S.data(), isa, threads);
    for (int64_t r = r0; r < r1; ++r) {
      const float* s = S.data() + (r - r0) * c;
      int64_t best = 0;
      for (int64_t j = 1; j < c; ++j)
        if (s[j] > s[best]) best = j;
      if (code) code[r] = static_cast<int32_t>(best);
      if (score) score[r] = s[best];
    }
  }
}

std::vector<float> KMeans(const float* x, int64_t n, int64_t dim, int64_t c, int iters, Isa isa, unsigned threads,
                          const std::atomic<bool>* stop) {
  std::vector<float> cent(x, x + c * dim);
  std::vector<int32_t> code(static_cast<size_t>(n));
  std::vector<double> sum(static_cast<size_t>(c * dim));
  std::vector<int64_t> count(static_cast<size_t>(c));
  for (int it = 0; it < iters; ++it) {
    Assign(x, n, cent.data(), c, dim, code.data(), nullptr, isa, threads, stop);
    std::fill(sum.begin(), sum.end(), 0.0);
    std::fill(count.begin(), count.end(), 0);
    for (int64_t r = 0; r < n; ++r) {
      double* acc = sum.data() + int64_t(code[r]) * dim;
      const float* row = x + r * dim;
      for (int64_t d = 0; d < dim; ++d) acc[d] += double(row[d]);
      ++count[code[r]];
    }
    for (int64_t j = 0; j < c; ++j) {
      if (count[j] == 0) continue;  // an empty cluster keeps its centroid
      const double* acc = sum.data() + j * dim;
      double ss = 0;
      for (int64_t d = 0; d < dim; ++d) ss += acc[d] * acc[d];
      if (!(ss > 0)) continue;  // members cancelling out: no direction, keep the old one
      const double inv = 1.0 / std::sqrt(ss);
      float* out = cent.data() + j * dim;
      for (int64_t d = 0; d < dim; ++d) out[d] = static_cast<float>(acc[d] * inv);
    }
  }
  return cent;
}

int64_t DefaultCentroids(int64_t rows) {
  if (rows <= 1) return 1;
  const double root = std::sqrt(double(rows));
  int64_t c = int64_t(1) << static_cast<int>(std::lround(std::log2(root)));
  c = std::clamp<int64_t>(c, 1, 4096);
  return std::min(c, rows);
}

int64_t Index::bytes() const {
  int64_t b = static_cast<int64_t>(cent_.capacity() * sizeof(float) + codes_.capacity() * sizeof(int32_t) +
                                   reps_.capacity() * sizeof(float) +
                                   slots_.capacity() * sizeof(Slot) + lists_.capacity() * sizeof(lists_[0]));
  for (const auto& l : lists_) b += static_cast<int64_t>(l.capacity() * sizeof(int32_t));
  // the handle map: a node (key, value, next pointer, hash) per skill plus the bucket array
  b += static_cast<int64_t>(slotOf_.size() * (sizeof(void*) * 2 + 8) + slotOf_.bucket_count() * sizeof(void*));
  return b;
}

void Index::Reset(std::vector<float> centroids, int64_t nc, int64_t trainedRows, double trainSim) {
  cent_ = std::move(centroids);
  nc_ = nc;
  trainedRows_ = trainedRows;
  trainSim_ = trainSim;
  slots_.clear();
  codes_.clear();
  reps_.clear();
  lists_.assign(static_cast<size_t>(nc), {});
  slotOf_.clear();
  live_ = liveRows_ = deadCodes_ = 0;
  liveSim_ = 0;
  synced_ = 0;
}

void Index::Train(const bank::Snapshot& s, bool halfKeys, const TrainOptions& o, Isa isa, unsigned threads,
                  const std::atomic<bool>* stop) {
  const int64_t rows = s.rows;
  if (rows == 0) throw Failure(Code::INVALID_ARGUMENT, "the bank holds no key to train the glance index on");
  const int64_t nc = std::min(o.centroids > 0 ? o.centroids : DefaultCentroids(rows), rows);
  const int64_t want = o.sample > 0 ? o.sample : 32 * nc;
  const int64_t n = std::clamp(want, nc, rows);
  // The sample: rows numbered across the snapshot's skills in bank order, gathered in sample order.
  std::vector<int64_t> pick = SampleRows(rows, n, o.seed);
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
  std::vector<float> cent = KMeans(x.data(), n, dim_, nc, o.iters, isa, Threads(threads), stop);
  std::vector<float> score(static_cast<size_t>(n));
  Assign(x.data(), n, cent.data(), nc, dim_, nullptr, score.data(), isa, Threads(threads), stop);
  double sim = 0;
  for (float v : score) sim += v;
  Reset(std::move(cent), nc, rows, sim / double(n));
  Sync(s, halfKeys, isa, threads, stop);
}

SyncStats Index::Sync(const bank::Snapshot& s, bool halfKeys, Isa isa, unsigned threads,
                      const std::atomic<bool>* stop) {
  SyncStats st;
  if (nc_ == 0 || s.generation == synced_ || s.generation < synced_) return st;
  // One pass over the snapshot: the skills the index lacks, and whether it holds one the snapshot
  // does not (only then is the set of held handles built: a plain install removes nothing).
  std::vector<const bank::Entry*> fresh;
  int64_t found = 0;
  std::vector<float> scratch;
  for (const auto& e : s.entries) {
    auto it = slotOf_.find(e.handle);
    if (it == slotOf_.end()) {
      fresh.push_back(&e);
      continue;
    }
    ++found;
    if (!slots_[it->second].hasRep) SetRep(it->second, SkillRows(*e.keys, halfKeys, dim_, scratch, isa), e.keys->rows);
  }
  if (found != live_) {
    std::unordered_set<int32_t> held;
    held.reserve(s.entries.size());
    for (const auto& e : s.entries) held.insert(e.handle);
    std::vector<int32_t> gone;
    for (const auto& [h, slot] : slotOf_)
      if (!held.count(h)) gone.push_back(h);
    for (int32_t h : gone) Remove(h);
    st.removed = static_cast<int64_t>(gone.size());
  }
  // New skills, assigned in batches of whole skills (about kAssignChunk rows per GEMM call).
  threads = Threads(threads);
  std::vector<const bank::Entry*> batch;
  std::vector<float> x;
  std::vector<int32_t> code;
  std::vector<float> score;
  auto flush = [&]() {
    if (batch.empty()) return;
    int64_t n = 0;
    for (const auto* e : batch) n += e->keys->rows;
    x.resize(static_cast<size_t>(n * dim_));
    int64_t at = 0;
    for (const auto* e : batch) {
      const float* src = SkillRows(*e->keys, halfKeys, dim_, scratch, isa);
      std::copy(src, src + e->keys->rows * dim_, x.data() + at * dim_);
      at += e->keys->rows;
    }
    code.resize(static_cast<size_t>(n));
    score.resize(static_cast<size_t>(n));
    Assign(x.data(), n, cent_.data(), nc_, dim_, code.data(), score.data(), isa, threads, stop);
    at = 0;
    for (const auto* e : batch) {
      double sim = 0;
      for (int64_t r = 0; r < e->keys->rows; ++r) sim += score[at + r];
      Put(e->handle, code.data() + at, e->keys->rows, e->keys->rows, sim);
      SetRep(slotOf_[e->handle], x.data() + at * dim_, e->keys->rows);
      at += e->keys->rows;
      ++st.added;
    }
    st.assignedRows += n;
    batch.clear();
  };
  int64_t pending = 0;
  for (const bank::Entry* e : fresh) {
    batch.push_back(e);
    pending += e->keys->rows;
    if (pending >= kAssignChunk) {
      flush();
      pending = 0;
    }
  }
  flush();
  synced_ = s.generation;
  return st;
}

void Index::SetRep(int32_t slot, const float* rows, int64_t n) {
  std::vector<double> mean(static_cast<size_t>(dim_), 0.0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t d = 0; d < dim_; ++d) mean[d] += double(rows[r * dim_ + d]);
  double ss = 0;
  for (double v : mean) ss += v * v;
  const double inv = ss > 0 ? 1.0 / std::sqrt(ss) : 0.0;
  float* out = reps_.data() + int64_t(slot) * dim_;
  for (int64_t d = 0; d < dim_; ++d) out[d] = static_cast<float>(mean[d] * inv);
  slots_[slot].hasRep = true;
}

void Index::Put(int32_t handle, const int32_t* codes, int64_t n, int64_t rows, double simSum) {
  for (int64_t i = 0; i < n; ++i)
    if (codes[i] < 0 || codes[i] >= nc_)
      throw Failure(Code::INVALID_ARGUMENT, "code " + std::to_string(codes[i]) + " is not a centroid of this index (" +
                                                std::to_string(nc_) + ")");
  Remove(handle);
  std::vector<int32_t> distinct(codes, codes + n);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const int32_t slot = static_cast<int32_t>(slots_.size());
  slots_.push_back(Slot{handle, static_cast<int32_t>(distinct.size()), static_cast<int64_t>(codes_.size()), rows,
                        simSum, true, false});
  reps_.resize(slots_.size() * static_cast<size_t>(dim_), 0.f);
  synced_ = 0;  // the next Sync walks the bank again (and gives this skill its representative)
  codes_.insert(codes_.end(), distinct.begin(), distinct.end());
  for (int32_t c : distinct) lists_[c].push_back(slot);
  slotOf_[handle] = slot;
  ++live_;
  liveRows_ += rows;
  liveSim_ += simSum;
}

bool Index::Remove(int32_t handle) {
  auto it = slotOf_.find(handle);
  if (it == slotOf_.end()) return false;
  Slot& s = slots_[it->second];
  s.live = false;
  --live_;
  liveRows_ -= s.rows;
  liveSim_ -= s.simSum;
  deadCodes_ += s.nCodes + 1;
  slotOf_.erase(it);
  if (deadCodes_ > static_cast<int64_t>(codes_.size()) / 2 + 64) Compact();
  return true;
}

void Index::Compact() {
  std::vector<Slot> slots;
  std::vector<int32_t> codes;
  std::vector<float> reps;
  reps.reserve(static_cast<size_t>(live_ * dim_));
  slots.reserve(static_cast<size_t>(live_));
  codes.reserve(codes_.size() - std::min<size_t>(codes_.size(), static_cast<size_t>(deadCodes_)));
  for (auto& l : lists_) l.clear();
  slotOf_.clear();
  for (const Slot& s : slots_) {
    if (!s.live) continue;
    Slot n = s;
    n.codeStart = static_cast<int64_t>(codes.size());
    const int32_t slot = static_cast<int32_t>(slots.size());
    for (int32_t i = 0; i < s.nCodes; ++i) {
      const int32_t c = codes_[s.codeStart + i];
      codes.push_back(c);
      lists_[c].push_back(slot);
    }
    slots.push_back(n);
    const float* rep = reps_.data() + (&s - slots_.data()) * dim_;
    reps.insert(reps.end(), rep, rep + dim_);
    slotOf_[s.handle] = slot;
  }
  slots_ = std::move(slots);
  codes_ = std::move(codes);
  reps_ = std::move(reps);
  deadCodes_ = 0;
}

std::vector<int32_t> Index::Candidates(const float* q, int64_t nq, const float* w, int64_t nprobe,
                                       int64_t maxCandidates, Isa isa, unsigned threads, CandidateStats* stats,
                                       const std::atomic<bool>* stop) const {
  CandidateStats st;
  std::vector<int32_t> out;
  threads = Threads(threads);
  const bool all = nprobe >= nc_;
  const size_t nSlots = slots_.size();
  std::vector<char> cand(nSlots, 0);
  std::vector<float> S;  // nq × nc
  std::vector<int32_t> rowProbe;  // nq × nprobe: each row's probed centroids (stage 1, when not all)
  auto t0 = std::chrono::steady_clock::now();
  if (!all || (maxCandidates > 0 && live_ > maxCandidates)) {
    S.resize(static_cast<size_t>(nq * nc_));
    kernels::MatMulABt(q, nq, dim_, cent_.data(), nc_, S.data(), isa, threads);
  }
  st.probeMs = MsSince(t0);
  if (Stopped(stop)) Aborted("glance index");

  // Stage 1: the skills of every row's nprobe best centroids (ties to the lower centroid), and the
  // skills without keys (no list holds them; at full exactness they compete like any other).
  t0 = std::chrono::steady_clock::now();
  int64_t n1 = 0;
  if (all) {
    for (size_t i = 0; i < nSlots; ++i)
      if (slots_[i].live) cand[i] = 1, ++n1;
    st.probed = nc_;
  } else {
    std::vector<char> probed(static_cast<size_t>(nc_), 0);
    std::vector<int32_t> order(static_cast<size_t>(nc_));
    rowProbe.resize(static_cast<size_t>(nq * nprobe));
    for (int64_t i = 0; i < nq; ++i) {
      const float* s = S.data() + i * nc_;
      std::iota(order.begin(), order.end(), 0);
      std::nth_element(order.begin(), order.begin() + (nprobe - 1), order.end(),
                       [s](int32_t a, int32_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
      for (int64_t j = 0; j < nprobe; ++j) probed[order[j]] = 1, rowProbe[i * nprobe + j] = order[j];
    }
    for (int64_t c = 0; c < nc_; ++c) {
      if (!probed[c]) continue;
      ++st.probed;
      for (int32_t slot : lists_[c])
        if (slots_[slot].live && !cand[slot]) cand[slot] = 1, ++n1;
    }
    for (size_t i = 0; i < nSlots; ++i)
      if (slots_[i].live && slots_[i].nCodes == 0 && !cand[i]) cand[i] = 1, ++n1;
  }
  st.stage1 = n1;
  st.stage1Ms = MsSince(t0);
  if (Stopped(stop)) Aborted("glance index");

  // Stage 2: centroid interaction over the stage-1 skills, when they exceed the cap.
  t0 = std::chrono::steady_clock::now();
  if (maxCandidates > 0 && n1 > maxCandidates) {
    std::vector<int32_t> slots;
    slots.reserve(static_cast<size_t>(n1));
    for (size_t i = 0; i < nSlots; ++i)
      if (cand[i]) slots.push_back(static_cast<int32_t>(i));
    // Sᵀ (nc × nq): a skill's rows of interaction are then contiguous runs, max-ed lane by lane. A
    // row credits only the centroids it probed (the others read 0), as the vote credits a skill only
    // on the rows whose top-k it reaches: a centroid far from a row says nothing of the skill there.
    std::vector<float> ST(static_cast<size_t>(nc_ * nq), 0.f);
    if (all) {
      for (int64_t i = 0; i < nq; ++i)
        for (int64_t c = 0; c < nc_; ++c) ST[c * nq + i] = S[i * nc_ + c];
    } else {
      for (int64_t i = 0; i < nq; ++i)
        for (int64_t j = 0; j < nprobe; ++j) {
          const int32_t c = rowProbe[i * nprobe + j];
          ST[int64_t(c) * nq + i] = std::max(0.f, S[i * nc_ + c]);
        }
    }
    double wsum = 0;
    for (int64_t i = 0; i < nq; ++i) wsum += w[i];
    std::vector<double> score(slots.size());
    const unsigned nt = static_cast<unsigned>(std::min<int64_t>(threads, std::max<int64_t>(1, n1 / 256)));
    Parallel(nt, [&](unsigned t) {
      std::vector<float> acc(static_cast<size_t>(nq));
      const size_t a = slots.size() * t / nt, b = slots.size() * (t + 1) / nt;
      for (size_t k = a; k < b; ++k) {
        if ((k & 1023) == 0 && Stopped(stop)) return;
        const Slot& sl = slots_[slots[k]];
        if (sl.nCodes == 0) {
          score[k] = -wsum;  // m = -1 on every row, as the exact glance scores a skill without keys
          continue;
        }
        const float* first = ST.data() + int64_t(codes_[sl.codeStart]) * nq;
        std::copy(first, first + nq, acc.begin());
        for (int32_t j = 1; j < sl.nCodes; ++j) {
          const float* r = ST.data() + int64_t(codes_[sl.codeStart + j]) * nq;
          for (int64_t i = 0; i < nq; ++i) acc[i] = std::max(acc[i], r[i]);
        }
        double g = 0;
        for (int64_t i = 0; i < nq; ++i) g += double(w[i]) * double(acc[i]);
        score[k] = g;
      }
    });
    if (Stopped(stop)) Aborted("glance index");
    std::vector<int32_t> order(slots.size());
    std::iota(order.begin(), order.end(), 0);
    const auto better = [this, &slots](const std::vector<double>& scores) {
      const std::vector<double>* sc = &scores;
      return [this, &slots, sc](int32_t a, int32_t b) {
        const double x = (*sc)[a], y = (*sc)[b];
        return x > y || (x == y && slots_[slots[a]].handle < slots_[slots[b]].handle);
      };
    };
    // The 8 · maxCandidates best by ĝ, scored again against each one's representative.
    const int64_t R = std::min<int64_t>(static_cast<int64_t>(slots.size()), 8 * maxCandidates);
    if (R < static_cast<int64_t>(order.size())) {
      std::nth_element(order.begin(), order.begin() + (R - 1), order.end(), better(score));
      order.resize(static_cast<size_t>(R));
    }
    std::vector<float> G(static_cast<size_t>(R * dim_)), P(static_cast<size_t>(nq * R));
    for (int64_t j = 0; j < R; ++j) {
      const float* rep = reps_.data() + int64_t(slots[order[j]]) * dim_;
      std::copy(rep, rep + dim_, G.data() + j * dim_);
    }
    kernels::MatMulABt(q, nq, dim_, G.data(), R, P.data(), isa, threads);
    std::vector<double> score2(slots.size(), -std::numeric_limits<double>::infinity());
    for (int64_t j = 0; j < R; ++j) {
      const Slot& sl = slots_[slots[order[j]]];
      if (sl.nCodes == 0) {
        score2[order[j]] = -wsum;
        continue;
      }
      double g = 0;
      for (int64_t i = 0; i < nq; ++i) g += double(w[i]) * double(std::max(0.f, P[i * R + j]));
      score2[order[j]] = g;
    }
    std::nth_element(order.begin(), order.begin() + (maxCandidates - 1), order.end(), better(score2));
    out.reserve(static_cast<size_t>(maxCandidates));
    for (int64_t j = 0; j < maxCandidates; ++j) out.push_back(slots_[slots[order[j]]].handle);
  } else {
    out.reserve(static_cast<size_t>(n1));
    for (size_t i = 0; i < nSlots; ++i)
      if (cand[i]) out.push_back(slots_[i].handle);
  }
  std::sort(out.begin(), out.end());
  st.survivors = static_cast<int64_t>(out.size());
  st.stage2Ms = MsSince(t0);
  if (stats) *stats = st;
  return out;
}

Index::Exported Index::Export() const {
  Exported e;
  std::vector<int32_t> order;
  order.reserve(static_cast<size_t>(live_));
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].live) order.push_back(static_cast<int32_t>(i));
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return slots_[a].handle < slots_[b].handle; });
  e.offsets.push_back(0);
  for (int32_t i : order) {
    const Slot& s = slots_[i];
    e.handles.push_back(s.handle);
    e.codes.insert(e.codes.end(), codes_.begin() + s.codeStart, codes_.begin() + s.codeStart + s.nCodes);
    e.offsets.push_back(static_cast<int32_t>(e.codes.size()));
    e.rows.push_back(static_cast<int32_t>(s.rows));
    e.simSums.push_back(s.simSum);
  }
  return e;
}

}  // namespace gavel::ivf
