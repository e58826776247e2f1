// NativeTrainer: W_q, W_s and their AdamW state held natively; step / lossAndGrad run on a worker
// thread over a copy of the batch. Every argument is validated here before any memory is touched
// (the TypeScript wrapper checks too, but no JS input may crash the process).
#include <napi.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/errors.h"
#include "common/worker.h"
#include "train/train.h"
#include "train/train_core.h"

namespace gavel {
namespace {

struct ArgError {
  std::string message;
};
[[noreturn]] void Bad(const std::string& m) { throw ArgError{m}; }

template <typename Fn>
Napi::Value Guard(const Napi::CallbackInfo& info, const char* fn, Fn body) {
  Napi::Env env = info.Env();
  try {
    return body();
  } catch (const ArgError& e) {
    MakeError(env, "INVALID_ARGUMENT", std::string(fn) + ": " + e.message).ThrowAsJavaScriptException();
  } catch (const Failure& f) {
    MakeError(env, f.code, std::string(fn) + ": " + f.what()).ThrowAsJavaScriptException();
  } catch (const Napi::Error& e) {
    e.ThrowAsJavaScriptException();
  } catch (const std::bad_alloc&) {
    MakeError(env, "OUT_OF_MEMORY", std::string(fn) + ": out of memory").ThrowAsJavaScriptException();
  } catch (const std::exception& e) {
    MakeError(env, "INTERNAL", std::string(fn) + ": " + e.what()).ThrowAsJavaScriptException();
  }
  return env.Undefined();
}

template <typename T>
Napi::TypedArrayOf<T> Typed(const Napi::Value& v, const std::string& name, napi_typedarray_type type, const char* tn) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != type) Bad(name + " must be a " + tn);
  return v.As<Napi::TypedArrayOf<T>>();
}
Napi::Float32Array F32(const Napi::Value& v, const std::string& name) {
  return Typed<float>(v, name, napi_float32_array, "Float32Array");
}
Napi::Int32Array I32(const Napi::Value& v, const std::string& name) {
  return Typed<int32_t>(v, name, napi_int32_array, "Int32Array");
}
Napi::Uint8Array U8(const Napi::Value& v, const std::string& name) {
  return Typed<uint8_t>(v, name, napi_uint8_array, "Uint8Array");
}

double Num(const Napi::Object& o, const char* key, double dflt, double lo, double hi, bool integer = false) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return dflt;
  if (!v.IsNumber()) Bad(std::string(key) + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || d < lo || d > hi || (integer && std::floor(d) != d))
    Bad(std::string(key) + " must be " + (integer ? "an integer" : "a number") + " in [" + std::to_string(lo) + ", " +
        std::to_string(hi) + "], got " + std::to_string(d));
  return d;
}

// Offsets: n + 1 entries, 0 first, non-decreasing, last = total.
void CheckOffsets(const Napi::Int32Array& off, const std::string& name, int64_t minLen) {
  const int64_t n = static_cast<int64_t>(off.ElementLength());
  const int32_t* o = off.Data();
  if (n < minLen) Bad(name + " must hold at least " + std::to_string(minLen) + " entries");
  if (o[0] != 0) Bad(name + "[0] must be 0");
  for (int64_t i = 1; i < n; ++i)
    if (o[i] < o[i - 1]) Bad(name + " must be non-decreasing (at " + std::to_string(i) + ")");
}

struct State {
  int64_t nEmbd = 0, dim = 0;
  double tau = 40;
  train::AdamWParams adam;
  bool freezeWs = false;
  unsigned threads = 0;
  int64_t step = 0;
  std::vector<float> wq, ws, mq, vq, ms, vs;
  std::atomic<bool> busy{false};
};

// splitmix64 → uniform → Box–Muller: a portable Gaussian (std::normal_distribution differs by library).
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

class NativeTrainer : public Napi::ObjectWrap<NativeTrainer> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "NativeTrainer",
                       {
                           InstanceMethod<&NativeTrainer::Step>("step"),
                           InstanceMethod<&NativeTrainer::LossAndGradJs>("lossAndGrad"),
                           InstanceMethod<&NativeTrainer::GetWeights>("getWeights"),
                           InstanceMethod<&NativeTrainer::SetWeights>("setWeights"),
                           InstanceMethod<&NativeTrainer::GetState>("getState"),
                           InstanceMethod<&NativeTrainer::SetState>("setState"),
                           InstanceAccessor<&NativeTrainer::GetFreeze, &NativeTrainer::SetFreeze>("freezeWs"),
                           InstanceAccessor<&NativeTrainer::GetLr, &NativeTrainer::SetLr>("lr"),
                           InstanceAccessor<&NativeTrainer::GetSteps>("steps"),
                           InstanceAccessor<&NativeTrainer::GetNEmbd>("nEmbd"),
                           InstanceAccessor<&NativeTrainer::GetDim>("dim"),
                       });
  }

  // new NativeTrainer({ nEmbd, dim, tau?, lr?, beta1?, beta2?, eps?, weightDecay?, freezeWs?, seed?, threads? })
  explicit NativeTrainer(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeTrainer>(info) {
    Guard(info, "NativeTrainer", [&]() -> Napi::Value {
      if (!info[0].IsObject()) Bad("options must be an object");
      Napi::Object o = info[0].As<Napi::Object>();
      auto& s = *state_;
      s.nEmbd = static_cast<int64_t>(Num(o, "nEmbd", -1, 1, 1 << 20, true));
      s.dim = static_cast<int64_t>(Num(o, "dim", -1, 1, 1 << 16, true));
      if (double(s.nEmbd) * double(s.dim) > double(std::numeric_limits<int32_t>::max()))
        Bad("dim × nEmbd is too large");
      s.tau = Num(o, "tau", 40, 1e-6, 1e6);
      s.adam.lr = Num(o, "lr", 1e-3, 0, 10);
      s.adam.beta1 = Num(o, "beta1", 0.9, 0, 0.999999);
      s.adam.beta2 = Num(o, "beta2", 0.999, 0, 0.999999999);
      s.adam.eps = Num(o, "eps", 1e-8, 1e-30, 1);
      s.adam.weightDecay = Num(o, "weightDecay", 0.01, 0, 1e3);
      s.threads = static_cast<unsigned>(Num(o, "threads", 0, 0, 4096, true));
      const double seed = Num(o, "seed", 0, 0, 9007199254740991.0, true);
      Napi::Value fz = o.Get("freezeWs");
      if (!fz.IsUndefined() && !fz.IsBoolean()) Bad("freezeWs must be a boolean");
      s.freezeWs = fz.IsBoolean() && fz.As<Napi::Boolean>().Value();
      const size_t n = static_cast<size_t>(s.nEmbd * s.dim);
      s.wq.resize(n);
      s.ws.resize(n);
      // i.i.d. N(0, 1/nEmbd): W h keeps the scale of h (as Projections.random).
      const double scale = 1.0 / std::sqrt(double(s.nEmbd));
      GaussianInit(s.wq, uint64_t(seed) * 2 + 1, scale);
      GaussianInit(s.ws, uint64_t(seed) * 2 + 2, scale);
      s.mq.assign(n, 0.f);
      s.vq.assign(n, 0.f);
      s.ms.assign(n, 0.f);
      s.vs.assign(n, 0.f);
      return info.Env().Undefined();
    });
  }

 private:
  std::shared_ptr<State> state_ = std::make_shared<State>();

  void CheckIdle() {
    if (state_->busy.load(std::memory_order_acquire)) Bad("a step is in flight on this trainer; await it first");
  }

  // The batch, validated and copied (the worker never touches JS memory).
  std::shared_ptr<train::Batch> ReadBatch(const Napi::Value& v) {
    if (!v.IsObject()) Bad("batch must be an object");
    Napi::Object o = v.As<Napi::Object>();
    const State& s = *state_;
    auto q = F32(o.Get("queryStates"), "batch.queryStates");
    auto qOff = I32(o.Get("queryOffsets"), "batch.queryOffsets");
    auto st = F32(o.Get("skillStates"), "batch.skillStates");
    auto sOff = I32(o.Get("skillOffsets"), "batch.skillOffsets");
    auto cOff = I32(o.Get("candidateOffsets"), "batch.candidateOffsets");
    auto cand = I32(o.Get("candidates"), "batch.candidates");
    auto pos = U8(o.Get("positive"), "batch.positive");
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
    b->q = CopyTyped<float>(q);
    b->qOff = CopyTyped<int32_t>(qOff);
    b->s = CopyTyped<float>(st);
    b->sOff = CopyTyped<int32_t>(sOff);
    b->candOff = CopyTyped<int32_t>(cOff);
    b->cand = CopyTyped<int32_t>(cand);
    b->pos = CopyTyped<uint8_t>(pos);
    return b;
  }

  struct StepOut {
    double loss = 0, gradNorm = 0;
    std::vector<float> gWq, gWs;
    bool frozen = false;
    std::string errCode, errMsg;
  };

  Napi::Value Run(const Napi::CallbackInfo& info, const char* name, bool update) {
    return Guard(info, name, [&]() -> Napi::Value {
      std::shared_ptr<train::Batch> batch;
      try {
        CheckIdle();
        batch = ReadBatch(info[0]);
      } catch (const ArgError& e) {
        // An async verb only rejects, never throws (as Model's verbs).
        auto d = Napi::Promise::Deferred::New(info.Env());
        d.Reject(MakeError(info.Env(), "INVALID_ARGUMENT", std::string(name) + ": " + e.message).Value());
        return d.Promise();
      }
      auto st = state_;
      const kernels::Isa isa = kernels::SelectIsa(std::getenv("GAVEL_KERNEL_ISA"));
      st->busy.store(true, std::memory_order_release);
      return PromiseWorker<StepOut>::Start(
          info.Env(),
          [st, batch, isa, update]() {
            StepOut out;
            // Errors travel in the result so that the JS-thread callback below clears `busy` in
            // every case: JS then never sees the trainer idle before the promise settles.
            try {
              State& s = *st;
              train::LossGrad lg = train::LossAndGrad(*batch, s.wq.data(), s.ws.data(), s.nEmbd, s.dim, s.tau,
                                                      s.freezeWs, isa, s.threads);
              out.loss = lg.loss;
              out.frozen = s.freezeWs;
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
            } catch (const Failure& f) {
              out.errCode = f.code;
              out.errMsg = f.what();
            } catch (const std::bad_alloc&) {
              out.errCode = "OUT_OF_MEMORY";
              out.errMsg = "out of memory";
            } catch (const std::exception& e) {
              out.errCode = "INTERNAL";
              out.errMsg = e.what();
            }
            return out;
          },
          [st, update, name = std::string(name)](Napi::Env env, StepOut& r) -> Napi::Value {
            st->busy.store(false, std::memory_order_release);
            if (!r.errCode.empty()) throw MakeError(env, r.errCode, name + ": " + r.errMsg);
            Napi::Object o = Napi::Object::New(env);
            o.Set("loss", r.loss);
            if (update) {
              o.Set("gradNorm", r.gradNorm);
            } else {
              o.Set("gradWq", ToTyped(env, r.gWq));
              o.Set("gradWs", r.frozen ? env.Null() : Napi::Value(ToTyped(env, r.gWs)));
            }
            return o;
          },
          Value());
    });
  }

  Napi::Value Step(const Napi::CallbackInfo& info) { return Run(info, "NativeTrainer.step", true); }
  Napi::Value LossAndGradJs(const Napi::CallbackInfo& info) { return Run(info, "NativeTrainer.lossAndGrad", false); }

  Napi::Value GetWeights(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeTrainer.getWeights", [&]() -> Napi::Value {
      CheckIdle();
      Napi::Object o = Napi::Object::New(info.Env());
      o.Set("wq", ToTyped(info.Env(), state_->wq));
      o.Set("ws", ToTyped(info.Env(), state_->ws));
      return o;
    });
  }

  void ReadMatrix(const Napi::Value& v, const std::string& name, std::vector<float>& into, bool finite) {
    auto a = F32(v, name);
    if (int64_t(a.ElementLength()) != state_->nEmbd * state_->dim)
      Bad(name + " must hold dim × nEmbd = " + std::to_string(state_->nEmbd * state_->dim) + " values, got " +
          std::to_string(a.ElementLength()));
    for (size_t i = 0; i < a.ElementLength(); ++i)
      if (!std::isfinite(a.Data()[i]) || (!finite && a.Data()[i] < 0)) Bad(name + "[" + std::to_string(i) + "] is out of range");
    into = CopyTyped<float>(a);
  }

  // setWeights(wq, ws): the optimizer state is kept (use setState to replace everything).
  Napi::Value SetWeights(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeTrainer.setWeights", [&]() -> Napi::Value {
      CheckIdle();
      std::vector<float> wq, ws;
      ReadMatrix(info[0], "wq", wq, true);
      ReadMatrix(info[1], "ws", ws, true);
      state_->wq = std::move(wq);
      state_->ws = std::move(ws);
      return info.Env().Undefined();
    });
  }

  Napi::Value GetState(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeTrainer.getState", [&]() -> Napi::Value {
      CheckIdle();
      Napi::Env env = info.Env();
      const State& s = *state_;
      Napi::Object o = Napi::Object::New(env);
      o.Set("step", double(s.step));
      o.Set("wq", ToTyped(env, s.wq));
      o.Set("ws", ToTyped(env, s.ws));
      o.Set("mWq", ToTyped(env, s.mq));
      o.Set("vWq", ToTyped(env, s.vq));
      o.Set("mWs", ToTyped(env, s.ms));
      o.Set("vWs", ToTyped(env, s.vs));
      return o;
    });
  }

  // setState({ step, wq, ws, mWq, vWq, mWs, vWs }): all or nothing.
  Napi::Value SetState(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeTrainer.setState", [&]() -> Napi::Value {
      CheckIdle();
      if (!info[0].IsObject()) Bad("state must be an object");
      Napi::Object o = info[0].As<Napi::Object>();
      const double step = Num(o, "step", -1, 0, 9007199254740991.0, true);
      if (step < 0) Bad("state.step is required");
      std::vector<float> wq, ws, mq, vq, ms, vs;
      ReadMatrix(o.Get("wq"), "state.wq", wq, true);
      ReadMatrix(o.Get("ws"), "state.ws", ws, true);
      ReadMatrix(o.Get("mWq"), "state.mWq", mq, true);
      ReadMatrix(o.Get("vWq"), "state.vWq", vq, false);
      ReadMatrix(o.Get("mWs"), "state.mWs", ms, true);
      ReadMatrix(o.Get("vWs"), "state.vWs", vs, false);
      State& s = *state_;
      s.step = static_cast<int64_t>(step);
      s.wq = std::move(wq);
      s.ws = std::move(ws);
      s.mq = std::move(mq);
      s.vq = std::move(vq);
      s.ms = std::move(ms);
      s.vs = std::move(vs);
      return info.Env().Undefined();
    });
  }

  Napi::Value GetFreeze(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), state_->freezeWs); }
  void SetFreeze(const Napi::CallbackInfo& info, const Napi::Value& v) {
    Guard(info, "NativeTrainer.freezeWs", [&]() -> Napi::Value {
      CheckIdle();
      if (!v.IsBoolean()) Bad("freezeWs must be a boolean");
      state_->freezeWs = v.As<Napi::Boolean>().Value();
      return info.Env().Undefined();
    });
  }
  Napi::Value GetLr(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), state_->adam.lr); }
  void SetLr(const Napi::CallbackInfo& info, const Napi::Value& v) {
    Guard(info, "NativeTrainer.lr", [&]() -> Napi::Value {
      CheckIdle();
      if (!v.IsNumber()) Bad("lr must be a number");
      const double lr = v.As<Napi::Number>().DoubleValue();
      if (!std::isfinite(lr) || lr < 0 || lr > 10) Bad("lr must be in [0, 10]");
      state_->adam.lr = lr;
      return info.Env().Undefined();
    });
  }
  Napi::Value GetSteps(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), double(state_->step)); }
  Napi::Value GetNEmbd(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), double(state_->nEmbd)); }
  Napi::Value GetDim(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), double(state_->dim)); }
};

}  // namespace

void RegisterTrainer(Napi::Env env, Napi::Object exports) {
  exports.Set("NativeTrainer", NativeTrainer::Define(env));
}

}  // namespace gavel
