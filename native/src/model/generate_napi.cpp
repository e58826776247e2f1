// NativeGeneration: the N-API face of Generation (generate.h). Created by NativeModel.generation();
// append() and close() are PromiseWorkers (each takes the engine's mutex off the JS thread).
#include "model/generate_napi.h"

#include "common/napi_args.h"
#include "common/worker.h"
#include "model/generate.h"

namespace gavel {
namespace {

struct Holder {
  std::shared_ptr<Engine> engine;
  int layer;
  SamplerParams params;
  bool final_state = false;
};

class NativeGeneration : public Napi::ObjectWrap<NativeGeneration> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "NativeGeneration",
                       {InstanceMethod("append", &NativeGeneration::Append), InstanceMethod("isEog", &NativeGeneration::IsEog),
                        InstanceMethod("position", &NativeGeneration::Position), InstanceMethod("close", &NativeGeneration::Close)});
  }

  explicit NativeGeneration(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeGeneration>(info) {
    if (info.Length() != 1 || !info[0].IsExternal()) {
      Napi::TypeError::New(info.Env(), "NativeGeneration is made by NativeModel.generation()").ThrowAsJavaScriptException();
      return;
    }
    auto* h = info[0].As<Napi::External<Holder>>().Data();
    try {
      gen_ = std::make_shared<Generation>(h->engine, h->layer, h->params, h->final_state);
    } catch (...) {
      CurrentError(info.Env(), "generation: ").ThrowAsJavaScriptException();
    }
  }

 private:
  std::shared_ptr<Generation> Use() const {
    if (!gen_) Disposed("generation");
    return gen_;
  }

  Napi::Value Append(const Napi::CallbackInfo& info) {
    return GuardAsync(info, nullptr, [&]() -> Napi::Value {
      auto gen = Use();
      auto tokens = CopyTyped<int32_t>(Int32Arg(info[0], "tokens"));
      return PromiseWorker<GenerationStep>::Start(
          info.Env(), [gen, tokens = std::move(tokens)]() { return gen->Append(tokens); },
          [](Napi::Env e, GenerationStep& s) {
            Napi::Object o = Napi::Object::New(e);
            o.Set("states", ToTyped(e, s.states));
            if (!s.final_state.empty()) o.Set("finalState", ToTyped(e, s.final_state));
            o.Set("next", s.next);
            return Napi::Value(o);
          },
          Value());
    });
  }

  Napi::Value IsEog(const Napi::CallbackInfo& info) {
    return Guard(info, nullptr, [&]() -> Napi::Value {
      return Napi::Boolean::New(info.Env(), Use()->IsEog(int32_t(IntArg(info[0], "token", INT32_MIN, INT32_MAX))));
    });
  }

  Napi::Value Position(const Napi::CallbackInfo& info) {
    return Guard(info, nullptr, [&]() -> Napi::Value { return Napi::Number::New(info.Env(), Use()->Position()); });
  }

  // Frees the sequence (off the JS thread: it waits for the engine's mutex). Idempotent.
  Napi::Value Close(const Napi::CallbackInfo& info) {
    return GuardAsync(info, nullptr, [&]() -> Napi::Value {
      auto gen = gen_;
      gen_.reset();
      return PromiseWorker<bool>::Start(
          info.Env(),
          [gen]() {
            if (gen) gen->Close();
            return true;
          },
          [](Napi::Env e, bool&) { return e.Undefined(); }, Value());
    });
  }

  std::shared_ptr<Generation> gen_;
};

}  // namespace

void RegisterGeneration(Napi::Env env, Napi::Object exports) {
  Napi::Function f = NativeGeneration::Define(env);
  RefsOf(env).generation = Napi::Persistent(f);  // this environment's (common/errors.h)
  exports.Set("NativeGeneration", f);
}

Napi::Value NewGeneration(const Napi::CallbackInfo& info, std::shared_ptr<Engine> engine) {
  Napi::Env env = info.Env();
  Holder h;
  h.engine = std::move(engine);
  h.layer = int(IntArg(info[0], "layer", 0, 1 << 20));
  if (!info[1].IsObject()) Bad("params must be an object");
  Napi::Object o = info[1].As<Napi::Object>();
  auto num = [&](const char* k, double lo, double hi, bool integer = false) {
    if (o.Get(k).IsUndefined()) Bad(std::string(k) + " is required");
    return NumberField(o, k, 0, lo, hi, integer);
  };
  h.params.temperature = float(num("temperature", 0, 1e6));
  h.params.top_k = int(num("topK", 0, INT32_MAX, true));
  h.params.top_p = float(num("topP", 1e-9, 1));
  h.params.min_p = float(num("minP", 0, 1));
  h.params.seed = uint32_t(num("seed", 0, 4294967295.0, true));
  h.params.penalty_last_n = int(num("penaltyLastN", 0, INT32_MAX, true));
  h.params.repeat_penalty = float(num("repeatPenalty", 1e-9, 1e6));
  h.params.frequency_penalty = float(num("frequencyPenalty", -1e6, 1e6));
  h.params.presence_penalty = float(num("presencePenalty", -1e6, 1e6));
  // Optional third argument: whether each append also returns the last block's row of its last token.
  if (info.Length() > 2 && !info[2].IsUndefined()) h.final_state = BoolArg(info[2], "finalState");
  Napi::FunctionReference& ctor = RefsOf(env).generation;
  if (ctor.IsEmpty()) Bad("NativeGeneration is not registered");
  Napi::Object obj = ctor.New({Napi::External<Holder>::New(env, &h)});
  return obj;
}

}  // namespace gavel
