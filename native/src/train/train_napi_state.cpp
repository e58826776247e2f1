// See train_napi_state.h.
#include "train/train_napi_state.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <new>
#include <limits>
#include <unordered_set>

#include "common/napi_args.h"
#include "common/failure.h"
#include "common/worker.h"

namespace gavel::trainer_napi {

void CheckOffsets(const Napi::Int32Array& off, const std::string& name, int64_t minLen) {
  const int64_t n = static_cast<int64_t>(off.ElementLength());
  const int32_t* o = off.Data();
  if (n < minLen) Bad(name + " must hold at least " + std::to_string(minLen) + " entries");
  if (o[0] != 0) Bad(name + "[0] must be 0");
  for (int64_t i = 1; i < n; ++i)
    if (o[i] < o[i - 1]) Bad(name + " must be non-decreasing (at " + std::to_string(i) + ")");
}

void GaussianInit(std::vector<float>& w, uint64_t seed, double scale) {
  uint64_t x = seed;
  auto next = [&x]() {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  auto uniform = [&]() { return (double(next() >> 11) + 0.5) / 9007199254740992.0; };  // (0, 1)
  for (size_t i = 0; i < w.size(); i += 2) {
    const double r = std::sqrt(-2.0 * std::log(uniform())), a = 2.0 * M_PI * uniform();
    w[i] = static_cast<float>(scale * r * std::cos(a));
    if (i + 1 < w.size()) w[i + 1] = static_cast<float>(scale * r * std::sin(a));
  }
}

std::string StringOption(const Napi::Object& o, const char* key, const char* dflt) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return dflt;
  if (!v.IsString()) Bad(std::string(key) + " must be a string");
  return v.As<Napi::String>().Utf8Value();
}

namespace {

// A resident batch's skill part: skillRefs (library indices into the resident store), optional
// keepOffsets / keepRows (per entry, strictly increasing rows of its skill; an empty range keeps
// every row); fills b.refs, b.keepOff, b.keep and the derived b.sOff.
void ReadResidentSkills(const State& s, const Napi::Object& o, train::Batch& b) {
  if (!o.Get("skillStates").IsUndefined() || !o.Get("skillOffsets").IsUndefined())
    Bad("a batch gives either skillStates + skillOffsets or skillRefs (resident skills), not both");
  const train::ResidentStore& st = s.store;
  if (st.Skills() == 0) Bad("batch.skillRefs names resident skills, but none were added (addSkills)");
  const int64_t sWidth = s.freezeWs ? s.dim : s.nEmbd;
  if (st.width != sWidth)
    Bad("the resident skills are " + std::to_string(st.width) + " wide but this trainer's skill rows are " +
        std::to_string(sWidth) + " (" + (s.freezeWs ? "dim: keys while freezeWs" : "nEmbd") + "); clearSkills and add them again");
  auto refs = Int32Arg(o.Get("skillRefs"), "batch.skillRefs");
  const int64_t n = static_cast<int64_t>(refs.ElementLength());
  if (n < 1) Bad("batch.skillRefs must name at least one skill");
  const int32_t* rf = refs.Data();
  for (int64_t e = 0; e < n; ++e)
    if (rf[e] < 0 || rf[e] >= st.Skills())
      Bad("batch.skillRefs[" + std::to_string(e) + "] = " + std::to_string(rf[e]) + " is not a resident skill in [0, " +
          std::to_string(st.Skills()) + ")");
  const Napi::Value ko = o.Get("keepOffsets"), kr = o.Get("keepRows");
  if (ko.IsUndefined() != kr.IsUndefined()) Bad("batch.keepOffsets and batch.keepRows go together");
  b.refs = CopyTyped<int32_t>(refs);
  b.keepOff.assign(size_t(n) + 1, 0);
  if (!ko.IsUndefined()) {
    auto kOff = Int32Arg(ko, "batch.keepOffsets");
    auto rows = Int32Arg(kr, "batch.keepRows");
    if (int64_t(kOff.ElementLength()) != n + 1)
      Bad("batch.keepOffsets must have one entry per skillRefs entry plus one (" + std::to_string(n + 1) + ")");
    CheckOffsets(kOff, "batch.keepOffsets", 2);
    if (int64_t(rows.ElementLength()) != int64_t(kOff.Data()[n]))
      Bad("batch.keepRows.length must be keepOffsets[last] (" + std::to_string(kOff.Data()[n]) + ")");
    const int32_t *kO = kOff.Data(), *kR = rows.Data();
    for (int64_t e = 0; e < n; ++e)
      for (int32_t k = kO[e]; k < kO[e + 1]; ++k) {
        if (kR[k] < 0 || kR[k] >= st.rows[rf[e]])
          Bad("batch.keepRows[" + std::to_string(k) + "] = " + std::to_string(kR[k]) + " is not a row of skill " +
              std::to_string(rf[e]) + " (" + std::to_string(st.rows[rf[e]]) + " rows)");
        if (k > kO[e] && kR[k] <= kR[k - 1])
          Bad("batch.keepRows of entry " + std::to_string(e) + " must be strictly increasing (at " + std::to_string(k) + ")");
      }
    b.keepOff = CopyTyped<int32_t>(kOff);
    b.keep = CopyTyped<int32_t>(rows);
  }
  b.sOff.assign(size_t(n) + 1, 0);
  for (int64_t e = 0; e < n; ++e) {
    const int64_t kept = b.keepOff[e + 1] - b.keepOff[e];
    const int64_t next = int64_t(b.sOff[e]) + (kept > 0 ? kept : st.rows[rf[e]]);
    if (next > std::numeric_limits<int32_t>::max() || double(next) * double(sWidth) > 9e15) Bad("the batch's skill rows are too many");
    b.sOff[e + 1] = int32_t(next);
  }
  b.resident = true;
}

}  // namespace

// long function: the explicit and resident batches' checks in order, then the copies.
std::shared_ptr<train::Batch> ReadBatch(const State& s, const Napi::Value& v) {
  if (!v.IsObject()) Bad("batch must be an object");
  Napi::Object o = v.As<Napi::Object>();
  auto b = std::make_shared<train::Batch>();
  auto q = Float32Arg(o.Get("queryStates"), "batch.queryStates");
  auto qOff = Int32Arg(o.Get("queryOffsets"), "batch.queryOffsets");
  const bool resident = !o.Get("skillRefs").IsUndefined();
  Napi::Float32Array st;
  if (resident) {
    ReadResidentSkills(s, o, *b);
  } else {
    st = Float32Arg(o.Get("skillStates"), "batch.skillStates");
    auto sOff = Int32Arg(o.Get("skillOffsets"), "batch.skillOffsets");
    CheckOffsets(sOff, "batch.skillOffsets", 2);
    b->sOff = CopyTyped<int32_t>(sOff);
  }
  auto cOff = Int32Arg(o.Get("candidateOffsets"), "batch.candidateOffsets");
  auto cand = Int32Arg(o.Get("candidates"), "batch.candidates");
  auto pos = Uint8Arg(o.Get("positive"), "batch.positive");
  const int32_t *qO = qOff.Data(), *sO = b->sOff.data(), *cO = cOff.Data(), *cd = cand.Data();
  const uint8_t* ps = pos.Data();
  CheckOffsets(qOff, "batch.queryOffsets", 2);
  const int64_t nTasks = int64_t(qOff.ElementLength()) - 1, nSkills = int64_t(b->sOff.size()) - 1;
  if (int64_t(cOff.ElementLength()) != nTasks + 1)
    Bad("batch.candidateOffsets must have one entry per task plus one (" + std::to_string(nTasks + 1) + ")");
  CheckOffsets(cOff, "batch.candidateOffsets", 2);
  const int64_t sWidth = s.freezeWs ? s.dim : s.nEmbd;
  if (double(qO[nTasks]) * double(s.nEmbd) != double(q.ElementLength()))
    Bad("batch.queryStates.length (" + std::to_string(q.ElementLength()) + ") must be queryOffsets[last] × nEmbd (" +
        std::to_string(int64_t(qO[nTasks]) * s.nEmbd) + ")");
  if (!resident && double(sO[nSkills]) * double(sWidth) != double(st.ElementLength()))
    Bad("batch.skillStates.length (" + std::to_string(st.ElementLength()) + ") must be skillOffsets[last] × " +
        (s.freezeWs ? "dim (keys are given while freezeWs)" : "nEmbd") + " (" +
        std::to_string(int64_t(sO[nSkills]) * sWidth) + ")");
  if (int64_t(cand.ElementLength()) != int64_t(cO[nTasks]))
    Bad("batch.candidates.length must be candidateOffsets[last] (" + std::to_string(cO[nTasks]) + ")");
  if (pos.ElementLength() != cand.ElementLength()) Bad("batch.positive.length must equal batch.candidates.length");
  std::unordered_set<int32_t> seen;
  for (int64_t t = 0; t < nTasks; ++t) {
    if (qO[t + 1] == qO[t]) Bad("task " + std::to_string(t) + " has no query token");
    if (cO[t + 1] == cO[t]) Bad("task " + std::to_string(t) + " has no candidate");
    seen.clear();
    bool anyPos = false;
    for (int32_t c = cO[t]; c < cO[t + 1]; ++c) {
      const int32_t sk = cd[c];
      if (sk < 0 || sk >= nSkills)
        Bad("batch.candidates[" + std::to_string(c) + "] = " + std::to_string(sk) + " is not a skill index in [0, " +
            std::to_string(nSkills) + ")");
      if (sO[sk + 1] == sO[sk]) Bad("skill " + std::to_string(sk) + " (a candidate of task " + std::to_string(t) + ") has no rows");
      if (!seen.insert(sk).second) Bad("task " + std::to_string(t) + " lists skill " + std::to_string(sk) + " twice");
      if (ps[c] > 1) Bad("batch.positive[" + std::to_string(c) + "] must be 0 or 1");
      anyPos |= ps[c] == 1;
    }
    if (!anyPos) Bad("task " + std::to_string(t) + " has no positive candidate");
  }
  if (s.dev) {
    s.dev->Stage(q.Data(), q.ElementLength(), resident ? nullptr : st.Data(), resident ? 0 : st.ElementLength(), *b);
  } else {
    b->q = CopyTyped<float>(q);
    if (!resident) b->s = CopyTyped<float>(st);
  }
  b->qOff = CopyTyped<int32_t>(qOff);
  b->candOff = CopyTyped<int32_t>(cOff);
  b->cand = CopyTyped<int32_t>(cand);
  b->pos = CopyTyped<uint8_t>(pos);
  return b;
}

std::shared_ptr<PairRequest> ReadPairRequest(const Napi::Value& v) {
  auto r = std::make_shared<PairRequest>();
  if (v.IsUndefined()) return r;
  if (!v.IsObject()) Bad("options must be an object");
  Napi::Object o = v.As<Napi::Object>();
  Napi::Value keep = o.Get("keepPairs");
  if (!keep.IsUndefined() && !keep.IsBoolean()) Bad("options.keepPairs must be a boolean");
  r->keep = keep.IsBoolean() && keep.As<Napi::Boolean>().Value();
  Napi::Value f = o.Get("forceArgmax");
  if (!f.IsUndefined()) {
    r->force = CopyTyped<int32_t>(Int32Arg(f, "options.forceArgmax"));
    r->forced = true;
  }
  return r;
}

void ReadTrainerMatrix(const State& s, const Napi::Value& v, const std::string& name, std::vector<float>& into, bool finite) {
  auto a = Float32Arg(v, name);
  if (int64_t(a.ElementLength()) != s.nEmbd * s.dim)
    Bad(name + " must hold dim × nEmbd = " + std::to_string(s.nEmbd * s.dim) + " values, got " +
        std::to_string(a.ElementLength()));
  for (size_t i = 0; i < a.ElementLength(); ++i)
    if (!std::isfinite(a.Data()[i]) || (!finite && a.Data()[i] < 0)) Bad(name + "[" + std::to_string(i) + "] is out of range");
  into = CopyTyped<float>(a);
}

// long function: checks, placement, allocation with rollback, then the copy, in that order.
void AddResidentSkills(State& s, const Napi::Value& statesV, const Napi::Value& rowsV) {
  auto states = Float32Arg(statesV, "states");
  auto rowsA = Int32Arg(rowsV, "rows");
  train::ResidentStore& st = s.store;
  const int64_t sWidth = s.freezeWs ? s.dim : s.nEmbd;
  if (st.Skills() > 0 && st.width != sWidth)
    Bad("the resident skills are " + std::to_string(st.width) + " wide but this trainer's skill rows are now " +
        std::to_string(sWidth) + "; clearSkills first");
  const int64_t n = static_cast<int64_t>(rowsA.ElementLength());
  const int32_t* rows = rowsA.Data();
  if (double(st.Skills()) + double(n) > double(std::numeric_limits<int32_t>::max())) Bad("too many resident skills");
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (rows[i] < 0) Bad("rows[" + std::to_string(i) + "] = " + std::to_string(rows[i]) + " must be ≥ 0");
    total += rows[i];
  }
  if (total * double(sWidth) != double(states.ElementLength()))
    Bad("states.length (" + std::to_string(states.ElementLength()) + ") must be Σ rows × " +
        (s.freezeWs ? "dim (keys while freezeWs)" : "nEmbd") + " (" + std::to_string(int64_t(total) * sWidth) + ")");
  if (n == 0) return;
  const size_t values = states.ElementLength();
  std::vector<uint16_t> half;
  try {
    half.resize(values);
  } catch (const std::bad_alloc&) {
    throw Failure(Code::OUT_OF_MEMORY, "no host memory to convert " + std::to_string(values) + " states to f16");
  }
  train::CheckAndConvert(states.Data(), values, half.data(), s.threads);
  const train::Placement p = train::Place(st, rows, n, sWidth);
  const size_t oldChunks = st.chunkRows.size();
  // Allocate every new chunk first; on failure free what this call made and leave the store as it was.
  std::vector<std::unique_ptr<uint16_t[]>> made;
  try {
    for (int64_t r : p.newChunkRows) {
      const size_t halves = size_t(r) * size_t(sWidth);
      if (s.dev) {
        s.dev->NewChunk(halves);
      } else {
        std::unique_ptr<uint16_t[]> c(new (std::nothrow) uint16_t[halves]);
        if (!c) throw Failure(Code::OUT_OF_MEMORY, "no host memory for " + std::to_string(halves * 2) + " bytes of resident states");
        made.push_back(std::move(c));
      }
    }
  } catch (...) {
    if (s.dev) s.dev->DropChunks(oldChunks);
    throw;
  }
  const auto chunkOf = [&](int32_t c) -> uint16_t* {
    return size_t(c) < oldChunks ? st.host[c].get() : made[size_t(c) - oldChunks].get();
  };
  // Copy skill by skill (runs of skills sharing a chunk go in one copy on the device).
  try {
    size_t at = 0;
    for (int64_t i = 0; i < n;) {
      if (rows[i] == 0) {
        ++i;
        continue;
      }
      int64_t j = i, runRows = 0;
      while (j < n && (rows[j] == 0 || (p.chunk[j] == p.chunk[i] && p.row0[j] == p.row0[i] + runRows))) runRows += rows[j++];
      const size_t count = size_t(runRows) * size_t(sWidth), dst = size_t(p.row0[i]) * size_t(sWidth);
      if (s.dev)
        s.dev->FillChunk(p.chunk[i], dst, half.data() + at, count);
      else
        std::memcpy(chunkOf(p.chunk[i]) + dst, half.data() + at, count * sizeof(uint16_t));
      at += count;
      i = j;
    }
  } catch (...) {
    if (s.dev) s.dev->DropChunks(oldChunks);
    throw;
  }
  // Commit.
  st.width = sWidth;
  if (oldChunks > 0) st.chunkUsed[oldChunks - 1] = p.lastUsedAfter;
  for (size_t c = 0; c < p.newChunkRows.size(); ++c) {
    st.chunkRows.push_back(p.newChunkRows[c]);
    st.chunkUsed.push_back(0);
  }
  for (int64_t i = 0; i < n; ++i) {
    st.chunk.push_back(p.chunk[i]);
    st.row0.push_back(p.row0[i]);
    st.rows.push_back(rows[i]);
    if (p.chunk[i] >= 0 && size_t(p.chunk[i]) >= oldChunks)
      st.chunkUsed[p.chunk[i]] = std::max<int64_t>(st.chunkUsed[p.chunk[i]], p.row0[i] + rows[i]);
  }
  for (auto& c : made) st.host.push_back(std::move(c));
}

StepOut ComputeStep(State& s, train::Batch& batch, const PairRequest& pr, kernels::Isa isa, bool update) {
  StepOut out;
  out.frozen = s.freezeWs;
  out.keep = pr.keep;
  train::PairOptions po;
  po.keep = pr.keep;
  if (pr.forced) {
    po.forceArgmax = pr.force.data();
    po.forceCount = static_cast<int64_t>(pr.force.size());
  }
  if (s.dev) {
    train::device::StepParams p;
    p.tau = s.tau;
    p.keysGiven = s.freezeWs;
    p.update = update;
    p.t = s.step + 1;
    p.adam = s.adam;
    p.returnGrads = !update;
    p.pairs = po;
    p.store = batch.resident ? &s.store : nullptr;
    train::device::StepResult r = s.dev->Step(batch, p);
    if (update) s.step = p.t;
    out.loss = r.lg.loss;
    out.gradNorm = r.gradNorm;
    out.gWq = std::move(r.lg.gWq);
    out.gWs = std::move(r.lg.gWs);
    out.m = std::move(r.lg.m);
    out.argmax = std::move(r.lg.argmax);
    out.uploadMs = r.uploadMs;
    out.computeMs = r.computeMs;
    return out;
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (batch.resident) train::GatherHost(s.store, batch, s.threads);
  train::LossGrad lg =
      train::LossAndGrad(batch, s.wq.data(), s.ws.data(), s.nEmbd, s.dim, s.tau, s.freezeWs, isa, s.threads, po);
  out.loss = lg.loss;
  double ss = 0;
  for (float g : lg.gWq) ss += double(g) * double(g);
  for (float g : lg.gWs) ss += double(g) * double(g);
  out.gradNorm = std::sqrt(ss);
  if (update) {
    const int64_t t = ++s.step;
    const int64_t n = s.nEmbd * s.dim;
    train::AdamWUpdate(s.wq.data(), s.mq.data(), s.vq.data(), lg.gWq.data(), n, t, s.adam, s.threads);
    if (!s.freezeWs)
      train::AdamWUpdate(s.ws.data(), s.ms.data(), s.vs.data(), lg.gWs.data(), n, t, s.adam, s.threads);
  } else {
    out.gWq = std::move(lg.gWq);
    out.gWs = std::move(lg.gWs);
  }
  out.m = std::move(lg.m);
  out.argmax = std::move(lg.argmax);
  out.computeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace gavel::trainer_napi
