// A Promise-returning AsyncWorker: Execute() runs `work` off the JS thread; a thrown Failure rejects
// the promise with a typed GavelError; `done` turns the result into a JS value on the JS thread.
#pragma once
#include <napi.h>
#include <functional>
#include <cstring>
#include <memory>
#include <vector>
#include "common/errors.h"

namespace gavel {

template <typename Result>
class PromiseWorker : public Napi::AsyncWorker {
 public:
  using Work = std::function<Result()>;
  using Done = std::function<Napi::Value(Napi::Env, Result&)>;

  static Napi::Promise Start(Napi::Env env, Work work, Done done, Napi::Object keepAlive = Napi::Object()) {
    auto* w = new PromiseWorker(env, std::move(work), std::move(done));
    if (!keepAlive.IsEmpty()) w->keep_ = Napi::Persistent(keepAlive);
    Napi::Promise p = w->deferred_.Promise();
    w->Queue();
    return p;
  }

 protected:
  void Execute() override {
    try {
      result_ = work_();
    } catch (const Failure& f) {
      code_ = f.code;
      SetError(f.what());
    } catch (const std::bad_alloc&) {
      code_ = "OUT_OF_MEMORY";
      SetError("out of memory");
    } catch (const std::exception& e) {
      code_ = "INTERNAL";
      SetError(e.what());
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    try {
      deferred_.Resolve(done_(env, result_));
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    }
  }
  void OnError(const Napi::Error& e) override {
    deferred_.Reject(MakeError(Env(), code_, e.Message()).Value());
  }

 private:
  PromiseWorker(Napi::Env env, Work work, Done done)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), work_(std::move(work)), done_(std::move(done)) {}
  Napi::Promise::Deferred deferred_;
  Work work_;
  Done done_;
  Result result_{};
  std::string code_;
  Napi::ObjectReference keep_;
};

// Copies of typed arrays taken on the JS thread, so worker threads never touch JS memory.
template <typename T, typename TA>
std::vector<T> CopyTyped(const TA& arr) {
  return std::vector<T>(arr.Data(), arr.Data() + arr.ElementLength());
}

template <typename T>
Napi::TypedArrayOf<T> ToTyped(Napi::Env env, const std::vector<T>& v) {
  auto out = Napi::TypedArrayOf<T>::New(env, v.size());
  if (!v.empty()) std::memcpy(out.Data(), v.data(), v.size() * sizeof(T));
  return out;
}

}  // namespace gavel
