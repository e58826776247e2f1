// See train_napi_state.h.
#include "train/train_napi_state.h"

#include <chrono>
#include <cmath>
#include <unordered_set>

#include "common/napi_args.h"
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

std::shared_ptr<train::Batch> ReadBatch(const State& s, const Napi::Value& v) {
  if (!v.IsObject()) Bad("batch must be an object");
  Napi::Object o = v.As<Napi::Object>();
  auto q = Float32Arg(o.Get("queryStates"), "batch.queryStates");
  auto qOff = Int32Arg(o.Get("queryOffsets"), "batch.queryOffsets");
  auto st = Float32Arg(o.Get("skillStates"), "batch.skillStates");
  auto sOff = Int32Arg(o.Get("skillOffsets"), "batch.skillOffsets");
  auto cOff = Int32Arg(o.Get("candidateOffsets"), "batch.candidateOffsets");
  auto cand = Int32Arg(o.Get("candidates"), "batch.candidates");
  auto pos = Uint8Arg(o.Get("positive"), "batch.positive");
  const int32_t *qO = qOff.Data(), *sO = sOff.Data(), *cO = cOff.Data(), *cd = cand.Data();
  const uint8_t* ps = pos.Data();
  CheckOffsets(qOff, "batch.queryOffsets", 2);
  CheckOffsets(sOff, "batch.skillOffsets", 2);
  const int64_t nTasks = int64_t(qOff.ElementLength()) - 1, nSkills = int64_t(sOff.ElementLength()) - 1;
  if (int64_t(cOff.ElementLength()) != nTasks + 1)
    Bad("batch.candidateOffsets must have one entry per task plus one (" + std::to_string(nTasks + 1) + ")");
  CheckOffsets(cOff, "batch.candidateOffsets", 2);
  const int64_t sWidth = s.freezeWs ? s.dim : s.nEmbd;
  if (double(qO[nTasks]) * double(s.nEmbd) != double(q.ElementLength()))
    Bad("batch.queryStates.length (" + std::to_string(q.ElementLength()) + ") must be queryOffsets[last] × nEmbd (" +
        std::to_string(int64_t(qO[nTasks]) * s.nEmbd) + ")");
  if (double(sO[nSkills]) * double(sWidth) != double(st.ElementLength()))
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
  auto b = std::make_shared<train::Batch>();
  if (s.dev) {
    s.dev->Stage(q.Data(), q.ElementLength(), st.Data(), st.ElementLength(), *b);
  } else {
    b->q = CopyTyped<float>(q);
    b->s = CopyTyped<float>(st);
  }
  b->qOff = CopyTyped<int32_t>(qOff);
  b->sOff = CopyTyped<int32_t>(sOff);
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

StepOut ComputeStep(State& s, const train::Batch& batch, const PairRequest& pr, kernels::Isa isa, bool update) {
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
