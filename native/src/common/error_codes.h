// The one list of error codes the addon may throw: every native failure carries one of these (an
// enum, never a free string), and it reaches JS as GavelError.code. src/errors.ts lists the same
// names in GavelErrorCode; test/unit/error-codes.test.ts reads this table and checks both sides.
// Free of N-API, so CUDA sources can use it too.
#pragma once

namespace gavel {

// One X(NAME) per line: the test parses these lines.
#define GAVEL_ERROR_CODES(X)     \
  X(INVALID_ARGUMENT)            \
  X(DISPOSED)                    \
  X(ABORTED)                     \
  X(INTERNAL)                    \
  X(OUT_OF_MEMORY)               \
  X(MODEL_LOAD_FAILED)           \
  X(UNSUPPORTED_ARCHITECTURE)    \
  X(LAYER_OUT_OF_RANGE)          \
  X(TOKEN_OUT_OF_VOCABULARY)     \
  X(CONTEXT_OVERFLOW)            \
  X(DECODE_FAILED)               \
  X(HIDDEN_STATES_UNAVAILABLE)   \
  X(CUDA_UNAVAILABLE)            \
  X(CUDA_ERROR)

enum class Code {
#define GAVEL_CODE_ENUM(name) name,
  GAVEL_ERROR_CODES(GAVEL_CODE_ENUM)
#undef GAVEL_CODE_ENUM
};

// The code's name as JS sees it ("INVALID_ARGUMENT", ...).
constexpr const char* CodeName(Code c) {
  switch (c) {
#define GAVEL_CODE_NAME(name) \
  case Code::name:            \
    return #name;
    GAVEL_ERROR_CODES(GAVEL_CODE_NAME)
#undef GAVEL_CODE_NAME
  }
  return "INTERNAL";  // unreachable: the switch names every code
}

}  // namespace gavel
