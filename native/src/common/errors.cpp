#include "common/errors.h"

namespace gavel {

EnvRefs& RefsOf(Napi::Env env) {
  EnvRefs* r = env.GetInstanceData<EnvRefs>();
  if (r == nullptr) {
    r = new EnvRefs();
    env.SetInstanceData<EnvRefs>(r);
  }
  return *r;
}

void SetErrorClass(const Napi::Function& cls) { RefsOf(cls.Env()).errorClass = Napi::Persistent(cls); }

Napi::Error MakeError(Napi::Env env, Code code, const std::string& message) {
  const char* name = CodeName(code);
  EnvRefs* refs = env.GetInstanceData<EnvRefs>();
  if (refs != nullptr && !refs->errorClass.IsEmpty()) {
    Napi::Value err = refs->errorClass.New({Napi::String::New(env, message), Napi::String::New(env, name)});
    return Napi::Error(env, err);
  }
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, name));
  return e;
}

void Throw(Napi::Env env, Code code, const std::string& message) { throw MakeError(env, code, message); }

}  // namespace gavel
