// Typed errors across the boundary. JS hands its GavelError class to the addon once
// (setErrorClass); every native failure is then thrown as `new GavelError(message, code)`, so callers
// see the same class and codes whether TypeScript or C++ detected the problem.
#pragma once
#include <napi.h>
#include <string>

#include "common/failure.h"

namespace gavel {

void SetErrorClass(const Napi::Function& cls);
Napi::Error MakeError(Napi::Env env, const std::string& code, const std::string& message);
[[noreturn]] void Throw(Napi::Env env, const std::string& code, const std::string& message);

}  // namespace gavel
