// The glance index as plain C++ (no N-API): spherical k-means centroids over every key of the bank,
// each skill's distinct centroid codes, and the staged candidate search that lets a glance run its
// exact max-sim and vote on a few skills instead of the whole library. ivf_napi.cpp exposes it.
//
// Design (docs/ARCHITECTURE.md, "The glance index"):
//  - Training: a sample of the bank's key rows (a partial Fisher–Yates shuffle driven by mulberry32,
//    src/util/prng.ts's generator, from a fixed seed), its first nc rows as the initial centroids,
//    then `iters` Lloyd steps: each sample row to the centroid of largest inner product (ties to the
//    lower index), each centroid the normalised float64 sum of its rows in sample order (an empty
//    cluster keeps its centroid). Deterministic for a seed, whatever the thread count.
//  - Codes: every key of a skill assigned the same way; a skill keeps its distinct codes, sorted.
//    Inverted lists map each centroid to the skills holding a key there.
//  - Candidates (per glance): S = Q·Cᵀ (task rows × centroids). Stage 1: each row's nprobe best
//    centroids; the skills in their lists (and skills without keys) are the stage-1 candidates.
//    Stage 2 (only when they exceed maxCandidates): each candidate's centroid interaction
//    ĝ(s) = Σ_i w_i · max_{c ∈ codes(s)} S'[i][c], where S' keeps max(S, 0) on the centroids row i
//    probed and reads 0 elsewhere (a row credits a skill only near its own top, as the vote does);
//    at nprobe ≥ nc, S' = S. The 8 · maxCandidates best by ĝ are scored again against each skill's
//    representative (its normalised mean key, held per skill): ĝ₂(s) = Σ_i w_i · max(⟨q_i, r_s⟩, 0),
//    and the maxCandidates best by ĝ₂ survive (ties to the lower handle). The
//    caller then runs the exact glance over the survivors. nprobe ≥ nc and maxCandidates = 0 select
//    every skill: the exact glance over all of them, bit for bit.
//  - The index follows a bank snapshot (Sync): skills absent from it are dropped, new ones assigned
//    to the existing centroids. Centroids change only at Train.
#pragma once
#include <atomic>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "bank/bank_core.h"
#include "kernels/kernels_core.h"

namespace gavel::ivf {

using kernels::Isa;

// mulberry32, bit for bit src/util/prng.ts's Rng.next(): a uniform double in [0, 1).
struct Mulberry32 {
  uint32_t state;
  explicit Mulberry32(uint32_t seed) : state(seed) {}
  double Next();
};

// min(count, n) distinct indices of [0, n): the first `count` of a partial Fisher–Yates shuffle
// (for i: j = i + floor(next()·(n − i)), swap) of 0 … n − 1.
std::vector<int64_t> SampleRows(int64_t n, int64_t count, uint32_t seed);

// For each of n rows of x (n × dim): the centroid (c × dim) of largest inner product (ties to the
// lower index) into code[r], and that inner product into score[r] (either may be null). Float32
// products through kernels::MatMulABt.
void Assign(const float* x, int64_t n, const float* centroids, int64_t c, int64_t dim, int32_t* code, float* score,
            Isa isa, unsigned threads, const std::atomic<bool>* stop = nullptr);

// Spherical k-means over the n × dim rows of x (n ≥ c ≥ 1): initial centroids x's rows 0 … c − 1,
// then `iters` Lloyd steps as described above. Returns c × dim centroids.
std::vector<float> KMeans(const float* x, int64_t n, int64_t dim, int64_t c, int iters, Isa isa, unsigned threads,
                          const std::atomic<bool>* stop = nullptr);

// The default number of centroids for a bank of `rows` keys: the power of two nearest √rows,
// within [1, 4096] and at most rows.
int64_t DefaultCentroids(int64_t rows);

struct TrainOptions {
  int64_t centroids = 0;  // 0: DefaultCentroids(rows)
  int iters = 8;
  int64_t sample = 0;  // rows sampled for training; 0: min(rows, 32 · centroids)
  uint32_t seed = 1;
};

struct CandidateStats {
  int64_t probed = 0;     // distinct centroids probed by some row
  int64_t stage1 = 0;     // skills after stage 1
  int64_t survivors = 0;  // skills returned
  double probeMs = 0, stage1Ms = 0, stage2Ms = 0;
};

struct SyncStats {
  int64_t added = 0, removed = 0, assignedRows = 0;
};

class Index {
 public:
  explicit Index(int64_t dim) : dim_(dim) {}

  int64_t dim() const { return dim_; }
  int64_t centroids() const { return nc_; }
  const std::vector<float>& centroidData() const { return cent_; }
  int64_t skills() const { return live_; }
  int64_t rows() const { return liveRows_; }
  int64_t trainedRows() const { return trainedRows_; }
  double trainMeanSim() const { return trainSim_; }
  // Mean inner product of every live key with its centroid (NaN without keys): against
  // trainMeanSim, how far the bank drifted from what the centroids were trained on.
  double meanSim() const { return liveRows_ > 0 ? liveSim_ / double(liveRows_) : 0.0 / 0.0; }
  uint64_t syncedGeneration() const { return synced_; }
  int64_t bytes() const;

  // New centroids (nc × dim): every skill's codes are dropped (Sync or Put assigns them again).
  void Reset(std::vector<float> centroids, int64_t nc, int64_t trainedRows, double trainSim);
  // Samples, trains and resets from snapshot `s`, then syncs to it. Throws Failure(INVALID_ARGUMENT)
  // when the snapshot holds no key.
  void Train(const bank::Snapshot& s, bool halfKeys, const TrainOptions& o, Isa isa, unsigned threads,
             const std::atomic<bool>* stop = nullptr);
  // Follows snapshot `s`: skills it does not hold are dropped, skills it holds that the index does
  // not are assigned. A snapshot older than the last one synced (by generation) is ignored.
  SyncStats Sync(const bank::Snapshot& s, bool halfKeys, Isa isa, unsigned threads,
                 const std::atomic<bool>* stop = nullptr);
  // One skill's codes as given (each in [0, nc), any order, repeats allowed; `rows` keys, `simSum`
  // the sum of their assignment scores), replacing any it had. Throws Failure(INVALID_ARGUMENT) on
  // a code out of range.
  void Put(int32_t handle, const int32_t* codes, int64_t n, int64_t rows, double simSum);
  bool Remove(int32_t handle);
  bool Has(int32_t handle) const { return slotOf_.count(handle) != 0; }

  // The handles (ascending: a bank's glance order) whose exact glance approximates the whole
  // bank's; see the header comment. nprobe ≥ 1, maxCandidates ≥ 0 (0: no cap).
  std::vector<int32_t> Candidates(const float* q, int64_t nq, const float* w, int64_t nprobe, int64_t maxCandidates,
                                  Isa isa, unsigned threads, CandidateStats* stats = nullptr,
                                  const std::atomic<bool>* stop = nullptr) const;

  // Every live skill: handles (ascending), code offsets (skills + 1) and codes, rows, simSums.
  struct Exported {
    std::vector<int32_t> handles, offsets, codes, rows;
    std::vector<double> simSums;
  };
  Exported Export() const;

 private:
  struct Slot {
    int32_t handle;
    int32_t nCodes;
    int64_t codeStart;
    int64_t rows;
    double simSum;
    bool live;
    bool hasRep;  // reps_ holds its representative (an imported skill gets it at the next Sync)
  };
  void Compact();

  int64_t dim_;
  int64_t nc_ = 0;
  std::vector<float> cent_;
  int64_t trainedRows_ = 0;
  double trainSim_ = 0;
  std::vector<Slot> slots_;
  std::vector<int32_t> codes_;
  std::vector<float> reps_;  // slot × dim: each skill's normalised mean key (stage 2's second pass)
  void SetRep(int32_t slot, const float* rows, int64_t n);
  std::vector<std::vector<int32_t>> lists_;  // centroid → slots (dead ones skipped, dropped at Compact)
  std::unordered_map<int32_t, int32_t> slotOf_;
  int64_t live_ = 0, liveRows_ = 0, deadCodes_ = 0;
  double liveSim_ = 0;
  uint64_t synced_ = 0;
};

}  // namespace gavel::ivf
