// NativeModel: the N-API face of Engine. Argument types are checked here (the TS facade checks them
// first, with friendlier messages); slow verbs run in PromiseWorkers holding the engine's mutex.
#include "model/model_napi.h"

#include <memory>

#include "common/errors.h"
#include "common/worker.h"
#include "model/engine.h"

namespace gavel {
namespace {

std::vector<int32_t> Int32Arg(const Napi::Env& env, const Napi::Value& v, const char* what) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) {
    Throw(env, "INVALID_ARGUMENT", std::string(what) + " must be an Int32Array");
  }
  return CopyTyped<int32_t>(v.As<Napi::Int32Array>());
}

int IntArg(const Napi::Env& env, const Napi::Value& v, const char* what, int lo, int hi) {
  if (!v.IsNumber()) Throw(env, "INVALID_ARGUMENT", std::string(what) + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= lo && d <= hi) || d != double(int64_t(d))) {
    Throw(env, "INVALID_ARGUMENT", std::string(what) + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return int(d);
}

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
                        InstanceMethod("score", &NativeModel::Score), InstanceMethod("logits", &NativeModel::Logits),
                        InstanceMethod("clearCache", &NativeModel::ClearCache),
                        InstanceMethod("cacheStats", &NativeModel::CacheStatsJs),
                        InstanceMethod("abort", &NativeModel::Abort), InstanceMethod("dispose", &NativeModel::Dispose)});
  }

  explicit NativeModel(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeModel>(info), engine_(std::make_shared<Engine>()) {}

 private:
  // The engine, checked usable: not disposed, and (unless for load) loaded and idle-safe.
  std::shared_ptr<Engine> Use(const Napi::Env& env, bool need_loaded = true) {
    if (!engine_) Throw(env, "DISPOSED", "this model was disposed");
    if (need_loaded && !loaded_) Throw(env, "INVALID_ARGUMENT", "the model is not loaded");
    return engine_;
  }

  Napi::Value Load(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto engine = Use(env, false);
    if (loading_ || loaded_) Throw(env, "INVALID_ARGUMENT", "load() was already called on this model");
    if (!info[0].IsString()) Throw(env, "INVALID_ARGUMENT", "path must be a string");
    if (!info[1].IsObject()) Throw(env, "INVALID_ARGUMENT", "params must be an object");
    const std::string path = info[0].As<Napi::String>();
    Napi::Object o = info[1].As<Napi::Object>();
    LoadParams p;
    p.gpu_layers = IntArg(env, o.Get("gpuLayers"), "gpuLayers", -1, 100000);
    p.context_size = IntArg(env, o.Get("contextSize"), "contextSize", 16, 1 << 22);
    p.threads = IntArg(env, o.Get("threads"), "threads", 0, 1024);
    p.batch_size = IntArg(env, o.Get("batchSize"), "batchSize", 1, 1 << 20);
    p.sequences = IntArg(env, o.Get("sequences"), "sequences", 2, 256);
    p.flash_attention = IntArg(env, o.Get("flashAttention"), "flashAttention", -1, 1);
    p.kv_f16 = o.Get("kvF16").ToBoolean();
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
  }

  Napi::Value Info(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const ModelInfo& m = Use(env)->Info();
    Napi::Object o = Napi::Object::New(env);
    o.Set("architecture", m.architecture);
    o.Set("description", m.description);
    o.Set("nLayer", m.n_layer);
    o.Set("nEmbd", m.n_embd);
    o.Set("nVocab", m.n_vocab);
    o.Set("contextLength", m.context_length);
    o.Set("contextSize", m.context_size);
    o.Set("chatTemplate", m.has_chat_template ? Napi::Value(Napi::String::New(env, m.chat_template)) : env.Null());
    o.Set("bos", m.bos >= 0 ? Napi::Value(Napi::Number::New(env, m.bos)) : env.Null());
    o.Set("eos", m.eos >= 0 ? Napi::Value(Napi::Number::New(env, m.eos)) : env.Null());
    o.Set("addBos", m.add_bos);
    return o;
  }

  Napi::Value Meta(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto engine = Use(env);
    if (!info[0].IsString()) Throw(env, "INVALID_ARGUMENT", "key must be a string");
    std::string out;
    if (!engine->Meta(info[0].As<Napi::String>(), &out)) return env.Null();
    return Napi::String::New(env, out);
  }

  Napi::Value Tokenize(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto engine = Use(env);
    if (!info[0].IsString()) Throw(env, "INVALID_ARGUMENT", "text must be a string");
    const std::string text = info[0].As<Napi::String>();
    try {
      return ToTyped(env, engine->Tokenize(text, info[1].ToBoolean(), info[2].ToBoolean()));
    } catch (const Failure& f) {
      Throw(env, f.code, f.what());
    }
  }

  // Tokenize off the JS thread. Without the engine's mutex: llama.cpp's tokenizers only read the
  // vocabulary, which nothing changes after load, so this runs beside a decode and beside other
  // tokenizations (as llama-server's HTTP threads do). The worker's reference keeps the engine alive
  // past a dispose.
  Napi::Value TokenizeAsync(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto engine = Use(env);
    if (!info[0].IsString()) Throw(env, "INVALID_ARGUMENT", "text must be a string");
    std::string text = info[0].As<Napi::String>();
    const bool special = info[1].ToBoolean(), add_bos = info[2].ToBoolean();
    return PromiseWorker<std::vector<int32_t>>::Start(
        env, [engine, text = std::move(text), special, add_bos]() { return engine->Tokenize(text, special, add_bos); },
        [](Napi::Env e, std::vector<int32_t>& out) { return Napi::Value(ToTyped(e, out)); }, Value());
  }

  Napi::Value Detokenize(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto engine = Use(env);
    auto tokens = Int32Arg(env, info[0], "tokens");
    try {
      return Napi::String::New(env, engine->Detokenize(tokens, info[1].ToBoolean()));
    } catch (const Failure& f) {
      Throw(env, f.code, f.what());
    }
  }

  Napi::Value TokenPiece(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto engine = Use(env);
    const int token = IntArg(env, info[0], "token", INT32_MIN, INT32_MAX);
    try {
      return Napi::String::New(env, engine->TokenPiece(token));
    } catch (const Failure& f) {
      Throw(env, f.code, f.what());
    }
  }

  Napi::Value HiddenStates(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto engine = Use(env);
    auto tokens = Int32Arg(env, info[0], "tokens");
    auto layers32 = Int32Arg(env, info[1], "layers");
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
  }

  Napi::Value Logits(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto engine = Use(env);
    auto tokens = Int32Arg(env, info[0], "tokens");
    return PromiseWorker<std::vector<float>>::Start(
        env,
        [engine, tokens = std::move(tokens)]() {
          std::lock_guard<std::mutex> lock(engine->mutex);
          return engine->Logits(tokens);
        },
        [](Napi::Env e, std::vector<float>& v) { return ToTyped(e, v); }, Value());
  }

  Napi::Value Score(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto engine = Use(env);
    if (!info[0].IsArray()) Throw(env, "INVALID_ARGUMENT", "requests must be an array");
    Napi::Array arr = info[0].As<Napi::Array>();
    std::vector<ScoreRequest> requests(arr.Length());
    for (uint32_t i = 0; i < arr.Length(); ++i) {
      Napi::Value item = arr.Get(i);
      if (!item.IsObject()) Throw(env, "INVALID_ARGUMENT", "requests[" + std::to_string(i) + "] must be an object");
      requests[i].prefix = Int32Arg(env, item.As<Napi::Object>().Get("prefix"), "prefix");
      requests[i].continuation = Int32Arg(env, item.As<Napi::Object>().Get("continuation"), "continuation");
    }
    auto read_ids = Int32Arg(env, info[1], "readIds");
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
  }

  Napi::Value ClearCache(const Napi::CallbackInfo& info) {
    auto engine = Use(info.Env());
    std::lock_guard<std::mutex> lock(engine->mutex);
    engine->ClearCache();
    return info.Env().Undefined();
  }

  Napi::Value CacheStatsJs(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto engine = Use(env);
    std::lock_guard<std::mutex> lock(engine->mutex);
    const CacheStats s = engine->Stats();
    Napi::Object o = Napi::Object::New(env);
    o.Set("entries", s.entries);
    o.Set("tokens", double(s.tokens));
    o.Set("hits", double(s.hits));
    o.Set("misses", double(s.misses));
    return o;
  }

  Napi::Value Abort(const Napi::CallbackInfo& info) {
    if (engine_) engine_->abort_flag = true;
    return info.Env().Undefined();
  }

  // Drops this wrapper's reference; a call still running keeps the engine alive until it finishes
  // (it is told to abort), and the last reference frees llama.cpp's model and context.
  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    if (engine_) {
      engine_->abort_flag = true;
      engine_.reset();
    }
    return info.Env().Undefined();
  }

  std::shared_ptr<Engine> engine_;
  bool loading_ = false;
  bool loaded_ = false;
};

}  // namespace

void RegisterModel(Napi::Env env, Napi::Object exports) { exports.Set("NativeModel", NativeModel::Define(env)); }

}  // namespace gavel
