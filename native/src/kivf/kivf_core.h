// The key IVF glance as plain C++ (no N-API): an inverted file over the bank's token KEYS, searched
// per task row, that approximates the exact glance (kernels_core.h) while reading a few percent of
// the keys. kivf_napi.cpp exposes it.
//
// Design (bench/results/2026-11-28-cpu-key-ivf/README.md simulated it on a real bank):
//  - Training: spherical k-means over a sample of the bank's key rows (ivf::SampleRows, ivf::KMeans:
//    the glance index's steps, deterministic for a seed), then every key assigned to the centroid of
//    largest inner product (ivf::Assign). List c holds the ids of the keys assigned to c (int32, 4
//    bytes a key, plus 4 for the key's skill): never a copy of the keys. The index holds each indexed
//    skill's immutable KeyBlock by reference and reads its keys in place (float32 or f16).
//  - Search, per task row i: S = Q·Cᵀ; the row probes its `nprobe` best lists (ties to the lower
//    centroid); every key found there is scored against the row with the exact glance's own max-sim
//    kernel (kernels::MaxSimSkills, each key a column of its own), so a score is the very float32
//    the exact glance computes for that (row, key); a skill's score is the max over its keys found;
//    the row keeps its top k skills by (score desc, column asc), as the native vote orders them
//    (skills without keys score -1 and compete, as there); then the float64 vote in row order,
//    g = Σ_i w_i·m_i(s) / Σ w over the rows whose top k holds s.
//    The work runs list by list (all the rows probing a list against its keys in one max-sim call),
//    threads taking lists; each thread keeps per row the top k of the skills it saw (insert or
//    raise: exact for the union, since a skill's score only grows), merged per row at the end.
//  - Exactness knob: nprobe ≥ centroids probes every list, so every (row, key) is scored and the
//    result equals the exact glance's g bit for bit (same kernel, same ISA, same vote).
//  - The index follows a bank snapshot (Sync): skills it does not hold are dropped (their keys
//    leave the lists at the next compaction), new ones assigned to the existing centroids.
//    Centroids change only at Train.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "bank/bank_core.h"
#include "kernels/kernels_core.h"
#include "kivf/kivf_i8.h"

namespace gavel::kivf {

using kernels::Isa;

// The default number of centroids for a bank of `rows` keys: the power of two nearest 8·√rows,
// within [16, 65536] and at most rows / 8 (at least 1).
int64_t DefaultCentroids(int64_t rows);

struct TrainOptions {
  int64_t centroids = 0;  // 0: DefaultCentroids(rows)
  int iters = 6;
  int64_t sample = 0;  // rows sampled for training; 0: min(rows, 16 · centroids)
  uint32_t seed = 1;
  // Groups of the two-level k-means (0: flat below kTwoLevelFrom centroids, else ≈ √centroids).
  int64_t groups = 0;
};

// From this many centroids training and assignment are two-level: G ≈ √C coarse centroids first
// (k-means on the sample), then each coarse group's share of the C fine centroids by k-means over
// its own sample rows; a key is assigned to the best fine centroid of its kGroupProbe best groups.
// That costs about (G + kGroupProbe·C/G)/C of a flat assignment (≈ 3% at C = 16,384) and may miss a
// key's nearest centroid near a group boundary: it moves keys between lists, never out of them, so
// probing every list stays exact.
constexpr int64_t kTwoLevelFrom = 1024;
constexpr int64_t kGroupProbe = 4;
// The list bound (Glance's prune): a key k of list c scores, against row q, at most
// q·c + |q|·radius(c), radius(c) the farthest of c's keys from c. Each row first scans its
// kPruneSeed best lists; the k-th best of its top k then is a floor under its final k-th best, and a
// list whose bound stays below it (with the products' float error) cannot change the row's top k.
constexpr int64_t kPruneSeed = 8;
// With the int8 codes (Glance's i8) a row seeds its floor from its best list alone (8 seed lists
// scanned in float32 were most of such a glance: 140 against 67 ms on a synthetic 10K-skill bank,
// 200 rows, the same g); as a thread scans, the floor rises to its own k-th best anyway. The seed
// lists are scored in int8 too: each skill keeps its key of best int8 score, and the keys of the
// kCodeSeedKeep·k skills best by it are refined (kivf_i8.h) and offered at R − E, a proven lower
// bound of their float32 scores; the floor is the k-th best of those (a floor all the same: k skills
// score at least that much), and the rest pass, which scans the seed lists again, offers the true
// scores of the keys that can count. Scanning the seed lists whole in float32 cost a third of a
// route's glance over 30,593 skills (k 306: ~37 of ~108 ms of its scan, the keys read from all over
// the bank), against ~10 ms with their best keys in float32, and less refined.
constexpr int64_t kCodeSeed = 1;
// ... and one more list per kCodeSeedPerK of k: with a wide vote (the route's vote share: k 306 over
// 30K skills) one list often offers a row fewer than k skills, which leaves the row no floor, and its
// other probed lists were all read in int8 (over 30,593 skills, 22 requests: 8,431 lists, 6.7M int8 and
// 224K float32 pairs at k 306 with one seed; 5,120, 4.6M and 88K with five; at k 10 5,075, 4.5M, 51K).
constexpr int64_t kCodeSeedPerK = 64;
// The skills, per k, whose seed keys a row refines for its floor (above).
constexpr int64_t kCodeSeedKeep = 2;
// The two-level probe (opt-in, Glance's probeGroups = t): a row scores the G coarse centroids, then
// only the fine centroids of its t best groups, and probes the nprobe best of those: rows ×
// (G + t·C/G) products instead of rows × C. A list the flat probe would pick is missed when its
// group ranks below t, and on real banks it often does: task rows are not keys, and the groups are
// wide (bench/results/2026-11-29-cpu-kivf2). Probing every list (nprobe ≥ centroids) scores no
// centroid at all, so it stays exact either way.
// The spread probe (Glance's spread): the vote credits row i's top k with w_i·m, so a row's missed
// skill costs in proportion to its weight; nprobe becomes the mean lists a row probes and row i
// probes n_i = ⌊nprobe·nq·w_i/Σw + ½⌋ (in double, Σw summed in row order), clamped to
// [⌈nprobe/kSpreadRange⌉, kSpreadRange·nprobe] and to the centroids. nprobe ≥ centroids still probes
// every list for every row (exact); without spread, or when Σw is not positive and finite, every row
// probes nprobe.
constexpr int64_t kSpreadRange = 4;
// Row i's probe count under the rule above (nq values).
std::vector<int64_t> ProbeCounts(const float* w, int64_t nq, int64_t nprobe, int64_t centroids, bool spread);

// The n best of s[0 … nc) (1 ≤ n ≤ nc, every value finite) by (value desc, index asc), written to
// out as every index valued above the n-th best value θ (ascending), then the lowest indices valued θ
// (ascending). A row's probed lists (s its centroid scores). θ is found by counting (kivf_select.cpp),
// the counts by the ISA's compares; every ISA lists the same indices.
struct SelectScratch {
  std::vector<int32_t> idx, key;
};
void SelectBest(const float* s, int64_t nc, int64_t n, int32_t* out, SelectScratch& scratch, kernels::Isa isa);
// The glance's centroid scores S[i·nc + c] = <q_i, cent_c> (nq × nc, row-major; every element
// written), threads taking blocks of centroids: the queries packed once, each block's centroids packed
// as they are scored (kernels::PackQueryPanels, ScorePanels). Each score equals MatMulABt's bit for bit.
void CentroidScores(const float* q, int64_t nq, const float* cent, int64_t nc, int64_t dim, float* S, kernels::Isa isa,
                    unsigned threads);

struct SyncStats {
  int64_t added = 0, removed = 0, assignedRows = 0;
  double ms = 0;
};

struct SearchStats {
  int64_t lists = 0;          // lists scanned (with the list bound, per pass: a list may count twice)
  int64_t scored = 0;         // (row, key) pairs scored in float32
  int64_t coded = 0;          // (row, key) pairs scored in int8 (i8), before the bound
  int64_t refined = 0;        // i8: (row, key) pairs that passed the int8 bound, refined by their residual codes
  double codeMs = 0;          // i8: thread-ms coding the keys the scanned lists gained since they were last coded
  int64_t bankRows = 0;       // keys indexed (live)
  double centroidMs = 0, probeMs = 0, scanMs = 0, voteMs = 0;
};

struct SearchResult {
  std::vector<float> g;           // per column (the indexed skills in handle order)
  std::vector<int32_t> handles;   // the columns' handles
};

class Index {
 public:
  explicit Index(int64_t dim) : dim_(dim) {}

  int64_t dim() const { return dim_; }
  int64_t centroids() const { return nc_; }
  int64_t skills() const { return live_; }
  int64_t rows() const { return liveRows_; }
  int64_t trainedRows() const { return trainedRows_; }
  double trainMeanSim() const { return trainSim_; }
  double meanSim() const { return liveRows_ > 0 ? liveSim_ / double(liveRows_) : 0.0 / 0.0; }
  // Native memory the index holds beyond the bank's keys (centroids, lists, key → skill, slots, list
  // radii, the glance's kept score buffer).
  int64_t bytes() const;

  void Train(const bank::Snapshot& s, bool halfKeys, const TrainOptions& o, Isa isa, unsigned threads,
             const std::atomic<bool>* stop = nullptr);
  SyncStats Sync(const bank::Snapshot& s, bool halfKeys, Isa isa, unsigned threads,
                 const std::atomic<bool>* stop = nullptr);

  // What the index file holds (src/bank/key-ivf.ts): the centroids (and the two-level groups), and
  // every live skill's codes, key by key, by handle (ascending).
  struct Exported {
    std::vector<float> centroids, coarse;
    std::vector<int64_t> groupStart;
    std::vector<int32_t> handles, offsets, codes;
    std::vector<double> simSums;
  };
  Exported Export() const;
  // New centroids (nc × dim; coarse G × dim with groupStart G + 1, or both empty: flat), no skill.
  // Throws Failure(INVALID_ARGUMENT) on sizes or group bounds that do not fit.
  void Restore(std::vector<float> centroids, std::vector<float> coarse, std::vector<int64_t> groupStart,
               int64_t trainedRows, double trainSim);
  // Skills of snapshot `s` with their codes as a file held them (handles[i]'s keys get
  // codes[offsets[i] … offsets[i+1])): a handle the snapshot lacks, already indexed, or whose key
  // count differs is skipped (the next Sync assigns what is left). Returns how many were taken.
  // Throws Failure(INVALID_ARGUMENT) on a code out of range or offsets that do not fit.
  int64_t Load(const bank::Snapshot& s, bool halfKeys, const int32_t* handles, int64_t n, const int32_t* offsets,
               const int32_t* codes, int64_t nCodes, const double* simSums);

  // The key IVF glance over the indexed skills (call Sync first; one glance at a time: it reuses the
  // index's score buffer). q: nq × dim; w: nq weights
  // (finite, ≥ 0, positive sum); k ≥ 1; nprobe ≥ 1 (≥ centroids: exact). probeGroups (two-level
  // indexes only): the coarse groups whose fine centroids a row scores (≥ G: every group, the same
  // lists as the flat probe); 0: the flat probe, every centroid scored. spread: nprobe is the mean
  // lists a row probes, shared out by weight (ProbeCounts); otherwise every row probes nprobe.
  SearchResult Glance(const float* q, int64_t nq, const float* w, int64_t k, int64_t nprobe, Isa isa,
                      unsigned threads, SearchStats* stats = nullptr, const std::atomic<bool>* stop = nullptr,
                      int64_t probeGroups = 0, bool prune = false, bool i8 = false, bool spread = false,
                      const std::vector<int32_t>* only = nullptr) const;
  // i8: each row's floor comes from its seed lists (kCodeSeed, kCodeSeedPerK: scored in int8, the
  // keys of its kCodeSeedKeep·k best skills by them refined, offered at a proven lower bound), then
  // every list it probes, seeds included, is scored in int8 from the lists' codes (kivf_i8.h); the
  // keys whose int8 bound reaches the row's k-th best so far are refined by their residual codes, and
  // only those whose refined bound still does are scored in float32: the result is unchanged, bit
  // for bit. Lists whose codes cannot be used (a non-finite key, products that could overflow) are
  // scanned in float32 whole, seeds included.
  // A list is coded when first scanned so, and follows its keys (0.40× float32 keys' memory).
  // only (optional): the handles of the skills that take part (the route's routable skills, less its
  // excluded sources and flags); the others are in no row's top k, so they take no vote and their g
  // is 0, and handles the index does not hold are ignored. Probing every list, g over the listed
  // skills is the exact glance's over those skills alone (KeyBank.glance with their handles), bit for bit.
  // prune: the list bound (kPruneSeed): lists that cannot hold a key of a row's top k are skipped
  // for that row, the result unchanged (bit for bit); it scores every centroid (probeGroups unused).
  // The groups a row probes given Glance's probeGroups (0: the flat probe: a flat index or probeGroups 0).
  int64_t ProbeGroups(int64_t probeGroups) const;

 private:
  struct Slot {
    int32_t handle;
    bool live;
    int64_t keyStart;  // its first key id
    int64_t rows;
    double simSum;
    std::shared_ptr<const bank::KeyBlock> keys;
  };
  void Reset(std::vector<float> centroids, int64_t nc, int64_t trainedRows, double trainSim);
  void Compact();
  void Columns();

  int64_t dim_;
  bool half_ = false;
  int64_t nc_ = 0;
  std::vector<float> cent_;
  std::vector<float> coarse_;          // G × dim (two-level only; empty: flat)
  std::vector<int64_t> groupStart_;    // G + 1: group g's fine centroids are [groupStart_[g], groupStart_[g+1])
  // The two-level probe (above): row i probes probe[probeAt[i] … probeAt[i + 1]) (probeAt:
  // nq + 1 values, probeAt[0] = 0), its np[i] best fine centroids among its t best groups'.
  void ProbeTwoLevel(const float* q, int64_t nq, const std::vector<int64_t>& np, int64_t t, std::vector<int64_t>& probeAt,
                     std::vector<int32_t>& probe, Isa isa, unsigned threads, SearchStats& st) const;
  // The nearest centroid of each of n rows (flat, or two-level as above) and its inner product.
  void AssignRows(const float* x, int64_t n, int32_t* code, float* score, Isa isa, unsigned threads,
                  const std::atomic<bool>* stop) const;
  // Per list, a float upper bound on |key − centroid| over its keys (widened as keys arrive, never
  // narrowed: removed keys leave it an upper bound; measured anew after Load); the centroids' norms.
  std::vector<float> radius_, centNorm_;
  // The lists' int8 codes (Glance's i8; kivf_i8.h): a list is coded (the keys it gained since) when
  // an i8 glance scans it in int8 (one glance at a time, as scores_); dropped by Reset and Compact.
  mutable std::vector<ListCodes> codes_;
  // Codes list c's keys past codes_[c].n (kf: dim floats, scratch: Dim4(dim)·4 bytes).
  void CodeList(int32_t c, Isa isa, float* kf, int8_t* scratch) const;
  // Glance's nq × C centroid scores, kept from glance to glance: first touching a fresh buffer of
  // that size (40 MB at 1,208 rows × 8,194 centroids) cost this machine 5-8× the GEMM that fills it.
  // So one glance at a time per index (the N-API layer holds the index's mutex).
  mutable std::vector<float> scores_;
  bool radiusStale_ = false;
  // A key's distance to centroid c, rounded up to a float (a bound); Widen raises the list's radius to it.
  float Reach(int32_t c, const float* key) const;
  void Widen(int32_t c, const float* key);
  void Radii(Isa isa);
  int64_t trainedRows_ = 0;
  double trainSim_ = 0;
  std::vector<Slot> slots_;
  std::vector<int32_t> keySlot_;             // key id → slot
  std::vector<std::vector<int32_t>> lists_;  // centroid → key ids (dead ones skipped, dropped at Compact)
  std::unordered_map<int32_t, int32_t> slotOf_;
  std::vector<int32_t> colOf_;      // slot → column (live slots, by handle), -1 when dead
  // Per list, its keys' columns in list order (-1: a dead key), so an i8 glance reads them in
  // sequence instead of two random lookups (keySlot_, then the slot) a key: made by ColsOf when a
  // glance first reads the list, remade when the columns changed (colsVer_, bumped by Columns and
  // Reset) or the list grew. One list a thread a pass (as the codes), one glance at a time.
  mutable std::vector<std::vector<int32_t>> listCols_;
  mutable std::vector<uint64_t> listColsVer_;
  uint64_t colsVer_ = 1;
  const int32_t* ColsOf(int32_t c) const;
  std::vector<int32_t> colHandle_;  // column → handle
  std::vector<int32_t> emptyCols_;  // columns of skills without keys
  int64_t live_ = 0, liveRows_ = 0, deadRows_ = 0;
  double liveSim_ = 0;
  uint64_t synced_ = 0;
};

}  // namespace gavel::kivf
