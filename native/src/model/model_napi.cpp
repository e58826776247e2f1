// NativeModel: the N-API face of Engine. Argument types are checked here (the TS facade checks them
// first, with friendlier messages); slow verbs run in PromiseWorkers holding the engine's mutex.
#include "model/model_napi.h"

#include <memory>

#include "common/napi_args.h"
#include "common/worker.h"
#include "model/engine.h"
#include "model/generate_napi.h"
#include "model/hidden_batch_napi.h"

namespace gavel {
namespace {

// A copy of the Int32Array `v` (the workers never touch JS memory).
std::vector<int32_t> Int32Copy(const Napi::Value& v, const char* what) { return CopyTyped<int32_t>(Int32Arg(v, what)); }

class NativeModel : public Napi::ObjectWrap<NativeModel> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "NativeModel",
                       {InstanceMethod("load", &NativeModel::Load), InstanceMethod("info", &NativeModel::Info),
                        InstanceMethod("meta", &NativeModel::Meta), InstanceMethod("tokenize", &NativeModel::Tokenize),
                        InstanceMethod("tokenizeAsync", &NativeModel::TokenizeAsync),
                        InstanceMethod("detokenize", &NativeModel::Detokenize),
                        InstanceMethod("tokenPiece", &NativeModel::TokenPiece),
                        InstanceMethod("hiddenStates", &NativeModel::HiddenStates),
                        InstanceMethod("hiddenStatesMany", &NativeModel::HiddenStatesMany),
                        InstanceMethod("score", &NativeModel::Score), InstanceMethod("logits", &NativeModel::Logits),
                        InstanceMethod("clearCache", &NativeModel::ClearCache),
                        InstanceMethod("cacheStats", &NativeModel::CacheStatsJs),
                        InstanceMethod("generation", &NativeModel::GenerationJs),
                        InstanceMethod("abort", &NativeModel::Abort), InstanceMethod("dispose", &NativeModel::Dispose)});
  }

  explicit NativeModel(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeModel>(info), engine_(std::make_shared<Engine>()) {}

 private:
  // The engine, checked usable: not disposed, and (unless for load) loaded and idle-safe.
  std::shared_ptr<Engine> Use(bool need_loaded = true) const {
    if (!engine_) Disposed("model");
    if (need_loaded && !loaded_) Bad("the model is not loaded");
    return engine_;
  }

  Napi::Value Load(const Napi::CallbackInfo& info) {
    return Guard(info, nullptr, [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      auto engine = Use(false);
      if (loading_ || loaded_) Bad("load() was already called on this model");
      const std::string path = StringArg(info[0], "path");
      if (!info[1].IsObject()) Bad("params must be an object");
      Napi::Object o = info[1].As<Napi::Object>();
      // Every field required, in Model.load's ranges (no defaults on this side).
      LoadParams p;
      p.gpu_layers = int(IntArg(o.Get("gpuLayers"), "gpuLayers", -1, 100000));
      p.context_size = int(IntArg(o.Get("contextSize"), "contextSize", 16, 1 << 22));
      p.threads = int(IntArg(o.Get("threads"), "threads", 1, 1024));
      p.batch_size = int(IntArg(o.Get("batchSize"), "batchSize", 1, 1 << 16));
      p.sequences = int(IntArg(o.Get("sequences"), "sequences", 2, 256));
      p.flash_attention = int(IntArg(o.Get("flashAttention"), "flashAttention", -1, 1));
      p.kv_f16 = BoolArg(o.Get("kvF16"), "kvF16");
      p.kv_unified = BoolArg(o.Get("kvUnified"), "kvUnified");
      p.logprobs_in_graph = BoolArg(o.Get("logprobsInGraph"), "logprobsInGraph");
      // the one optional field (added after the others; callers that predate it keep none): 0
      p.batch_sequences = o.Get("batchSequences").IsUndefined() ? 0 : int(IntArg(o.Get("batchSequences"), "batchSequences", 0, 254));
      loading_ = true;
      return PromiseWorker<bool>::Start(
          env,
          [engine, path, p]() {
            std::lock_guard<std::mutex> lock(engine->mutex);
            engine->Load(path, p);
            return true;
          },
          [this](Napi::Env e, bool&) {
            loading_ = false;
            loaded_ = true;
            return e.Undefined();
          },
          Value());
    });
  }

  Napi::Value Info(const Napi::CallbackInfo& info) {
    return Guard(info, nullptr, [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      const ModelInfo& m = Use()->Info();
      Napi::Object o = Napi::Object::New(env);
      o.Set("architecture", m.architecture);
      o.Set("description", m.description);
      o.Set("nLayer", m.n_layer);
      o.Set("nEmbd", m.n_embd);
      o.Set("nVocab", m.n_vocab);
      o.Set("contextLength", m.context_length);
      o.Set("contextSize", m.context_size);
      o.Set("batchSize", m.batch_size);
      o.Set("ubatchSize", m.ubatch_size);
      o.Set("kvLayout", m.kv_unified ? "unified" : "streams");
      o.Set("logprobsInGraph", m.logprobs_in_graph);
      o.Set("batchSequences", m.batch_sequences);
      o.Set("chatTemplate", m.has_chat_template ? Napi::Value(Napi::String::New(env, m.chat_template)) : env.Null());
      o.Set("bos", m.bos >= 0 ? Napi::Value(Napi::Number::New(env, m.bos)) : env.Null());
      o.Set("eos", m.eos >= 0 ? Napi::Value(Napi::Number::New(env, m.eos)) : env.Null());
      o.Set("addBos", m.add_bos);
      return o;
    });
  }

  Napi::Value Meta(const Napi::CallbackInfo& info) {
    return Guard(info, nullptr, [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      auto engine = Use();
      std::string out;
      if (!engine->Meta(StringArg(info[0], "key"), &out)) return env.Null();
      return Napi::String::New(env, out);
    });
  }

  Napi::Value Tokenize(const Napi::CallbackInfo& info) {
    return Guard(info, nullptr, [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      auto engine = Use();
      const std::string text = StringArg(info[0], "text");
      return ToTyped(env, engine->Tokenize(text, info[1].ToBoolean(), info[2].ToBoolean()));
    });
  }

  // Tokenize off the JS thread. Without the engine's mutex: llama.cpp's tokenizers only read the
  // vocabulary, which nothing changes after load, so this runs beside a decode and beside other
  // tokenizations (as llama-server's HTTP threads do). The worker's reference keeps the engine alive
  // past a dispose.
  Napi::Value TokenizeAsync(const Napi::CallbackInfo& info) {
    return Guard(info, nullptr, [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      auto engine = Use();
      std::string text = StringArg(info[0], "text");
      const bool special = info[1].ToBoolean(), add_bos = info[2].ToBoolean();
      return PromiseWorker<std::vector<int32_t>>::Start(
          env, [engine, text = std::move(text), special, add_bos]() { return engine->Tokenize(text, special, add_bos); },
          [](Napi::Env e, std::vector<int32_t>& out) { return Napi::Value(ToTyped(e, out)); }, Value());
    });
  }

  Napi::Value Detokenize(const Napi::CallbackInfo& info) {
    return Guard(info, nullptr, [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      auto engine = Use();
      auto tokens = Int32Copy(info[0], "tokens");
      return Napi::String::New(env, engine->Detokenize(tokens, info[1].ToBoolean()));
    });
  }

  Napi::Value TokenPiece(const Napi::CallbackInfo& info) {
    return Guard(info, nullptr, [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      auto engine = Use();
      const int token = int(IntArg(info[0], "token", INT32_MIN, INT32_MAX));
      return Napi::String::New(env, engine->TokenPiece(token));
    });
  }

  Napi::Value HiddenStates(const Napi::CallbackInfo& info) {
    return Guard(info, nullptr, [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      auto engine = Use();
      auto tokens = Int32Copy(info[0], "tokens");
      auto layers32 = Int32Copy(info[1], "layers");
      std::vector<int> layers(layers32.begin(), layers32.end());
      return PromiseWorker<std::vector<std::vector<float>>>::Start(
          env,
          [engine, tokens = std::move(tokens), layers = std::move(layers)]() {
            std::lock_guard<std::mutex> lock(engine->mutex);
            return engine->HiddenStates(tokens, layers);
          },
          [](Napi::Env e, std::vector<std::vector<float>>& v) {
            Napi::Array out = Napi::Array::New(e, v.size());
            for (size_t i = 0; i < v.size(); ++i) out.Set(uint32_t(i), ToTyped(e, v[i]));
            return Napi::Value(out);
          },
          Value());
    });
  }

  // Several tasks' hidden states from shared decodes (hidden_batch_napi.cpp).
  Napi::Value HiddenStatesMany(const Napi::CallbackInfo& info) {
    return Guard(info, nullptr, [&]() -> Napi::Value { return HiddenStatesManyJs(info, Use(), Value()); });
  }

  Napi::Value Logits(const Napi::CallbackInfo& info) {
    return Guard(info, nullptr, [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      auto engine = Use();
      auto tokens = Int32Copy(info[0], "tokens");
      return PromiseWorker<std::vector<float>>::Start(
          env,
          [engine, tokens = std::move(tokens)]() {
            std::lock_guard<std::mutex> lock(engine->mutex);
            return engine->Logits(tokens);
          },
          [](Napi::Env e, std::vector<float>& v) { return ToTyped(e, v); }, Value());
    });
  }

  Napi::Value Score(const Napi::CallbackInfo& info) {
    return Guard(info, nullptr, [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      auto engine = Use();
      if (!info[0].IsArray()) Bad("requests must be an array");
      Napi::Array arr = info[0].As<Napi::Array>();
      std::vector<ScoreRequest> requests(arr.Length());
      for (uint32_t i = 0; i < arr.Length(); ++i) {
        Napi::Value item = arr.Get(i);
        if (!item.IsObject()) Bad("requests[" + std::to_string(i) + "] must be an object");
        requests[i].prefix = Int32Copy(item.As<Napi::Object>().Get("prefix"), "prefix");
        requests[i].continuation = Int32Copy(item.As<Napi::Object>().Get("continuation"), "continuation");
      }
      auto read_ids = Int32Copy(info[1], "readIds");
      return PromiseWorker<std::vector<ScoreResult>>::Start(
          env,
          [engine, requests = std::move(requests), read_ids = std::move(read_ids)]() {
            std::lock_guard<std::mutex> lock(engine->mutex);
            return engine->Score(requests, read_ids);
          },
          [](Napi::Env e, std::vector<ScoreResult>& results) {
            Napi::Array out = Napi::Array::New(e, results.size());
            for (size_t i = 0; i < results.size(); ++i) {
              Napi::Object o = Napi::Object::New(e);
              o.Set("logprobs", ToTyped(e, results[i].logprobs));
              o.Set("final", ToTyped(e, results[i].final));
              out.Set(uint32_t(i), o);
            }
            return Napi::Value(out);
          },
          Value());
    });
  }

  Napi::Value ClearCache(const Napi::CallbackInfo& info) {
    return Guard(info, nullptr, [&]() -> Napi::Value {
      auto engine = Use();
      std::lock_guard<std::mutex> lock(engine->mutex);
      engine->ClearCache();
      return info.Env().Undefined();
    });
  }

  Napi::Value CacheStatsJs(const Napi::CallbackInfo& info) {
    return Guard(info, nullptr, [&]() -> Napi::Value {
      Napi::Env env = info.Env();
      auto engine = Use();
      std::lock_guard<std::mutex> lock(engine->mutex);
      const CacheStats s = engine->Stats();
      Napi::Object o = Napi::Object::New(env);
      o.Set("entries", s.entries);
      o.Set("tokens", double(s.tokens));
      o.Set("hits", double(s.hits));
      o.Set("misses", double(s.misses));
      o.Set("batchDrops", double(s.batch_drops));
      return o;
    });
  }

  // A NativeGeneration over this engine (generate_napi.cpp): layer, sampler params.
  Napi::Value GenerationJs(const Napi::CallbackInfo& info) {
    return Guard(info, nullptr, [&]() -> Napi::Value { return NewGeneration(info, Use()); });
  }

  Napi::Value Abort(const Napi::CallbackInfo& info) {
    return Guard(info, nullptr, [&]() -> Napi::Value {
      if (engine_) engine_->abort_flag = true;
      return info.Env().Undefined();
    });
  }

  // Drops this wrapper's reference; a call still running keeps the engine alive until it finishes
  // (it is told to abort), and the last reference frees llama.cpp's model and context.
  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    return Guard(info, nullptr, [&]() -> Napi::Value {
      if (engine_) {
        engine_->abort_flag = true;
        engine_.reset();
      }
      return info.Env().Undefined();
    });
  }

  std::shared_ptr<Engine> engine_;
  bool loading_ = false;
  bool loaded_ = false;
};

}  // namespace

void RegisterModel(Napi::Env env, Napi::Object exports) {
  exports.Set("NativeModel", NativeModel::Define(env));
  RegisterGeneration(env, exports);
}

}  // namespace gavel
