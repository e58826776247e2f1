// Typed errors across the boundary. JS hands its GavelError class to the addon once
// (setErrorClass); every native failure is then thrown as `new GavelError(message, code)`, so callers
// see the same class and codes whether TypeScript or C++ detected the problem. Codes come only from
// common/error_codes.h.
#pragma once
#include <napi.h>
#include <string>

#include "common/error_codes.h"
#include "common/failure.h"

namespace gavel {

void SetErrorClass(const Napi::Function& cls);
Napi::Error MakeError(Napi::Env env, Code code, const std::string& message);
[[noreturn]] void Throw(Napi::Env env, Code code, const std::string& message);

}  // namespace gavel
