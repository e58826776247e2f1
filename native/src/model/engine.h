// Engine: one llama.cpp model with one context, and the three things GAVEL asks of it.
//  - HiddenStates: the residual stream after block ℓ (graph tensor "l_out-ℓ") for every token.
//  - Score: log-probs of a continuation after a prefix, with each prefix's KV kept resident in a
//    sequence of the KV cache (LRU), so a later call with the same prefix decodes only the
//    continuation. The continuation is decoded into the prefix's own sequence and trimmed off after.
//  - Logits: a plain fresh decode, the reference path tests compare Score against.
// No N-API here: model_napi.cpp wraps it. All methods may throw gavel::Failure; callers hold `mutex`.
// engine.cpp: logs, backends, load, tokenizer, decode, hidden states, logits; engine_cache.cpp: the
// prefix cache and Score; engine_batch.cpp: hidden states of several tasks in one batch.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "llama.h"

namespace gavel {

class LogprobReducer;  // logprob_reducer.h

// No defaults here: Model.load (src/model/Model.ts) is their single source, and model_napi.cpp
// requires every field from JS (INVALID_ARGUMENT when one is missing).
struct LoadParams {
  int gpu_layers;       // -1: all
  int context_size;
  int threads;          // >= 1
  int batch_size;
  int sequences;
  int flash_attention;  // -1 auto, 0 off, 1 on
  bool kv_f16;          // f16 KV cache (half the memory) instead of f32
  // true: one pool of context_size cells shared by every sequence (attention runs over the whole
  // pool, other sequences masked out); false: each sequence its own stream of context_size cells, so
  // a continuation attends only over its own prefix's cells (llama_context_params.kv_unified).
  bool kv_unified;
  // Score's log-probs reduced in the model's graph (logprob_reducer.h) instead of on the host from
  // the full logits (float64 log-normaliser).
  bool logprobs_in_graph;
  // Sequences kept for batched hidden-states passes (0..sequences-2): the prefix cache holds at most
  // sequences - 1 - batch_sequences prefixes between calls, and HiddenStatesMany decodes only in the
  // scratch sequence and free ones, so a batched pass never drops a cached prefix. 0: no reservation
  // (a batched pass may drop cached prefixes to run wider).
  int batch_sequences;
};

struct ModelInfo {
  std::string architecture;
  std::string description;
  int n_layer = 0;
  int n_embd = 0;
  int n_vocab = 0;
  int context_length = 0;
  int context_size = 0;   // what one request may use (the pool, or one sequence's stream)
  int batch_size = 0;     // llama_n_batch
  int ubatch_size = 0;    // llama_n_ubatch: the physical batch
  bool kv_unified = true;
  bool logprobs_in_graph = false;  // LoadParams.logprobs_in_graph
  int batch_sequences = 0;         // LoadParams.batch_sequences
  bool has_chat_template = false;
  std::string chat_template;
  int32_t bos = -1;
  int32_t eos = -1;
  bool add_bos = false;
};

struct ScoreRequest {
  std::vector<int32_t> prefix;
  std::vector<int32_t> continuation;
};

struct ScoreResult {
  std::vector<float> logprobs;  // one per continuation token
  std::vector<float> final;     // one per read id, after the last token
};

struct CacheStats {
  int entries = 0;
  long long tokens = 0;
  long long hits = 0;
  long long misses = 0;
  long long batch_drops = 0;  // cached prefixes dropped to make room for batched hidden-states passes
};

class Engine {
 public:
  Engine();  // out of line: logprobs_ holds a type engine.h only declares
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  void Load(const std::string& path, const LoadParams& params);
  bool Loaded() const { return ctx_ != nullptr; }
  void Free();

  const ModelInfo& Info() const { return info_; }
  bool Meta(const std::string& key, std::string* out) const;
  std::vector<int32_t> Tokenize(const std::string& text, bool special, bool add_bos) const;
  std::string Detokenize(const std::vector<int32_t>& tokens, bool special) const;
  std::string TokenPiece(int32_t token) const;

  // The residual stream after each of `layers` (distinct), every token: one decode for all.
  std::vector<std::vector<float>> HiddenStates(const std::vector<int32_t>& tokens, const std::vector<int>& layers);
  // HiddenStates for several token sequences at once (engine_batch.cpp): tasks decoded as parallel
  // sequences of the same llama_decode calls; out[t][l] is what HiddenStates(tasks[t], layers)[l] is.
  std::vector<std::vector<std::vector<float>>> HiddenStatesMany(const std::vector<std::vector<int32_t>>& tasks,
                                                                const std::vector<int>& layers);
  std::vector<ScoreResult> Score(const std::vector<ScoreRequest>& requests, const std::vector<int32_t>& read_ids);
  std::vector<float> Logits(const std::vector<int32_t>& tokens);

  void ClearCache();
  CacheStats Stats() const;

  // Checked before each decode and by llama.cpp's abort callback during one.
  std::atomic<bool> abort_flag{false};
  // Serialises every call on this engine (the JS side queues too; this is the guard).
  std::mutex mutex;

  // Validation shared by every entry point: throws Failure with a typed code.
  void CheckTokens(const std::vector<int32_t>& tokens, const char* what) const;

 private:
  friend class Generation;  // generate.cpp: decodes into a sequence of its own with this capture
  struct Slot {
    std::vector<int32_t> stem;  // prefix without its last token: what the KV cache holds
    int seq = -1;
    std::list<int>::iterator lru;
    long long call = -1;  // the Score call that last used it (score_call_)
  };

  static bool EvalCallback(struct ggml_tensor* t, bool ask, void* user_data);
  static bool AbortCallback(void* data);

  void CheckAbort();
  // Decodes tokens into one sequence starting at pos0, in chunks of n_batch. Outputs are requested
  // for every token when all_outputs, else for the last one only.
  void DecodeSequence(const std::vector<int32_t>& tokens, int seq, int pos0, bool all_outputs,
                      std::vector<float>* logits_out);
  // One wave of Score: requests [w0, w1), each with a distinct stem.
  void ScoreWave(const std::vector<ScoreRequest>& requests, size_t w0, size_t w1, const std::vector<int32_t>& read_ids,
                 std::vector<ScoreResult>* results);
  // llama_decode with eviction of unpinned cached prefixes when the KV cache is full.
  void DecodeWithEviction(llama_batch& batch, const std::vector<int>& pinned);
  // The victim: the least recently used unpinned prefix, except that during a Score call, when every
  // unpinned one was used by this call, the one it acquired last (a call scanning more prefixes than
  // the cache holds keeps its first ones, instead of evicting each next one before it is read again).
  bool EvictOne(const std::vector<int>& pinned);
  // The cached sequence for stem, pinned for the current call. A new one (*cold = true) is registered
  // but still empty: the caller decodes the stem into it, or drops it with DropSlot on failure.
  int AcquireSlot(const std::vector<int32_t>& stem, bool* cold);
  void DropSlot(int seq);
  // With batch_sequences: the most prefixes the cache holds between calls; evicts (LRU) down to it.
  int CacheCap() const { return n_seq_ - 1 - batch_reserve_; }
  void TrimCache();
  void RemoveSeq(int seq);
  // engine_batch.cpp: the capture of `layers` set up for HiddenStates and HiddenStatesMany (true: the
  // last layer is asked for, so every row must be output; `verb` names the call in errors); the first `want` consecutive sequence ids a batch may
  // use (cached prefixes there dropped); one wave of HiddenStatesMany.
  bool SetCapture(const std::vector<int>& layers, const char* verb);
  std::vector<int> BatchSeqs(size_t want);
  void StatesWave(const std::vector<std::vector<int32_t>>& tasks, size_t t0, const std::vector<int>& seqs, bool last,
                  std::vector<std::vector<std::vector<float>>>* out);

  llama_model* model_ = nullptr;
  llama_context* ctx_ = nullptr;
  const llama_vocab* vocab_ = nullptr;
  ModelInfo info_;
  int n_batch_ = 512;
  unsigned threads_ = 1;  // CPU threads of the context, also used for the scorer's log-softmax
  int n_seq_ = 1;
  // Sequence 0 is the scratch sequence of HiddenStates and Logits; 1..n_seq_-1 hold cached prefixes
  // (a score decodes its continuation into its prefix's sequence and trims it off after).
  bool kv_unified_ = true;
  // With logprobsInGraph: the samplers of the sequences Score has used (logprob_reducer.h), and,
  // during a Score decode, where EvalCallback hands the logits.
  std::unique_ptr<LogprobReducer> logprobs_;
  LogprobReducer* reducer_ = nullptr;

  // capture of "l_out-<layer>" tensors: name → index into capture_rows_
  std::map<std::string, size_t> capture_index_;
  // Index (into capture_rows_) of the deepest captured layer when no logits are wanted: once it is
  // copied, EvalCallback ends the graph, so the blocks past it (and the output head) are never run.
  // -1 while logits are needed.
  long exit_after_ = -1;
  bool capture_active_ = false;
  std::vector<std::vector<float>> capture_rows_;
  std::string capture_error_;

  std::map<std::vector<int32_t>, Slot> slots_;
  std::list<int> lru_;  // seq ids, most recent at the front
  std::map<int, std::vector<int32_t>> seq_to_stem_;
  std::vector<int> free_seqs_;
  std::vector<int> pinned_;  // cached sequences the current call uses: never evicted during it
  long long cached_tokens_ = 0;
  long long hits_ = 0, misses_ = 0;
  long long score_call_ = 0;  // counts Score calls (Slot.call)
  bool scoring_ = false;      // inside Score: EvictOne spares what this call read first
  long long batch_drops_ = 0;
  int batch_reserve_ = 0;  // LoadParams.batch_sequences
};

// Installs llama.cpp's log sink (once) and loads ggml backends from lib_dir (if given).
std::vector<std::string> InitBackends(const char* lib_dir);
std::string LastLlamaErrors();

}  // namespace gavel
