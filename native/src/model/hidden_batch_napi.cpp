// The N-API face of Engine::HiddenStatesMany (engine_batch.cpp), a verb of NativeModel.
#include "model/hidden_batch_napi.h"

#include <string>
#include <vector>

#include "common/napi_args.h"
#include "common/worker.h"

namespace gavel {

Napi::Value HiddenStatesManyJs(const Napi::CallbackInfo& info, std::shared_ptr<Engine> engine, Napi::Object self) {
  if (!info[0].IsArray()) Bad("tasks must be an array of Int32Arrays");
  Napi::Array arr = info[0].As<Napi::Array>();
  std::vector<std::vector<int32_t>> tasks(arr.Length());
  for (uint32_t i = 0; i < arr.Length(); ++i) {
    tasks[i] = CopyTyped<int32_t>(Int32Arg(arr.Get(i), "tasks[" + std::to_string(i) + "]"));
  }
  auto layers32 = CopyTyped<int32_t>(Int32Arg(info[1], "layers"));
  std::vector<int> layers(layers32.begin(), layers32.end());
  using Result = std::vector<std::vector<std::vector<float>>>;
  return PromiseWorker<Result>::Start(
      info.Env(),
      [engine, tasks = std::move(tasks), layers = std::move(layers)]() {
        std::lock_guard<std::mutex> lock(engine->mutex);
        return engine->HiddenStatesMany(tasks, layers);
      },
      [](Napi::Env e, Result& v) {
        Napi::Array out = Napi::Array::New(e, v.size());
        for (size_t t = 0; t < v.size(); ++t) {
          Napi::Array per = Napi::Array::New(e, v[t].size());
          for (size_t l = 0; l < v[t].size(); ++l) per.Set(uint32_t(l), ToTyped(e, v[t][l]));
          out.Set(uint32_t(t), per);
        }
        return Napi::Value(out);
      },
      self);
}

}  // namespace gavel
