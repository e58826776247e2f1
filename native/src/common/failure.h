// A failure detected off the JS thread (a worker, a CUDA stream), carried to the JS thread with its
// code. Free of N-API, so CUDA sources can throw it too.
#pragma once
#include <new>
#include <stdexcept>
#include <string>

#include "common/error_codes.h"

namespace gavel {

struct Failure : std::runtime_error {
  Code code;
  Failure(Code code_, const std::string& message) : std::runtime_error(message), code(code_) {}
};

}  // namespace gavel

namespace gavel {

// The code and message of the exception being handled: call only inside a catch block. A Failure
// keeps its code, bad_alloc is OUT_OF_MEMORY, anything else INTERNAL.
inline Code CurrentFailure(std::string& message) {
  try {
    throw;
  } catch (const Failure& f) {
    message = f.what();
    return f.code;
  } catch (const std::bad_alloc&) {
    message = "out of memory";
    return Code::OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    message = e.what();
    return Code::INTERNAL;
  } catch (...) {
    message = "unknown exception";
    return Code::INTERNAL;
  }
}

}  // namespace gavel
