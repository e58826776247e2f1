// Typed errors across the boundary. JS hands its GavelError class to the addon once
// (setErrorClass); every native failure is then thrown as `new GavelError(message, code)`, so callers
// see the same class and codes whether TypeScript or C++ detected the problem. Codes come only from
// common/error_codes.h.
//
// The JavaScript references the addon keeps live per environment (Napi::Env instance data), never in
// a process global: each worker thread that loads the addon is an environment of its own, and a
// reference made in one used on another's thread aborts the process (V8's "Entering the V8 API
// without proper locking").
#pragma once
#include <napi.h>
#include <string>

#include "common/error_codes.h"
#include "common/failure.h"

namespace gavel {

// One environment's references: its GavelError class and the NativeGeneration constructor.
struct EnvRefs {
  Napi::FunctionReference errorClass;
  Napi::FunctionReference generation;
};
// `env`'s references, made on first use (deleted with the environment).
EnvRefs& RefsOf(Napi::Env env);

void SetErrorClass(const Napi::Function& cls);
Napi::Error MakeError(Napi::Env env, Code code, const std::string& message);
[[noreturn]] void Throw(Napi::Env env, Code code, const std::string& message);

}  // namespace gavel
