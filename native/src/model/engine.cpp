#include "model/engine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "common/failure.h"
#include "common/settings.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "model/engine_detail.h"
#include "model/logprob_reducer.h"

namespace gavel {

using engine_detail::Batch;

// ---------------------------------------------------------------------------------------------
// llama.cpp's log: kept quiet (the GAVEL_LOG setting, common/settings.h, prints it), but its last
// warnings and errors are kept so that a failed load can say why.

static std::mutex g_log_mutex;
static std::deque<std::string> g_log_tail;
static std::string g_log_partial;

static void LogSink(ggml_log_level level, const char* text, void*) {
  if (settings::Current().logEcho.load(std::memory_order_relaxed)) std::fputs(text, stderr);
  if (level != GGML_LOG_LEVEL_ERROR && level != GGML_LOG_LEVEL_WARN && level != GGML_LOG_LEVEL_CONT) return;
  std::lock_guard<std::mutex> lock(g_log_mutex);
  g_log_partial += text;
  size_t nl;
  while ((nl = g_log_partial.find('\n')) != std::string::npos) {
    g_log_tail.push_back(g_log_partial.substr(0, nl));
    g_log_partial.erase(0, nl + 1);
    while (g_log_tail.size() > 32) g_log_tail.pop_front();
  }
}

static void ClearLog() {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  g_log_tail.clear();
  g_log_partial.clear();
}

std::string LastLlamaErrors() {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  std::string out;
  for (const auto& l : g_log_tail) {
    if (!out.empty()) out += "; ";
    out += l;
  }
  return out;
}

std::vector<std::string> InitBackends(const char* lib_dir) {
  static std::once_flag once;
  std::call_once(once, [&] {
    llama_log_set(LogSink, nullptr);
    if (lib_dir != nullptr && *lib_dir != '\0') ggml_backend_load_all_from_path(lib_dir);
    llama_backend_init();
  });
  std::vector<std::string> devices;
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    ggml_backend_dev_t dev = ggml_backend_dev_get(i);
    devices.push_back(std::string(ggml_backend_dev_name(dev)) + " (" + ggml_backend_dev_description(dev) + ")");
  }
  return devices;
}

// ---------------------------------------------------------------------------------------------


Engine::Engine() = default;
Engine::~Engine() { Free(); }

void Engine::Free() {
  logprobs_.reset();  // detaches its samplers: needs the context
  if (ctx_ != nullptr) llama_free(ctx_);
  if (model_ != nullptr) llama_model_free(model_);
  ctx_ = nullptr;
  model_ = nullptr;
  vocab_ = nullptr;
  slots_.clear();
  lru_.clear();
  seq_to_stem_.clear();
  free_seqs_.clear();
  cached_tokens_ = 0;
}

bool Engine::EvalCallback(struct ggml_tensor* t, bool ask, void* user_data) {
  auto* self = static_cast<Engine*>(user_data);
  if (self->reducer_ != nullptr && std::strcmp(t->name, "result_output") == 0) {
    // Score's logits, computed and still where they were computed: reduced there (logprob_reducer.h).
    if (!ask) self->reducer_->OnLogits(t);
    return true;
  }
  if (!self->capture_active_) return !ask;
  auto it = self->capture_index_.find(t->name);
  if (it == self->capture_index_.end()) return !ask;
  if (ask) return true;
  // The tensor is n_embd × n_tokens of the current ubatch (more dims would be a graph we don't know).
  if (t->type != GGML_TYPE_F32 || t->ne[0] != self->info_.n_embd || t->ne[2] != 1 || t->ne[3] != 1 ||
      t->nb[0] != sizeof(float)) {
    self->capture_error_ = std::string("tensor ") + t->name + " has an unexpected type or shape";
    return true;
  }
  std::vector<float>& out = self->capture_rows_[it->second];
  const size_t rows = size_t(t->ne[1]);
  const size_t cols = size_t(t->ne[0]);
  // No row: past the last block of a ubatch that outputs none (a generation's prefill before its last
  // batch), llama.cpp keeps zero rows; such a tensor may have no buffer to read from.
  if (rows == 0) return !(self->exit_after_ >= 0 && long(it->second) == self->exit_after_);
  const size_t old = out.size();
  out.resize(old + rows * cols);
  float* dst = out.data() + old;
  if (ggml_is_contiguous(t)) {
    ggml_backend_tensor_get(t, dst, 0, rows * cols * sizeof(float));
  } else {
    for (size_t r = 0; r < rows; ++r) ggml_backend_tensor_get(t, dst + r * cols, r * t->nb[1], cols * sizeof(float));
  }
  // Returning false from the data phase makes ggml's scheduler stop computing this graph: every layer
  // asked for is in hand (layers run in order) and nobody reads this ubatch's logits.
  return !(self->exit_after_ >= 0 && long(it->second) == self->exit_after_);
}

bool Engine::AbortCallback(void* data) { return static_cast<Engine*>(data)->abort_flag.load(); }

void Engine::CheckAbort() {
  if (abort_flag.load()) throw Failure(Code::ABORTED, "the operation was aborted");
}

void Engine::Load(const std::string& path, const LoadParams& p) {
  if (ctx_ != nullptr) throw Failure(Code::INVALID_ARGUMENT, "this model is already loaded");
  // Checked here too (model_napi and Model.load check first): llama.cpp aborts or silently clamps.
  if (p.sequences < 2 || p.sequences > 256) throw Failure(Code::INVALID_ARGUMENT, "sequences must be in 2..256");
  if (p.batch_sequences < 0 || p.batch_sequences > p.sequences - 2) {
    throw Failure(Code::INVALID_ARGUMENT, "batchSequences must be in 0..sequences - 2 (the prefix cache keeps at least one)");
  }
  if (p.batch_size < 1 || p.batch_size > p.context_size) {
    throw Failure(Code::INVALID_ARGUMENT, "batchSize (" + std::to_string(p.batch_size) + ") must be in 1..contextSize (" +
                                          std::to_string(p.context_size) + ")");
  }
  const int64_t cells = p.kv_unified ? int64_t(p.context_size) : int64_t(p.context_size) * p.sequences;
  if (cells > (int64_t(1) << 24)) {
    throw Failure(Code::INVALID_ARGUMENT, "the KV cache would hold " + std::to_string(cells) +
                                          " cells (contextSize × sequences with per-sequence streams); at most 16777216");
  }
  ClearLog();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = p.gpu_layers;
  model_ = llama_model_load_from_file(path.c_str(), mp);
  if (model_ == nullptr) {
    const std::string why = LastLlamaErrors();
    const bool arch = why.find("unknown model architecture") != std::string::npos;
    throw Failure(arch ? Code::UNSUPPORTED_ARCHITECTURE : Code::MODEL_LOAD_FAILED,
                  std::string(arch ? "llama.cpp does not support this model's architecture" : "llama.cpp could not load the model") +
                      " (" + path + "): " + (why.empty() ? "no details" : why));
  }
  vocab_ = llama_model_get_vocab(model_);

  llama_context_params cp = llama_context_default_params();
  // Per-sequence streams: llama.cpp gives each of n_seq_max streams n_ctx / n_seq_max cells.
  cp.n_ctx = uint32_t(cells);
  cp.n_batch = uint32_t(p.batch_size);
  cp.n_ubatch = uint32_t(p.batch_size);  // the physical batch follows batchSize
  cp.n_seq_max = uint32_t(p.sequences);
  // llama.cpp reserves room for at least one output per sequence at every decode and asserts (aborts
  // the process) when that exceeds n_outputs_max, which defaults to n_batch: a batch smaller than the
  // number of sequences needs the larger bound.
  if (p.batch_size < p.sequences) cp.n_outputs_max = uint32_t(p.sequences);
  // Every output row of a wave may belong to one sequence (one long continuation).
  if (p.logprobs_in_graph) cp.n_outputs_max_per_seq = 0;  // 0: n_outputs_max
  cp.n_threads = p.threads;
  cp.n_threads_batch = cp.n_threads;
  cp.kv_unified = p.kv_unified;
  cp.cb_eval = &Engine::EvalCallback;
  cp.cb_eval_user_data = this;
  cp.abort_callback = &Engine::AbortCallback;
  cp.abort_callback_data = this;
  cp.no_perf = true;
  // An f32 KV cache and no flash attention keep log-probs independent of how requests were batched
  // and cached (f16 rounding of K/V amplifies float32 reordering differences into ~1e-3 nats).
  cp.type_k = cp.type_v = p.kv_f16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
  cp.flash_attn_type = p.flash_attention < 0 ? LLAMA_FLASH_ATTN_TYPE_AUTO
                       : p.flash_attention == 0 ? LLAMA_FLASH_ATTN_TYPE_DISABLED : LLAMA_FLASH_ATTN_TYPE_ENABLED;
  ctx_ = llama_init_from_model(model_, cp);
  if (ctx_ == nullptr) {
    const std::string why = LastLlamaErrors();
    llama_model_free(model_);
    model_ = nullptr;
    throw Failure(Code::MODEL_LOAD_FAILED, "llama.cpp could not create a context: " + (why.empty() ? std::string("no details") : why));
  }
  n_batch_ = int(llama_n_batch(ctx_));
  threads_ = unsigned(std::max(1, int(cp.n_threads)));
  n_seq_ = int(llama_n_seq_max(ctx_));
  kv_unified_ = p.kv_unified;
  for (int s = n_seq_ - 1; s >= 1; --s) free_seqs_.push_back(s);
  batch_reserve_ = std::min(p.batch_sequences, n_seq_ - 2);

  char buf[512];
  info_ = ModelInfo{};
  if (llama_model_meta_val_str(model_, "general.architecture", buf, sizeof(buf)) >= 0) info_.architecture = buf;
  if (llama_model_desc(model_, buf, sizeof(buf)) >= 0) info_.description = buf;
  info_.n_layer = llama_model_n_layer(model_);
  info_.n_embd = llama_model_n_embd(model_);
  info_.n_vocab = llama_vocab_n_tokens(vocab_);
  info_.context_length = llama_model_n_ctx_train(model_);
  // What one request may use: the pool, or one sequence's stream.
  info_.context_size = int(p.kv_unified ? llama_n_ctx(ctx_) : llama_n_ctx_seq(ctx_));
  info_.batch_size = int(llama_n_batch(ctx_));
  info_.ubatch_size = int(llama_n_ubatch(ctx_));
  info_.kv_unified = p.kv_unified;
  info_.logprobs_in_graph = p.logprobs_in_graph;
  info_.batch_sequences = batch_reserve_;
  if (p.logprobs_in_graph) logprobs_ = std::make_unique<LogprobReducer>(ctx_, threads_);
  const char* tmpl = llama_model_chat_template(model_, nullptr);
  info_.has_chat_template = tmpl != nullptr;
  if (tmpl != nullptr) info_.chat_template = tmpl;
  info_.bos = llama_vocab_bos(vocab_);
  info_.eos = llama_vocab_eos(vocab_);
  info_.add_bos = llama_vocab_get_add_bos(vocab_);
}

bool Engine::Meta(const std::string& key, std::string* out) const {
  const int32_t n = llama_model_meta_val_str(model_, key.c_str(), nullptr, 0);
  if (n < 0) return false;
  std::vector<char> buf(size_t(n) + 1);
  llama_model_meta_val_str(model_, key.c_str(), buf.data(), buf.size());
  out->assign(buf.data(), size_t(n));
  return true;
}

void Engine::CheckTokens(const std::vector<int32_t>& tokens, const char* what) const {
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= info_.n_vocab) {
      throw Failure(Code::TOKEN_OUT_OF_VOCABULARY, std::string(what) + "[" + std::to_string(i) + "] = " +
                                                   std::to_string(tokens[i]) + " is not a token id (vocabulary size " +
                                                   std::to_string(info_.n_vocab) + ")");
    }
  }
}

std::vector<int32_t> Engine::Tokenize(const std::string& text, bool special, bool add_bos) const {
  if (text.size() > size_t(INT32_MAX / 2)) throw Failure(Code::INVALID_ARGUMENT, "text too long to tokenize");
  if (text.empty() && !add_bos) return {};
  int32_t n = llama_tokenize(vocab_, text.data(), int32_t(text.size()), nullptr, 0, add_bos, special);
  if (n >= 0 && text.empty()) n = -n;  // nothing but BOS
  std::vector<int32_t> out(size_t(n < 0 ? -n : n) + 1);
  n = llama_tokenize(vocab_, text.data(), int32_t(text.size()), out.data(), int32_t(out.size()), add_bos, special);
  if (n < 0) throw Failure(Code::INTERNAL, "llama_tokenize failed");
  out.resize(size_t(n));
  return out;
}

std::string Engine::Detokenize(const std::vector<int32_t>& tokens, bool special) const {
  CheckTokens(tokens, "tokens");
  if (tokens.empty()) return {};
  std::string out(tokens.size() * 8 + 16, '\0');
  int32_t n = llama_detokenize(vocab_, tokens.data(), int32_t(tokens.size()), out.data(), int32_t(out.size()), false, special);
  if (n < 0) {
    out.resize(size_t(-n));
    n = llama_detokenize(vocab_, tokens.data(), int32_t(tokens.size()), out.data(), int32_t(out.size()), false, special);
  }
  if (n < 0) throw Failure(Code::INTERNAL, "llama_detokenize failed");
  out.resize(size_t(n));
  return out;
}

std::string Engine::TokenPiece(int32_t token) const {
  CheckTokens({token}, "token");
  char buf[256];
  int32_t n = llama_token_to_piece(vocab_, token, buf, sizeof(buf), 0, true);
  if (n < 0) {
    std::vector<char> big(size_t(-n));
    n = llama_token_to_piece(vocab_, token, big.data(), int32_t(big.size()), 0, true);
    return n < 0 ? std::string() : std::string(big.data(), size_t(n));
  }
  return std::string(buf, size_t(n));
}

void Engine::DecodeSequence(const std::vector<int32_t>& tokens, int seq, int pos0, bool all_outputs,
                            std::vector<float>* logits_out) {
  Batch batch(n_batch_);
  const size_t n = tokens.size();
  for (size_t start = 0; start < n; start += size_t(n_batch_)) {
    const size_t cnt = std::min(size_t(n_batch_), n - start);
    batch.b.n_tokens = 0;
    for (size_t i = 0; i < cnt; ++i) {
      batch.Add(tokens[start + i], int32_t(pos0 + start + i), seq, all_outputs || start + i == n - 1);
    }
    DecodeWithEviction(batch.b, pinned_);
    if (logits_out != nullptr) {
      const int nv = info_.n_vocab;
      for (size_t i = 0; i < cnt; ++i) {
        const float* row = llama_get_logits_ith(ctx_, int32_t(i));
        if (row == nullptr) throw Failure(Code::INTERNAL, "no logits for an output position");
        logits_out->insert(logits_out->end(), row, row + nv);
      }
    }
  }
}

std::vector<std::vector<float>> Engine::HiddenStates(const std::vector<int32_t>& tokens, const std::vector<int>& layers) {
  if (tokens.empty()) throw Failure(Code::INVALID_ARGUMENT, "hiddenStates needs at least one token");
  const bool last = SetCapture(layers, "hiddenStates");
  CheckTokens(tokens, "tokens");
  if (tokens.size() > size_t(info_.context_size)) {
    throw Failure(Code::CONTEXT_OVERFLOW, std::to_string(tokens.size()) + " tokens exceed the context size " + std::to_string(info_.context_size));
  }
  abort_flag = false;
  capture_rows_.assign(layers.size(), {});
  capture_error_.clear();
  capture_active_ = true;
  pinned_.clear();
  try {
    RemoveSeq(0);
    DecodeSequence(tokens, 0, 0, last, nullptr);
  } catch (...) {
    capture_active_ = false;
    RemoveSeq(0);
    throw;
  }
  capture_active_ = false;
  RemoveSeq(0);
  if (!capture_error_.empty()) throw Failure(Code::HIDDEN_STATES_UNAVAILABLE, capture_error_);
  for (size_t i = 0; i < layers.size(); ++i) {
    if (capture_rows_[i].size() != tokens.size() * size_t(info_.n_embd)) {
      throw Failure(Code::HIDDEN_STATES_UNAVAILABLE, "the " + info_.architecture + " graph did not expose l_out-" + std::to_string(layers[i]) +
                                                     " for every token (got " + std::to_string(capture_rows_[i].size() / size_t(info_.n_embd)) +
                                                     " of " + std::to_string(tokens.size()) + " rows)");
    }
  }
  return std::move(capture_rows_);
}

std::vector<float> Engine::Logits(const std::vector<int32_t>& tokens) {
  if (tokens.empty()) throw Failure(Code::INVALID_ARGUMENT, "logits needs at least one token");
  CheckTokens(tokens, "tokens");
  if (tokens.size() > size_t(info_.context_size)) {
    throw Failure(Code::CONTEXT_OVERFLOW, std::to_string(tokens.size()) + " tokens exceed the context size " + std::to_string(info_.context_size));
  }
  abort_flag = false;
  pinned_.clear();
  std::vector<float> out;
  out.reserve(tokens.size() * size_t(info_.n_vocab));
  try {
    RemoveSeq(0);
    DecodeSequence(tokens, 0, 0, true, &out);
  } catch (...) {
    RemoveSeq(0);
    throw;
  }
  RemoveSeq(0);
  return out;
}

}  // namespace gavel
