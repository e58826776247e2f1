#include "common/errors.h"

namespace gavel {

static Napi::FunctionReference* g_error_class = nullptr;

void SetErrorClass(const Napi::Function& cls) {
  if (g_error_class == nullptr) g_error_class = new Napi::FunctionReference();
  *g_error_class = Napi::Persistent(cls);
}

Napi::Error MakeError(Napi::Env env, Code code, const std::string& message) {
  const char* name = CodeName(code);
  if (g_error_class != nullptr && !g_error_class->IsEmpty()) {
    Napi::Value err = g_error_class->New({Napi::String::New(env, message), Napi::String::New(env, name)});
    return Napi::Error(env, err);
  }
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, name));
  return e;
}

void Throw(Napi::Env env, Code code, const std::string& message) { throw MakeError(env, code, message); }

}  // namespace gavel
