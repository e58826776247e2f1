"""Write a gavel-mini checkpoint (numpy float32 arrays) as a llama-architecture GGUF that llama.cpp
loads natively, with the SentencePiece vocabulary of llama.cpp's `models/ggml-vocab-llama-spm.gguf`.

No torch here: train.py hands over numpy arrays (or an .npz written with `save_npz`), so the export
path is testable on a machine without PyTorch (see selftest.py).

Weight layout (names as in the GGUF, numpy shapes = torch nn.Linear's [out, in]):
  token_embd.weight          [n_vocab, n_embd]   (tied: also the output head; no output.weight)
  output_norm.weight         [n_embd]
  blk.{i}.attn_norm.weight   [n_embd]
  blk.{i}.attn_q.weight      [n_head*head_dim, n_embd]
  blk.{i}.attn_k.weight      [n_head_kv*head_dim, n_embd]
  blk.{i}.attn_v.weight      [n_head_kv*head_dim, n_embd]
  blk.{i}.attn_output.weight [n_embd, n_head*head_dim]
  blk.{i}.ffn_norm.weight    [n_embd]
  blk.{i}.ffn_gate.weight    [n_ff, n_embd]
  blk.{i}.ffn_up.weight      [n_ff, n_embd]
  blk.{i}.ffn_down.weight    [n_embd, n_ff]

RoPE: the model is TRAINED with llama.cpp's "normal" rope (LLAMA_ROPE_TYPE_NORM: rotation of pairs of
consecutive head values (2i, 2i+1)), which is what arch `llama` applies. So q/k need no permutation
(convert_hf_to_gguf.py's LlamaModel.permute exists only to turn HF's rotate-half layout into this one).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _import_gguf():
    """gguf-py: the carried copy (.device/backbone/pack/gguf-py) or the bundled source (build/llama.cpp)."""
    for p in (os.environ.get("GGUF_PY"), HERE.parents[1] / ".device/backbone/pack/gguf-py",
              HERE.parents[1] / "build/llama.cpp/gguf-py"):
        if p and Path(p, "gguf", "__init__.py").exists():
            sys.path.insert(0, str(p))
            break
    import gguf  # noqa: E402
    return gguf


gguf = _import_gguf()

# A short ChatML-like template with plain-text role markers (the SPM vocabulary has no chat control
# tokens, so the markers are ordinary text). Roles: system, user, assistant (any role prints as <|role|>).
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|' + message['role'] + '|>\\n' + message['content'] + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|assistant|>\\n' }}{%- endif %}"
)

DEFAULT_VOCAB = None
for _p in (Path(os.environ.get("GAVEL_VOCAB") or "/nonexistent"),  # study-run.sh runs a copy of this file
           HERE.parents[1] / ".device/backbone/pack/ggml-vocab-llama-spm.gguf",
           HERE.parents[1] / "build/llama.cpp/models/ggml-vocab-llama-spm.gguf"):
    if _p.exists():
        DEFAULT_VOCAB = _p
        break


def read_vocab(path) -> dict:
    """The tokenizer.* keys of a vocab-only GGUF, typed."""
    r = gguf.GGUFReader(str(path))
    f = r.fields
    out = {
        "model": f["tokenizer.ggml.model"].contents(),
        "pre": f["tokenizer.ggml.pre"].contents() if "tokenizer.ggml.pre" in f else None,
        "tokens": f["tokenizer.ggml.tokens"].contents(),
        "scores": [float(x) for x in f["tokenizer.ggml.scores"].contents()],
        "types": [int(x) for x in f["tokenizer.ggml.token_type"].contents()],
    }
    for k in ("bos_token_id", "eos_token_id", "unknown_token_id", "padding_token_id"):
        key = "tokenizer.ggml." + k
        if key in f:
            out[k] = int(f[key].contents())
    for k in ("add_bos_token", "add_eos_token", "add_space_prefix"):
        key = "tokenizer.ggml." + k
        if key in f:
            out[k] = bool(f[key].contents())
    return out


def tensor_names(n_layer: int) -> list[str]:
    names = ["token_embd.weight"]
    for i in range(n_layer):
        for t in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"):
            names.append(f"blk.{i}.{t}.weight")
    names.append("output_norm.weight")
    return names


def check_shapes(weights: dict, hp: dict) -> None:
    E, V, F = hp["n_embd"], hp["n_vocab"], hp["n_ff"]
    hd = hp["head_dim"]
    q, kv = hp["n_head"] * hd, hp["n_head_kv"] * hd
    want = {"token_embd.weight": (V, E), "output_norm.weight": (E,)}
    for i in range(hp["n_layer"]):
        b = f"blk.{i}."
        want.update({
            b + "attn_norm.weight": (E,), b + "ffn_norm.weight": (E,),
            b + "attn_q.weight": (q, E), b + "attn_k.weight": (kv, E), b + "attn_v.weight": (kv, E),
            b + "attn_output.weight": (E, q),
            b + "ffn_gate.weight": (F, E), b + "ffn_up.weight": (F, E), b + "ffn_down.weight": (E, F),
        })
    missing = set(want) - set(weights)
    extra = set(weights) - set(want)
    if missing or extra:
        raise ValueError(f"weights: missing {sorted(missing)[:5]}, unexpected {sorted(extra)[:5]}")
    for k, s in want.items():
        if tuple(weights[k].shape) != s:
            raise ValueError(f"{k}: shape {weights[k].shape}, want {s}")


def write_gguf(path, weights: dict, hp: dict, vocab_path=None, qtype: str = "q8_0",
               name: str = "gavel-mini", extra_meta: dict | None = None) -> dict:
    """Writes the GGUF; returns {bytes, n_params, qtype}. Matrices go to `qtype` (q8_0, f16 or f32),
    1-D norm weights stay F32 as in converted models."""
    check_shapes(weights, hp)
    vocab = read_vocab(vocab_path or DEFAULT_VOCAB)
    if len(vocab["tokens"]) != hp["n_vocab"]:
        raise ValueError(f"vocab has {len(vocab['tokens'])} tokens, model {hp['n_vocab']}")
    Q = gguf.GGMLQuantizationType
    mat_type = {"q8_0": Q.Q8_0, "f16": Q.F16, "f32": Q.F32}[qtype]
    ftype = {"q8_0": gguf.LlamaFileType.MOSTLY_Q8_0, "f16": gguf.LlamaFileType.MOSTLY_F16,
             "f32": gguf.LlamaFileType.ALL_F32}[qtype]

    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    w = gguf.GGUFWriter(str(tmp), "llama")
    w.add_name(name)
    w.add_file_type(int(ftype))
    w.add_context_length(hp["n_ctx"])
    w.add_embedding_length(hp["n_embd"])
    w.add_block_count(hp["n_layer"])
    w.add_feed_forward_length(hp["n_ff"])
    w.add_head_count(hp["n_head"])
    w.add_head_count_kv(hp["n_head_kv"])
    w.add_key_length(hp["head_dim"])
    w.add_value_length(hp["head_dim"])
    w.add_rope_dimension_count(hp["head_dim"])
    w.add_rope_freq_base(float(hp["rope_theta"]))
    w.add_layer_norm_rms_eps(float(hp["rms_eps"]))
    w.add_vocab_size(hp["n_vocab"])
    # tokenizer, copied from the vocab GGUF
    w.add_tokenizer_model(vocab["model"])
    if vocab.get("pre"):
        w.add_tokenizer_pre(vocab["pre"])
    w.add_token_list(vocab["tokens"])
    w.add_token_scores(vocab["scores"])
    w.add_token_types(vocab["types"])
    w.add_bos_token_id(vocab["bos_token_id"])
    w.add_eos_token_id(vocab["eos_token_id"])
    w.add_unk_token_id(vocab["unknown_token_id"])
    if "padding_token_id" in vocab:
        w.add_pad_token_id(vocab["padding_token_id"])
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    if "add_space_prefix" in vocab:
        w.add_add_space_prefix(vocab["add_space_prefix"])
    w.add_chat_template(CHAT_TEMPLATE)
    for k, v in (extra_meta or {}).items():
        w.add_string(k, v if isinstance(v, str) else json.dumps(v))

    n_params = 0
    for tname in tensor_names(hp["n_layer"]):
        a = np.ascontiguousarray(weights[tname], dtype=np.float32)
        n_params += a.size
        if a.ndim == 1 or mat_type == Q.F32:
            w.add_tensor(tname, a)
        elif mat_type == Q.F16:
            w.add_tensor(tname, a.astype(np.float16))
        else:
            qa = gguf.quants.quantize(a, mat_type)
            w.add_tensor(tname, qa, raw_shape=qa.shape, raw_dtype=mat_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, path)
    return {"bytes": path.stat().st_size, "n_params": int(n_params), "qtype": qtype}


def dequantized(weights: dict, qtype: str) -> dict:
    """The weights as llama.cpp will see them after the export's rounding (for reference checks)."""
    Q = gguf.GGMLQuantizationType
    out = {}
    for k, a in weights.items():
        a = np.asarray(a, dtype=np.float32)
        if a.ndim == 1 or qtype == "f32":
            out[k] = a.copy()
        elif qtype == "f16":
            out[k] = a.astype(np.float16).astype(np.float32)
        else:
            out[k] = gguf.quants.dequantize(gguf.quants.quantize(a, Q.Q8_0), Q.Q8_0).reshape(a.shape)
    return out


def estimate_bytes(hp: dict, qtype: str = "q8_0") -> int:
    """Tensor bytes of the export (metadata excluded: about 0.75 MB for the 32K vocabulary)."""
    E, F, L, V, hd = hp["n_embd"], hp["n_ff"], hp["n_layer"], hp["n_vocab"], hp["head_dim"]
    q, kv = hp["n_head"] * hd, hp["n_head_kv"] * hd
    mats = V * E + L * (E * q * 2 + E * kv * 2 + 3 * E * F)
    per = {"q8_0": 34 / 32, "f16": 2, "f32": 4}[qtype]
    return int(mats * per + (2 * L + 1) * E * 4)


def save_npz(path, weights: dict, hp: dict) -> None:
    np.savez(path, __hparams__=np.frombuffer(json.dumps(hp).encode(), dtype=np.uint8), **weights)


def load_npz(path) -> tuple[dict, dict]:
    z = np.load(path)
    hp = json.loads(bytes(z["__hparams__"]).decode())
    return {k: z[k] for k in z.files if k != "__hparams__"}, hp


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="npz checkpoint -> llama GGUF")
    ap.add_argument("npz")
    ap.add_argument("out")
    ap.add_argument("--qtype", default="q8_0", choices=["q8_0", "f16", "f32"])
    ap.add_argument("--vocab", default=None)
    a = ap.parse_args()
    wts, hparams = load_npz(a.npz)
    print(json.dumps(write_gguf(a.out, wts, hparams, a.vocab, a.qtype)))
