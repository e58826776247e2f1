// N-API argument helpers shared by every part of the addon (kernels, bank, trainer, model): the
// argument error, Guard (the exception boundary of every entry point), readers of typed arrays and
// numbers, and the checks of a wrapped object's receiver. No JS input may crash the process, so
// every argument is read through these before any memory is touched.
#pragma once
#include <napi.h>

#include <cstdint>
#include <limits>
#include <string>

#include "common/errors.h"

namespace gavel {

// Thrown on the JS thread by the argument checks; Guard() turns it into an INVALID_ARGUMENT GavelError.
struct ArgError {
  std::string message;
};

[[noreturn]] void Bad(const std::string& message);
// DISPOSED: "this <what> was disposed".
[[noreturn]] void Disposed(const char* what);

// The exception being handled as a JS GavelError, its message prefixed by `prefix`: call only inside
// a catch block. ArgError is INVALID_ARGUMENT, a Napi::Error stays itself, the rest as CurrentFailure.
Napi::Error CurrentError(Napi::Env env, const std::string& prefix);

// Every entry point runs through Guard, which turns argument errors, Failures, Napi errors and std
// exceptions into pending JS GavelErrors itself (messages prefixed by "fn: " unless fn is null).
// node-addon-api would only catch Napi::Error, and only when built with NAPI_CPP_EXCEPTIONS; with
// Guard nothing can escape a callback as a C++ exception (which would terminate the process).
template <typename Fn>
Napi::Value Guard(const Napi::CallbackInfo& info, const char* fn, Fn body) {
  try {
    return body();
  } catch (...) {
    CurrentError(info.Env(), fn == nullptr ? std::string() : std::string(fn) + ": ").ThrowAsJavaScriptException();
  }
  return info.Env().Undefined();
}

// The same for a Promise-returning verb, which only rejects, never throws: whatever body throws
// becomes a rejected promise.
template <typename Fn>
Napi::Value GuardAsync(const Napi::CallbackInfo& info, const char* fn, Fn body) {
  try {
    return body();
  } catch (...) {
    Napi::Error e = CurrentError(info.Env(), fn == nullptr ? std::string() : std::string(fn) + ": ");
    auto d = Napi::Promise::Deferred::New(info.Env());
    d.Reject(e.Value());
    return d.Promise();
  }
}

// The typed array `v` of the given type, else ArgError "<name> must be a <typeName>".
template <typename T>
Napi::TypedArrayOf<T> TypedArg(const Napi::Value& v, const std::string& name, napi_typedarray_type type,
                               const char* typeName) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != type)
    Bad(name + " must be a " + typeName);
  return v.As<Napi::TypedArrayOf<T>>();
}

Napi::Float32Array Float32Arg(const Napi::Value& v, const std::string& name);
Napi::Int32Array Int32Arg(const Napi::Value& v, const std::string& name);
Napi::Uint8Array Uint8Arg(const Napi::Value& v, const std::string& name);
Napi::Uint16Array Uint16Arg(const Napi::Value& v, const std::string& name);

// An integer in [min, max] given as a JS number (undefined: "<name> is required").
int64_t IntArg(const Napi::Value& v, const std::string& name, int64_t min,
               int64_t max = std::numeric_limits<int32_t>::max());

// A string (else "<name> must be a string").
std::string StringArg(const Napi::Value& v, const std::string& name);

// Rows of a flat array of len values, width per row: len / width, else ArgError
// "<name>.length (len) is not a multiple of <widthName> (width)".
int64_t RowsOf(int64_t len, const std::string& name, int64_t width, const char* widthName);

// A boolean (undefined: "<name> is required").
bool BoolArg(const Napi::Value& v, const std::string& name);

// o[key]: a finite number in [lo, hi] (an integer if asked), or dflt when absent.
double NumberField(const Napi::Object& o, const char* key, double dflt, double lo, double hi, bool integer = false);

void CheckArity(const Napi::CallbackInfo& info, size_t n);

// The receiver carries `tag` (set by the class's constructor). Methods carry a V8 signature, but
// accessors do not: node-addon-api would unwrap another wrapped object as this class.
void CheckTag(const Napi::CallbackInfo& info, const napi_type_tag* tag, const char* className);

// First non-finite element of p[0, n), or -1.
int64_t FirstNonFinite(const float* p, int64_t n);

}  // namespace gavel
