"""A float64 numpy forward pass of gavel-mini, written from llama.cpp's llama graph (src/models/llama.cpp):
RMSNorm -> q,k,v -> normal RoPE (pairs 2i, 2i+1) -> causal GQA attention (query head h reads kv head
h // (n_head/n_head_kv)) -> output -> residual; RMSNorm -> SwiGLU -> residual; final RMSNorm; tied head.

selftest.py compares it with llama.cpp's logits (through the repo's Model) on a random tiny model, and
train.py's self-check compares it with the PyTorch module: together they pin the RoPE convention and the
weight layout end to end.
"""
from __future__ import annotations

import numpy as np


def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope_normal(x, pos, theta):
    """x: [T, H, D]; rotates consecutive pairs (x[2i], x[2i+1]) by pos * theta^(-2i/D)."""
    T, H, D = x.shape
    inv = theta ** (-np.arange(0, D, 2, dtype=np.float64) / D)          # [D/2]
    ang = pos[:, None].astype(np.float64) * inv[None, :]                 # [T, D/2]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out


def q8_roundtrip(x):
    """What ggml's CPU matmul does to the activations of a Q8_0 weight: rows quantised to Q8_0 blocks
    of 32 (d = amax/127 stored as f16, q = round(x/d))."""
    shp = x.shape
    b = x.reshape(-1, 32)
    d = np.abs(b).max(axis=1, keepdims=True) / 127.0
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
    q = np.round(b * inv)
    return (q * d.astype(np.float16).astype(np.float64)).reshape(shp)


def forward(weights: dict, hp: dict, tokens, return_states: bool = False, act_q8: bool = False):
    """Logits [T, n_vocab] (float64) for one sequence starting at position 0. act_q8 mimics llama.cpp's
    CPU path for Q8_0 weights (activations quantised to Q8_0 before each weight matmul)."""
    W = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    tokens = np.asarray(tokens, dtype=np.int64)
    T = len(tokens)
    H, Hkv, D, eps = hp["n_head"], hp["n_head_kv"], hp["head_dim"], hp["rms_eps"]
    g = H // Hkv
    pos = np.arange(T)
    x = W["token_embd.weight"][tokens]
    aq = q8_roundtrip if act_q8 else (lambda a: a)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    states = []
    for i in range(hp["n_layer"]):
        b = f"blk.{i}."
        h = rmsnorm(x, W[b + "attn_norm.weight"], eps)
        q = (aq(h) @ W[b + "attn_q.weight"].T).reshape(T, H, D)
        k = (aq(h) @ W[b + "attn_k.weight"].T).reshape(T, Hkv, D)
        v = (aq(h) @ W[b + "attn_v.weight"].T).reshape(T, Hkv, D)
        q, k = rope_normal(q, pos, hp["rope_theta"]), rope_normal(k, pos, hp["rope_theta"])
        o = np.empty((T, H, D))
        for hh in range(H):
            kv = hh // g
            s = q[:, hh, :] @ k[:, kv, :].T / np.sqrt(D) + mask
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            s /= s.sum(axis=-1, keepdims=True)
            o[:, hh, :] = s @ v[:, kv, :]
        x = x + aq(o.reshape(T, H * D)) @ W[b + "attn_output.weight"].T
        h = rmsnorm(x, W[b + "ffn_norm.weight"], eps)
        gate = aq(h) @ W[b + "ffn_gate.weight"].T
        up = aq(h) @ W[b + "ffn_up.weight"].T
        x = x + aq(gate / (1 + np.exp(-gate)) * up) @ W[b + "ffn_down.weight"].T
        states.append(x.copy())
    h = rmsnorm(x, W["output_norm.weight"], eps)
    logits = aq(h) @ W["token_embd.weight"].T
    return (logits, states) if return_states else logits


def random_weights(hp: dict, seed: int = 0, std: float = 0.05, gain: float = 1.0) -> dict:
    """Random float32 weights of the export layout (norm weights around 1, so a wrong norm shows)."""
    rng = np.random.default_rng(seed)
    E, F, V, D = hp["n_embd"], hp["n_ff"], hp["n_vocab"], hp["head_dim"]
    q, kv = hp["n_head"] * D, hp["n_head_kv"] * D
    r = lambda *s: (rng.standard_normal(s) * std * gain).astype(np.float32)  # noqa: E731
    n = lambda: (1 + 0.2 * rng.standard_normal(E)).astype(np.float32)  # noqa: E731
    w = {"token_embd.weight": (rng.standard_normal((V, E)) * 0.5).astype(np.float32)}
    for i in range(hp["n_layer"]):
        b = f"blk.{i}."
        w[b + "attn_norm.weight"] = n()
        # larger q/k so attention is far from uniform and a RoPE mistake changes the logits
        w[b + "attn_q.weight"] = r(q, E) * 6
        w[b + "attn_k.weight"] = r(kv, E) * 6
        w[b + "attn_v.weight"] = r(kv, E) * 4
        w[b + "attn_output.weight"] = r(E, q) * 4
        w[b + "ffn_norm.weight"] = n()
        w[b + "ffn_gate.weight"] = r(F, E) * 4
        w[b + "ffn_up.weight"] = r(F, E) * 4
        w[b + "ffn_down.weight"] = r(E, F) * 4
    w["output_norm.weight"] = n()
    return w
