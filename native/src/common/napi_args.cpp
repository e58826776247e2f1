#include "common/napi_args.h"

#include <cmath>

namespace gavel {

void Bad(const std::string& message) { throw ArgError{message}; }

void Disposed(const char* what) { throw Failure(Code::DISPOSED, std::string("this ") + what + " was disposed"); }

Napi::Error CurrentError(Napi::Env env, const std::string& prefix) {
  try {
    throw;
  } catch (const ArgError& e) {
    return MakeError(env, Code::INVALID_ARGUMENT, prefix + e.message);
  } catch (const Napi::Error& e) {
    return e;
  } catch (...) {
    std::string message;
    const Code code = CurrentFailure(message);
    return MakeError(env, code, prefix + message);
  }
}

Napi::Float32Array Float32Arg(const Napi::Value& v, const std::string& name) {
  return TypedArg<float>(v, name, napi_float32_array, "Float32Array");
}

Napi::Int32Array Int32Arg(const Napi::Value& v, const std::string& name) {
  return TypedArg<int32_t>(v, name, napi_int32_array, "Int32Array");
}

Napi::Uint8Array Uint8Arg(const Napi::Value& v, const std::string& name) {
  return TypedArg<uint8_t>(v, name, napi_uint8_array, "Uint8Array");
}

Napi::Uint16Array Uint16Arg(const Napi::Value& v, const std::string& name) {
  return TypedArg<uint16_t>(v, name, napi_uint16_array, "Uint16Array");
}

static std::string Bound(int64_t b) {
  if (b == std::numeric_limits<int32_t>::max()) return "2^31 - 1";
  if (b == std::numeric_limits<int32_t>::min()) return "-2^31";
  return std::to_string(b);
}

int64_t IntArg(const Napi::Value& v, const std::string& name, int64_t min, int64_t max) {
  if (v.IsUndefined()) Bad(name + " is required");
  if (!v.IsNumber()) Bad(name + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || std::floor(d) != d || d < double(min) || d > double(max))
    Bad(name + " must be an integer in [" + Bound(min) + ", " + Bound(max) + "], got " + std::to_string(d));
  return static_cast<int64_t>(d);
}

std::string StringArg(const Napi::Value& v, const std::string& name) {
  if (!v.IsString()) Bad(name + " must be a string");
  return v.As<Napi::String>();
}

int64_t RowsOf(int64_t len, const std::string& name, int64_t width, const char* widthName) {
  if (len % width != 0)
    Bad(name + ".length (" + std::to_string(len) + ") is not a multiple of " + widthName + " (" + std::to_string(width) +
        ")");
  return len / width;
}

bool BoolArg(const Napi::Value& v, const std::string& name) {
  if (v.IsUndefined()) Bad(name + " is required");
  if (!v.IsBoolean()) Bad(name + " must be a boolean");
  return v.As<Napi::Boolean>().Value();
}

double NumberField(const Napi::Object& o, const char* key, double dflt, double lo, double hi, bool integer) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return dflt;
  if (!v.IsNumber()) Bad(std::string(key) + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || d < lo || d > hi || (integer && std::floor(d) != d))
    Bad(std::string(key) + " must be " + (integer ? "an integer" : "a number") + " in [" + std::to_string(lo) + ", " +
        std::to_string(hi) + "], got " + std::to_string(d));
  return d;
}

void CheckArity(const Napi::CallbackInfo& info, size_t n) {
  if (info.Length() < n) Bad("expected " + std::to_string(n) + " arguments, got " + std::to_string(info.Length()));
}

void CheckTag(const Napi::CallbackInfo& info, const napi_type_tag* tag, const char* className) {
  Napi::Value self = info.This();
  if (!self.IsObject() || !self.As<Napi::Object>().CheckTypeTag(tag))
    Bad(std::string("called on an object that is not a ") + className);
}

int64_t FirstNonFinite(const float* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return i;
  return -1;
}

}  // namespace gavel
