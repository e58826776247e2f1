// NativeTrainer: W_q, W_s and their AdamW state held natively; step / lossAndGrad run on a worker
// thread over a copy of the batch. Every argument is validated here before any memory is touched
// (the TypeScript wrapper checks too, but no JS input may crash the process).
#include <napi.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/napi_args.h"
#include "common/worker.h"
#include "train/train.h"
#include "train/train_core.h"
#include "train/train_device.h"
#include "train/train_napi_state.h"

namespace gavel {
namespace {

using namespace trainer_napi;

// Marks NativeTrainer instances (see CheckTag).
constexpr napi_type_tag kTrainerTag = {0x67617665'6c5f7472ull, 0x4c1e8a2b'93d0f657ull};

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
                           InstanceMethod<&NativeTrainer::Dispose>("dispose"),
                           InstanceMethod<&NativeTrainer::AddSkills>("addSkills"),
                           InstanceMethod<&NativeTrainer::ClearSkills>("clearSkills"),
                           InstanceAccessor<&NativeTrainer::GetResidentSkills>("residentSkills"),
                           InstanceAccessor<&NativeTrainer::GetResidentBytes>("residentBytes"),
                           InstanceAccessor<&NativeTrainer::GetFreeze, &NativeTrainer::SetFreeze>("freezeWs"),
                           InstanceAccessor<&NativeTrainer::GetLr, &NativeTrainer::SetLr>("lr"),
                           InstanceAccessor<&NativeTrainer::GetSteps>("steps"),
                           InstanceAccessor<&NativeTrainer::GetNEmbd>("nEmbd"),
                           InstanceAccessor<&NativeTrainer::GetDim>("dim"),
                           InstanceAccessor<&NativeTrainer::GetDevice>("device"),
                           InstanceAccessor<&NativeTrainer::GetPrecision>("precision"),
                       });
  }

  // new NativeTrainer({ nEmbd, dim, tau?, lr?, beta1?, beta2?, eps?, weightDecay?, freezeWs?, seed?, threads?,
  //                     device?: "cpu" | "cuda", precision?: "bf16" | "fp32" })
  explicit NativeTrainer(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeTrainer>(info) {
    Guard(info, "NativeTrainer", [&]() -> Napi::Value {
      info.This().As<Napi::Object>().TypeTag(&kTrainerTag);
      if (!info[0].IsObject()) Bad("options must be an object");
      Napi::Object o = info[0].As<Napi::Object>();
      auto& s = *state_;
      s.nEmbd = IntArg(o.Get("nEmbd"), "nEmbd", 1, 1 << 20);
      s.dim = IntArg(o.Get("dim"), "dim", 1, 1 << 16);
      if (double(s.nEmbd) * double(s.dim) > double(std::numeric_limits<int32_t>::max()))
        Bad("dim × nEmbd is too large");
      s.tau = NumberField(o, "tau", 40, 1e-6, 1e6);
      s.adam.lr = NumberField(o, "lr", 1e-3, 0, 10);
      s.adam.beta1 = NumberField(o, "beta1", 0.9, 0, 0.999999);
      s.adam.beta2 = NumberField(o, "beta2", 0.999, 0, 0.999999999);
      s.adam.eps = NumberField(o, "eps", 1e-8, 1e-30, 1);
      s.adam.weightDecay = NumberField(o, "weightDecay", 0.01, 0, 1e3);
      s.threads = static_cast<unsigned>(NumberField(o, "threads", 0, 0, 4096, true));
      const double seed = NumberField(o, "seed", 0, 0, 9007199254740991.0, true);
      Napi::Value fz = o.Get("freezeWs");
      if (!fz.IsUndefined() && !fz.IsBoolean()) Bad("freezeWs must be a boolean");
      s.freezeWs = fz.IsBoolean() && fz.As<Napi::Boolean>().Value();
      const std::string device = StringOption(o, "device", "cpu");
      if (device != "cpu" && device != "cuda") Bad("device must be \"cpu\" or \"cuda\"");
      const std::string precision = StringOption(o, "precision", "bf16");
      if (precision != "bf16" && precision != "fp32") Bad("precision must be \"bf16\" or \"fp32\"");
      s.precision = precision == "fp32" ? train::device::Precision::Fp32 : train::device::Precision::Bf16;
      const size_t n = static_cast<size_t>(s.nEmbd * s.dim);
      s.wq.resize(n);
      s.ws.resize(n);
      // i.i.d. N(0, 1/nEmbd): W h keeps the scale of h (as Projections.random).
      const double scale = 1.0 / std::sqrt(double(s.nEmbd));
      GaussianInit(s.wq, uint64_t(seed) * 2 + 1, scale);
      GaussianInit(s.ws, uint64_t(seed) * 2 + 2, scale);
      if (device == "cuda") {
        // Throws CUDA_UNAVAILABLE in a CPU build or without a device; moments start at zero there.
        s.dev = train::device::Create(s.nEmbd, s.dim, s.precision);
        s.dev->SetWeights(s.wq.data(), s.ws.data());
        s.wq = {};
        s.ws = {};
        return info.Env().Undefined();
      }
      s.mq.assign(n, 0.f);
      s.vq.assign(n, 0.f);
      s.ms.assign(n, 0.f);
      s.vs.assign(n, 0.f);
      return info.Env().Undefined();
    });
  }

 private:
  // Null once disposed; a step in flight holds its own reference, so its State outlives a dispose.
  std::shared_ptr<State> state_ = std::make_shared<State>();

  // First thing in every entry point: `this` must be a live NativeTrainer.
  State& Use(const Napi::CallbackInfo& info) {
    CheckTag(info, &kTrainerTag, "NativeTrainer");
    if (!state_) Disposed("trainer");
    return *state_;
  }
  // The same, with no step in flight.
  State& UseIdle(const Napi::CallbackInfo& info) {
    State& s = Use(info);
    if (s.busy.load(std::memory_order_acquire)) Bad("a step is in flight on this trainer; await it first");
    return s;
  }

  // step / lossAndGrad: an async verb only rejects, never throws (as Model's verbs).
  Napi::Value Run(const Napi::CallbackInfo& info, const char* name, bool update) {
    return GuardAsync(info, name, [&]() -> Napi::Value {
      UseIdle(info);
      std::shared_ptr<train::Batch> batch = ReadBatch(*state_, info[0]);
      std::shared_ptr<PairRequest> pairs = ReadPairRequest(info[1]);
      auto st = state_;
      const kernels::Isa isa = kernels::CurrentIsa();
      st->busy.store(true, std::memory_order_release);
      return PromiseWorker<StepOut>::Start(
          info.Env(),
          [st, batch, pairs, isa, update, name = std::string(name)]() {
            try {
              return ComputeStep(*st, *batch, *pairs, isa, update);
            } catch (...) {
              std::string message;
              const Code code = CurrentFailure(message);
              throw Failure(code, name + ": " + message);
            }
          },
          [update](Napi::Env env, StepOut& r) -> Napi::Value {
            Napi::Object o = Napi::Object::New(env);
            o.Set("loss", r.loss);
            if (update) {
              o.Set("gradNorm", r.gradNorm);
            } else {
              o.Set("gradWq", ToTyped(env, r.gWq));
              o.Set("gradWs", r.frozen ? env.Null() : Napi::Value(ToTyped(env, r.gWs)));
            }
            if (r.keep) {
              Napi::Object pr = Napi::Object::New(env);
              pr.Set("m", ToTyped(env, r.m));
              pr.Set("argmax", ToTyped(env, r.argmax));
              o.Set("pairs", pr);
            }
            Napi::Object tm = Napi::Object::New(env);
            tm.Set("uploadMs", r.uploadMs);
            tm.Set("computeMs", r.computeMs);
            o.Set("timings", tm);
            return o;
          },
          Value(),
          // Clears `busy` on the JS thread as the promise settles, in every case: JS never sees the
          // trainer idle before the promise settles.
          [st]() { st->busy.store(false, std::memory_order_release); });
    });
  }

  Napi::Value Step(const Napi::CallbackInfo& info) { return Run(info, "NativeTrainer.step", true); }
  Napi::Value LossAndGradJs(const Napi::CallbackInfo& info) { return Run(info, "NativeTrainer.lossAndGrad", false); }

  // dispose(): void — frees the weights and optimizer state. A step in flight finishes (its promise
  // settles as usual) over its own reference, freed when it ends. Idempotent; every other use then
  // throws DISPOSED (step and lossAndGrad reject with it).
  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeTrainer.dispose", [&]() -> Napi::Value {
      CheckTag(info, &kTrainerTag, "NativeTrainer");
      state_.reset();
      return info.Env().Undefined();
    });
  }

  // addSkills(states, rows): appends skills to the resident store (all or nothing); returns its count.
  Napi::Value AddSkills(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeTrainer.addSkills", [&]() -> Napi::Value {
      State& s = UseIdle(info);
      AddResidentSkills(s, info[0], info[1]);
      return Napi::Number::New(info.Env(), double(s.store.Skills()));
    });
  }

  // clearSkills(): empties the resident store and frees its memory.
  Napi::Value ClearSkills(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeTrainer.clearSkills", [&]() -> Napi::Value {
      State& s = UseIdle(info);
      if (s.dev) s.dev->DropChunks(0);
      s.store.Clear();
      return info.Env().Undefined();
    });
  }

  Napi::Value GetWeights(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeTrainer.getWeights", [&]() -> Napi::Value {
      const State& s = UseIdle(info);
      Napi::Object o = Napi::Object::New(info.Env());
      if (s.dev) {
        std::vector<float> wq(size_t(s.nEmbd * s.dim)), ws(wq.size());
        s.dev->GetWeights(wq.data(), ws.data());
        o.Set("wq", ToTyped(info.Env(), wq));
        o.Set("ws", ToTyped(info.Env(), ws));
        return o;
      }
      o.Set("wq", ToTyped(info.Env(), s.wq));
      o.Set("ws", ToTyped(info.Env(), s.ws));
      return o;
    });
  }

  // setWeights(wq, ws): the optimizer state is kept (use setState to replace everything).
  Napi::Value SetWeights(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeTrainer.setWeights", [&]() -> Napi::Value {
      State& s = UseIdle(info);
      std::vector<float> wq, ws;
      ReadTrainerMatrix(s, info[0], "wq", wq, true);
      ReadTrainerMatrix(s, info[1], "ws", ws, true);
      if (s.dev) {
        s.dev->SetWeights(wq.data(), ws.data());
        return info.Env().Undefined();
      }
      s.wq = std::move(wq);
      s.ws = std::move(ws);
      return info.Env().Undefined();
    });
  }

  Napi::Value GetState(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeTrainer.getState", [&]() -> Napi::Value {
      const State& s = UseIdle(info);
      Napi::Env env = info.Env();
      Napi::Object o = Napi::Object::New(env);
      o.Set("step", double(s.step));
      if (s.dev) {
        const size_t n = size_t(s.nEmbd * s.dim);
        std::vector<float> wq(n), ws(n), mq(n), vq(n), ms(n), vs(n);
        s.dev->GetWeights(wq.data(), ws.data());
        s.dev->GetMoments(mq.data(), vq.data(), ms.data(), vs.data());
        for (auto [key, v] : {std::pair<const char*, std::vector<float>*>{"wq", &wq}, {"ws", &ws}, {"mWq", &mq}, {"vWq", &vq},
                              {"mWs", &ms}, {"vWs", &vs}})
          o.Set(key, ToTyped(env, *v));
        return o;
      }
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
      State& s = UseIdle(info);
      if (!info[0].IsObject()) Bad("state must be an object");
      Napi::Object o = info[0].As<Napi::Object>();
      const double step = NumberField(o, "step", -1, 0, 9007199254740991.0, true);
      if (step < 0) Bad("state.step is required");
      std::vector<float> wq, ws, mq, vq, ms, vs;
      ReadTrainerMatrix(s, o.Get("wq"), "state.wq", wq, true);
      ReadTrainerMatrix(s, o.Get("ws"), "state.ws", ws, true);
      ReadTrainerMatrix(s, o.Get("mWq"), "state.mWq", mq, true);
      ReadTrainerMatrix(s, o.Get("vWq"), "state.vWq", vq, false);
      ReadTrainerMatrix(s, o.Get("mWs"), "state.mWs", ms, true);
      ReadTrainerMatrix(s, o.Get("vWs"), "state.vWs", vs, false);
      if (s.dev) {
        s.dev->SetWeights(wq.data(), ws.data());
        s.dev->SetMoments(mq.data(), vq.data(), ms.data(), vs.data());
        s.step = static_cast<int64_t>(step);
        return info.Env().Undefined();
      }
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

  template <typename Fn>
  Napi::Value Getter(const Napi::CallbackInfo& info, const char* name, Fn value) {
    return Guard(info, name, [&]() -> Napi::Value { return value(info.Env(), Use(info)); });
  }
  Napi::Value GetFreeze(const Napi::CallbackInfo& info) {
    return Getter(info, "NativeTrainer.freezeWs", [](Napi::Env e, const State& s) { return Napi::Boolean::New(e, s.freezeWs); });
  }
  void SetFreeze(const Napi::CallbackInfo& info, const Napi::Value& v) {
    Guard(info, "NativeTrainer.freezeWs", [&]() -> Napi::Value {
      State& s = UseIdle(info);
      if (!v.IsBoolean()) Bad("freezeWs must be a boolean");
      s.freezeWs = v.As<Napi::Boolean>().Value();
      return info.Env().Undefined();
    });
  }
  Napi::Value GetLr(const Napi::CallbackInfo& info) {
    return Getter(info, "NativeTrainer.lr", [](Napi::Env e, const State& s) { return Napi::Number::New(e, s.adam.lr); });
  }
  void SetLr(const Napi::CallbackInfo& info, const Napi::Value& v) {
    Guard(info, "NativeTrainer.lr", [&]() -> Napi::Value {
      State& s = UseIdle(info);
      if (!v.IsNumber()) Bad("lr must be a number");
      const double lr = v.As<Napi::Number>().DoubleValue();
      if (!std::isfinite(lr) || lr < 0 || lr > 10) Bad("lr must be in [0, 10]");
      s.adam.lr = lr;
      return info.Env().Undefined();
    });
  }
  Napi::Value GetSteps(const Napi::CallbackInfo& info) {
    return Getter(info, "NativeTrainer.steps", [](Napi::Env e, const State& s) { return Napi::Number::New(e, double(s.step)); });
  }
  Napi::Value GetNEmbd(const Napi::CallbackInfo& info) {
    return Getter(info, "NativeTrainer.nEmbd", [](Napi::Env e, const State& s) { return Napi::Number::New(e, double(s.nEmbd)); });
  }
  Napi::Value GetDim(const Napi::CallbackInfo& info) {
    return Getter(info, "NativeTrainer.dim", [](Napi::Env e, const State& s) { return Napi::Number::New(e, double(s.dim)); });
  }
  Napi::Value GetDevice(const Napi::CallbackInfo& info) {
    return Getter(info, "NativeTrainer.device", [](Napi::Env e, const State& s) { return Napi::String::New(e, s.dev ? "cuda" : "cpu"); });
  }
  Napi::Value GetResidentSkills(const Napi::CallbackInfo& info) {
    return Getter(info, "NativeTrainer.residentSkills",
                  [](Napi::Env e, const State& s) { return Napi::Number::New(e, double(s.store.Skills())); });
  }
  Napi::Value GetResidentBytes(const Napi::CallbackInfo& info) {
    return Getter(info, "NativeTrainer.residentBytes", [](Napi::Env e, const State& s) { return Napi::Number::New(e, s.store.Bytes()); });
  }
  // The CUDA trainer's precision ("bf16" | "fp32"); the CPU trainer is always "fp32".
  Napi::Value GetPrecision(const Napi::CallbackInfo& info) {
    return Getter(info, "NativeTrainer.precision", [](Napi::Env e, const State& s) {
      return Napi::String::New(e, s.dev && s.precision == train::device::Precision::Bf16 ? "bf16" : "fp32");
    });
  }
};

}  // namespace

void RegisterTrainer(Napi::Env env, Napi::Object exports) {
  exports.Set("NativeTrainer", NativeTrainer::Define(env));
}

}  // namespace gavel
