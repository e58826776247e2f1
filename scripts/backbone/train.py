"""Train gavel-mini (a llama-architecture decoder) on the token streams of prepare.ts, for a time budget,
then evaluate and export it as a Q8_0 GGUF (export.py).

    python3 scripts/backbone/train.py --data .device/backbone/data --out $OUT --minutes 6
    python3 scripts/backbone/train.py --dry-run          # CPU, tiny model, a few steps (any torch >= 1.13)
    python3 scripts/backbone/train.py --size large --data $HOME/corpus --out $HOME/runs/large --minutes 13

Sizes (--size; any shape flag given overrides the preset):
    mini   n_embd 384, 10 layers, 6 heads / 2 KV heads, FFN 896: 26,550,144 parameters (gavel-mini), lr 2e-3
    large  n_embd 768, 14 layers, 12 heads / 4 KV heads, FFN 2,048: 112,678,656 parameters (4.24x), lr 1e-3
           (the learning rate scaled by 1/width from mini's; Q8_0 GGUF about 120.5 MB: cannot ship in the
           package's 30 MB)
Data (--data): train.bin, or train-*.bin concatenated in sorted order (pack-corpus.ts's segments), and the
held-out val.bin, val_chat.bin, val_verdict.bin + meta.json (prepare.ts), and when present val_skills.bin
and val_corpus.bin (pack-corpus.ts).
Long runs: --ckpt-every M writes OUT/ckpt.pt (weights, step, curve) every M minutes and OUT/progress.json at
every logged step; a file at --stop-file ends training at the next step (evaluation and export follow);
--deadline T (unix seconds) caps the training budget so that steps end by T; --export-only CKPT evaluates and
exports a checkpoint (the rescue path when a run was cut short).

The model is exactly what llama.cpp's `llama` graph computes (reference.py is the float64 twin):
RMSNorm (eps 1e-5), q/k/v, RoPE of llama.cpp's NORMAL kind (consecutive pairs (2i, 2i+1) rotated; so no
q/k permutation at export), causal GQA attention, SwiGLU FFN, final RMSNorm, output head tied to the
token embedding. AdamW (betas 0.9/0.95, weight decay on matrices only), bf16 autocast, linear warm-up then
cosine to min_lr. The step count is fixed after a short timing probe so that the run fits --minutes;
--steps N replays a run exactly (same data order: batches come from a seeded generator).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True


def log(*a):
    print(*a, flush=True)


# ---------------------------------------------------------------------------------------------------
class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * self.weight.float()).type_as(x)


def rope_tables(T, D, theta, device):
    inv = theta ** (-torch.arange(0, D, 2, dtype=torch.float64, device=device) / D)
    ang = torch.arange(T, dtype=torch.float64, device=device)[:, None] * inv[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()        # [T, D/2]


def apply_rope_normal(x, cos, sin):
    """x: [B, H, T, D]; llama.cpp's NORMAL rope: pairs (2i, 2i+1)."""
    xf = x.float()
    x0, x1 = xf[..., 0::2], xf[..., 1::2]
    c, s = cos[None, None], sin[None, None]
    out = torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1).flatten(-2)
    return out.type_as(x)


class Block(nn.Module):
    def __init__(self, hp):
        super().__init__()
        E, D = hp["n_embd"], hp["head_dim"]
        self.H, self.Hkv, self.D = hp["n_head"], hp["n_head_kv"], D
        self.attn_norm = RMSNorm(E, hp["rms_eps"])
        self.q = nn.Linear(E, self.H * D, bias=False)
        self.k = nn.Linear(E, self.Hkv * D, bias=False)
        self.v = nn.Linear(E, self.Hkv * D, bias=False)
        self.o = nn.Linear(self.H * D, E, bias=False)
        self.ffn_norm = RMSNorm(E, hp["rms_eps"])
        self.gate = nn.Linear(E, hp["n_ff"], bias=False)
        self.up = nn.Linear(E, hp["n_ff"], bias=False)
        self.down = nn.Linear(hp["n_ff"], E, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        h = self.attn_norm(x)
        q = self.q(h).view(B, T, self.H, self.D).transpose(1, 2)
        k = self.k(h).view(B, T, self.Hkv, self.D).transpose(1, 2)
        v = self.v(h).view(B, T, self.Hkv, self.D).transpose(1, 2)
        q, k = apply_rope_normal(q, cos, sin), apply_rope_normal(k, cos, sin)
        g = self.H // self.Hkv
        if g > 1:  # query head h reads kv head h // g, as ggml's broadcast does
            k = k.repeat_interleave(g, dim=1)
            v = v.repeat_interleave(g, dim=1)
        if hasattr(F, "scaled_dot_product_attention"):
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # torch < 2.0 (CPU dry runs)
            s = (q @ k.transpose(-1, -2)) / math.sqrt(self.D)
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
            a = s.softmax(-1) @ v
        x = x + self.o(a.transpose(1, 2).reshape(B, T, self.H * self.D))
        h = self.ffn_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class GavelMini(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.hp = hp
        self.embed = nn.Embedding(hp["n_vocab"], hp["n_embd"])
        self.blocks = nn.ModuleList(Block(hp) for _ in range(hp["n_layer"]))
        self.norm = RMSNorm(hp["n_embd"], hp["rms_eps"])
        self.register_buffer("cos", torch.zeros(1), persistent=False)
        self.register_buffer("sin", torch.zeros(1), persistent=False)
        std = hp["init_std"]
        for name, p in self.named_parameters():
            if p.dim() == 2:
                s = std / math.sqrt(2 * hp["n_layer"]) if name.endswith(("o.weight", "down.weight")) else std
                nn.init.normal_(p, 0.0, s)

    def set_rope(self, T, device):
        c, s = rope_tables(T, self.hp["head_dim"], self.hp["rope_theta"], device)
        self.cos, self.sin = c, s

    def forward(self, idx):
        T = idx.shape[1]
        x = self.embed(idx)
        cos, sin = self.cos[:T], self.sin[:T]
        for b in self.blocks:
            x = b(x, cos, sin)
        x = self.norm(x)
        return x @ self.embed.weight.t()  # tied head

    def export_weights(self) -> dict:
        """numpy float32 arrays under the GGUF tensor names (export.py's layout)."""
        g = lambda t: t.detach().float().cpu().numpy()  # noqa: E731
        w = {"token_embd.weight": g(self.embed.weight), "output_norm.weight": g(self.norm.weight)}
        for i, b in enumerate(self.blocks):
            p = f"blk.{i}."
            w.update({p + "attn_norm.weight": g(b.attn_norm.weight), p + "attn_q.weight": g(b.q.weight),
                      p + "attn_k.weight": g(b.k.weight), p + "attn_v.weight": g(b.v.weight),
                      p + "attn_output.weight": g(b.o.weight), p + "ffn_norm.weight": g(b.ffn_norm.weight),
                      p + "ffn_gate.weight": g(b.gate.weight), p + "ffn_up.weight": g(b.up.weight),
                      p + "ffn_down.weight": g(b.down.weight)})
        return w


# ---------------------------------------------------------------------------------------------------
def load_stream(path) -> np.ndarray:
    return np.fromfile(path, dtype=np.uint16)


def load_train(data: Path) -> tuple[np.ndarray, list]:
    """train.bin, or the segments train-*.bin concatenated in sorted order."""
    if (data / "train.bin").exists():
        return load_stream(data / "train.bin"), ["train.bin"]
    segs = sorted(p for p in data.glob("train-*.bin"))
    if not segs:
        raise SystemExit(f"no train.bin or train-*.bin under {data}")
    return np.concatenate([load_stream(p) for p in segs]), [p.name for p in segs]


SIZES = {
    "mini": dict(n_embd=384, n_layer=10, n_head=6, n_head_kv=2, n_ff=896, lr=2e-3, accum=1),
    "large": dict(n_embd=768, n_layer=14, n_head=12, n_head_kv=4, n_ff=2048, lr=1e-3, accum=2),
}


def lr_at(step, a):
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    p = min(1.0, (step - a.warmup) / max(1, a.total_steps - a.warmup))
    return a.lr * (a.min_lr_frac + (1 - a.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * p)))


@torch.no_grad()
def eval_stream(model, data: np.ndarray, seq: int, batch: int, device, amp) -> dict:
    """Mean next-token NLL over non-overlapping windows of `seq` tokens covering the stream."""
    model.eval()
    n = (len(data) - 1) // seq
    tot, cnt = 0.0, 0
    for i in range(0, n, batch):
        idx = [np.asarray(data[j * seq:(j + 1) * seq + 1], dtype=np.int64) for j in range(i, min(n, i + batch))]
        t = torch.from_numpy(np.stack(idx)).to(device)
        with amp():
            logits = model(t[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), t[:, 1:].reshape(-1), reduction="sum")
        tot += float(loss)
        cnt += t[:, 1:].numel()
    model.train()
    nll = tot / max(1, cnt)
    return {"tokens": cnt, "nll": nll, "ppl": math.exp(nll)}


@torch.no_grad()
def eval_verdict(model, data: np.ndarray, index, yes_ids, no_ids, device, amp) -> dict:
    """Held-out yes/no pairs: V = logsumexp(yes ids) - logsumexp(no ids) at the last prompt position,
    as the router reads it; accuracy of sign(V), and pairwise accuracy (V(match) > V(non-match))."""
    model.eval()
    Vs = []
    for off, ln, lab in index:
        t = torch.from_numpy(np.asarray(data[off:off + ln], dtype=np.int64))[None].to(device)
        with amp():
            lg = model(t)[0, -1].float().log_softmax(-1)
        V = float(torch.logsumexp(lg[yes_ids], 0) - torch.logsumexp(lg[no_ids], 0))
        Vs.append((V, lab))
    model.train()
    acc = sum((v > 0) == (lab == 1) for v, lab in Vs) / max(1, len(Vs))
    pairs = [(Vs[i][0], Vs[i + 1][0]) for i in range(0, len(Vs) - 1, 2) if Vs[i][1] == 1 and Vs[i + 1][1] == 0]
    pacc = sum(a > b for a, b in pairs) / max(1, len(pairs))
    return {"examples": len(Vs), "accuracy": acc, "pair_accuracy": pacc,
            "mean_V_yes": float(np.mean([v for v, l in Vs if l == 1])) if Vs else 0.0,
            "mean_V_no": float(np.mean([v for v, l in Vs if l == 0])) if Vs else 0.0}


def self_check(model, hp) -> float:
    """The PyTorch module vs reference.py's float64 forward (which matches llama.cpp: selftest.py):
    max relative logit difference on a short sequence, float32, CPU."""
    import reference
    m = GavelMini(hp)
    m.load_state_dict({k: v.detach().float().cpu() for k, v in model.state_dict().items()})
    m = m.float().cpu().eval()
    m.set_rope(32, "cpu")
    toks = np.random.default_rng(0).integers(3, hp["n_vocab"], size=32)
    with torch.no_grad():
        got = m(torch.from_numpy(toks)[None])[0].double().numpy()
    ref = reference.forward(m.export_weights(), hp, toks)
    return float(np.abs(got - ref).max() / np.abs(ref).max())


# ---------------------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(HERE.parents[1] / ".device/backbone/pack/data"))
    ap.add_argument("--out", default=os.environ.get("OUT", str(HERE.parents[1] / ".device/backbone/out")))
    ap.add_argument("--minutes", type=float, default=6.0, help="training time budget (probe included)")
    ap.add_argument("--steps", type=int, default=0, help="fixed step count (replay); 0 = from the budget")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--size", default="mini", choices=sorted(SIZES), help="shape and learning-rate preset")
    ap.add_argument("--n-embd", type=int, default=None)
    ap.add_argument("--n-layer", type=int, default=None)
    ap.add_argument("--n-head", type=int, default=None)
    ap.add_argument("--n-head-kv", type=int, default=None)
    ap.add_argument("--n-ff", type=int, default=None)
    ap.add_argument("--n-ctx", type=int, default=2048, help="context length written to the GGUF")
    ap.add_argument("--seq", type=int, default=2048, help="training sequence length")
    ap.add_argument("--batch", type=int, default=32, help="sequences per step")
    ap.add_argument("--accum", type=int, default=None, help="micro-batches per step (memory; the step is the same)")
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--min-lr-frac", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=150)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--init-std", type=float, default=0.02)
    ap.add_argument("--probe", type=int, default=30, help="steps timed to fix the step count")
    ap.add_argument("--compile", type=int, default=1)
    ap.add_argument("--qtype", default="q8_0", choices=["q8_0", "f16", "f32"])
    ap.add_argument("--name", default="gavel-mini")
    ap.add_argument("--eval-tokens", type=int, default=0, help="cap on tokens per evaluated stream (0 = all)")
    ap.add_argument("--eval-verdicts", type=int, default=0, help="cap on held-out verdict prompts (0 = all)")
    ap.add_argument("--ckpt-every", type=float, default=0, help="minutes between checkpoints (0 = none)")
    ap.add_argument("--stop-file", default="", help="training ends at the next step once this file exists")
    ap.add_argument("--deadline", type=float, default=0, help="unix time by which training steps must end")
    ap.add_argument("--export-only", default="", help="a ckpt.pt to evaluate and export, no training")
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny model, few steps: tests the script")
    a = ap.parse_args()
    for k, v in SIZES[a.size].items():
        if getattr(a, k) is None:
            setattr(a, k, v)

    if a.batch % a.accum:
        raise SystemExit(f"--batch {a.batch} is not a multiple of --accum {a.accum}")
    if a.dry_run:
        a.n_embd, a.n_layer, a.n_head, a.n_head_kv, a.n_ff = 64, 2, 4, 2, 128
        a.seq, a.batch, a.warmup, a.compile, a.probe = 128, 4, 3, 0, 0
        a.steps = a.steps or 12
        a.eval_tokens, a.eval_verdicts = 4096, 40

    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    dev = torch.device("cuda" if torch.cuda.is_available() and not a.dry_run else "cpu")
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    data = Path(a.data)
    meta = json.loads((data / "meta.json").read_text())
    train, train_files = load_train(data)
    val = load_stream(data / "val.bin")
    val_chat = load_stream(data / "val_chat.bin")
    vv = load_stream(data / "val_verdict.bin")
    hp = dict(n_vocab=32000, n_embd=a.n_embd, n_layer=a.n_layer, n_head=a.n_head, n_head_kv=a.n_head_kv,
              head_dim=a.n_embd // a.n_head, n_ff=a.n_ff, n_ctx=a.n_ctx, rope_theta=10000.0, rms_eps=1e-5,
              init_std=a.init_std)
    extra_val = {k: load_stream(data / f) for k, f in (("val_skills", "val_skills.bin"), ("val_corpus", "val_corpus.bin"))
                 if (data / f).exists()}
    import export
    est = export.estimate_bytes(hp, a.qtype)
    log(f"device {dev} ({torch.cuda.get_device_name(0) if dev.type == 'cuda' else 'cpu'}), torch {torch.__version__}")
    log(f"size {a.size}: hparams {json.dumps(hp)}; lr {a.lr}; estimated {a.qtype} tensor bytes {est / 1e6:.1f} MB")
    log(f"data: train {len(train):,} tokens ({', '.join(train_files)}), val {len(val):,}, val_chat {len(val_chat):,}, "
        + "".join(f"{k} {len(v):,}, " for k, v in extra_val.items())
        + f"val_verdict {len(meta['val_verdict']['index'])} prompts")

    model = GavelMini(hp).to(dev)
    model.set_rope(max(a.seq, a.n_ctx), dev)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"parameters {n_params:,}")
    use_bf16 = dev.type == "cuda"
    amp = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if use_bf16 else (lambda: torch.autocast("cpu", enabled=False))
    tokens_per_step = a.batch * a.seq

    def progress(status, **kw):
        """OUT/progress.json: where the run is (for `study-run.sh wait`), rewritten atomically."""
        p = {"name": a.name, "size": a.size, "status": status, "time": time.time(), **kw}
        tmp = out / "progress.json.tmp"
        tmp.write_text(json.dumps(p))
        os.replace(tmp, out / "progress.json")

    def save_ckpt(step, curve, total_steps, seconds):
        tmp = out / "ckpt.pt.tmp"
        torch.save({"model": {k: v.detach().float().cpu() for k, v in model.state_dict().items()}, "hp": hp,
                    "step": step, "total_steps": total_steps, "curve": curve, "seconds": seconds,
                    "args": vars(a).copy()}, tmp)
        os.replace(tmp, out / "ckpt.pt")

    if a.export_only:
        ck = torch.load(a.export_only, map_location="cpu")
        if ck["hp"] != hp:
            raise SystemExit(f"checkpoint hparams {ck['hp']} differ from {hp}: pass the run's --size / shape flags")
        model.load_state_dict(ck["model"])
        step, curve, train_seconds = ck["step"], ck["curve"], ck.get("seconds", 0.0)
        a.export_only_from = {"checkpoint": str(a.export_only), "step": step}
        a.total_steps = ck["total_steps"]
        log(f"export-only: {a.export_only} at step {step} of {a.total_steps}")
    else:
        step, curve, train_seconds = train_loop(a, model, train, dev, amp, tokens_per_step, progress, save_ckpt)

    progress("evaluating", step=step, total_steps=a.total_steps, curve=curve[-5:])
    ev_seq = min(a.seq, 1024)
    cap = (lambda s: s[: a.eval_tokens + 1]) if a.eval_tokens > 0 else (lambda s: s)  # noqa: E731
    vindex = meta["val_verdict"]["index"][: a.eval_verdicts] if a.eval_verdicts > 0 else meta["val_verdict"]["index"]
    ev = {
        "val_plain": eval_stream(model, cap(val), ev_seq, 16, dev, amp),
        "val_chat": eval_stream(model, cap(val_chat), ev_seq, 16, dev, amp),
        **{k: eval_stream(model, cap(v), ev_seq, 16, dev, amp) for k, v in extra_val.items()},
        "train_sample": eval_stream(model, cap(train[: len(val) + 1]), ev_seq, 16, dev, amp),
        "verdict": eval_verdict(model, vv, vindex, meta["vocab"]["yes_ids"], meta["vocab"]["no_ids"], dev, amp),
    }
    log(f"held-out perplexity (plain skill documents, windows of {ev_seq}): {ev['val_plain']['ppl']:.3f} "
        f"(nll {ev['val_plain']['nll']:.4f} over {ev['val_plain']['tokens']:,} tokens)")
    log(f"held-out perplexity (chat renders): {ev['val_chat']['ppl']:.3f}; train-sample perplexity {ev['train_sample']['ppl']:.3f}")
    for k in extra_val:
        log(f"held-out perplexity ({k}): {ev[k]['ppl']:.3f} (nll {ev[k]['nll']:.4f} over {ev[k]['tokens']:,} tokens)")
    log(f"held-out verdict: {json.dumps(ev['verdict'])}")
    rel = self_check(model, hp)
    log(f"self-check: PyTorch module vs float64 reference (llama.cpp's graph): max rel logit diff {rel:.2e}")

    progress("exporting", step=step, total_steps=a.total_steps)
    w = model.export_weights()
    gguf_path = out / f"{a.name}.gguf"
    info = export.write_gguf(gguf_path, w, hp, qtype=a.qtype, name=a.name,
                             extra_meta={"gavel.backbone.recipe": "scripts/backbone (prepare.ts, pack-corpus.ts, train.py, export.py)"})
    log(f"wrote {gguf_path} ({info['bytes'] / 1e6:.2f} MB, {info['n_params']:,} parameters, {a.qtype})")
    result = {
        "name": a.name, "size": a.size, "hparams": hp,
        "args": {k: v for k, v in vars(a).items() if k not in ("data", "out")},
        "n_params": n_params, "gguf": info, "steps": step, "total_steps": a.total_steps,
        "tokens_per_step": tokens_per_step, "tokens_seen": step * tokens_per_step, "train_tokens": int(len(train)),
        "train_files": train_files, "epochs": step * tokens_per_step / len(train), "train_seconds": train_seconds,
        "device": torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu", "torch": torch.__version__,
        "eval": ev, "self_check_rel": rel, "curve": curve,
        "data": {k: meta[k] for k in ("skills", "train", "val", "options", "corpus") if k in meta},
    }
    (out / "metrics.json").write_text(json.dumps(result, indent=1))
    progress("done", step=step, total_steps=a.total_steps, eval={k: v.get("ppl", v.get("accuracy")) for k, v in ev.items()})
    log("metrics written")


def train_loop(a, model, train, dev, amp, tokens_per_step, progress, save_ckpt):
    """The time-budgeted training loop; returns (steps, curve, seconds)."""
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt_kw = dict(lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    if dev.type == "cuda":
        opt_kw["fused"] = True
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd}, {"params": no_decay, "weight_decay": 0.0}], **opt_kw)

    step_fn = model
    if a.compile and hasattr(torch, "compile"):
        try:
            step_fn = torch.compile(model)
        except Exception as e:  # noqa: BLE001
            log(f"torch.compile unavailable ({e}); eager")
            step_fn = model

    step_fn_box = [step_fn]
    gen = torch.Generator().manual_seed(a.seed)
    hi = len(train) - a.seq - 1
    train_t = torch.from_numpy(train.astype(np.int64))
    if dev.type == "cuda":
        train_t = train_t.to(dev)

    def batch():
        offs = torch.randint(0, hi, (a.batch,), generator=gen)
        if dev.type == "cuda":
            offs = offs.to(dev)
        ix = offs[:, None] + torch.arange(a.seq + 1, device=offs.device)[None]
        t = train_t[ix]
        return t[:, :-1], t[:, 1:]

    def train_step(step):
        fn = step_fn_box[0]
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a)
        x, y = batch()
        opt.zero_grad(set_to_none=True)
        m = a.batch // a.accum  # micro-batches: the same step (same sequences, mean loss), less memory
        if m > int(os.environ.get("TRAIN_FAKE_OOM_ABOVE", "1000000")):  # tests the retry off the GPU
            raise RuntimeError(f"CUDA out of memory (simulated: micro-batch {m} > TRAIN_FAKE_OOM_ABOVE)")
        total = None
        for i in range(a.accum):
            with amp():
                logits = fn(x[i * m:(i + 1) * m])
                loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), y[i * m:(i + 1) * m].reshape(-1))
            if a.accum > 1:
                loss = loss / a.accum
            loss.backward()
            total = loss.detach() if total is None else total + loss.detach()
        del logits, loss
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        opt.step()
        return total, gn

    def out_of_memory(e) -> bool:
        return isinstance(e, getattr(torch.cuda, "OutOfMemoryError", ())) or "out of memory" in str(e)

    t0 = time.time()
    budget = a.minutes * 60
    if a.deadline > 0:
        left = a.deadline - t0
        if left < budget:
            log(f"deadline: {left:.0f} s left of the {budget:.0f} s budget; training for {max(0.0, left):.0f} s")
            budget = max(0.0, left)
    a.budget_seconds = budget
    a.total_steps = a.steps if a.steps > 0 else 10 ** 9
    curve = []
    step = 0
    probe_t = None
    last_ckpt = t0
    stopped = ""
    progress("training", step=0, total_steps=None, curve=[])
    while step < a.total_steps:
        if a.stop_file and os.path.exists(a.stop_file):
            stopped = f"stop file {a.stop_file}"
            log(f"stopping at step {step} of {a.total_steps}: {stopped}")
            break
        if a.steps == 0 and step == 3:
            if dev.type == "cuda":
                torch.cuda.synchronize()
            probe_t = time.time()  # compile and warm-up done by now
        gstate = gen.get_state()  # a failed first step is redone on the same sequences
        for attempt in range(4):
            try:
                loss, gn = train_step(step)
                break
            except Exception as e:  # noqa: BLE001
                gen.set_state(gstate)
                opt.zero_grad(set_to_none=True)
                if out_of_memory(e) and step < 3 and a.batch % (2 * a.accum) == 0 and attempt < 3:
                    if dev.type == "cuda":
                        torch.cuda.empty_cache()
                    a.accum *= 2
                    log(f"out of memory at step {step}: {a.accum} micro-batches of {a.batch // a.accum} sequences from now on")
                    continue
                if step_fn_box[0] is model:  # torch.compile fails lazily, at the first call
                    raise
                log(f"compiled step failed ({type(e).__name__}: {str(e)[:300]}); falling back to eager")
                step_fn_box[0] = model
        step += 1
        if a.steps == 0 and step == 3 + a.probe:
            if dev.type == "cuda":
                torch.cuda.synchronize()
            per = (time.time() - probe_t) / max(1, a.probe)
            left = budget - (time.time() - t0)
            a.total_steps = step + max(0, int(left / per))
            a.probe_ms_per_step = per * 1000
            log(f"probe: {per * 1000:.1f} ms/step, {tokens_per_step / per / 1e3:.0f}K tok/s -> total_steps {a.total_steps} "
                f"({a.total_steps * tokens_per_step / 1e6:.0f}M tokens, {a.total_steps * tokens_per_step / len(train):.2f} epochs)")
        if step % 50 == 0 or step == a.total_steps or a.dry_run:
            l, g = float(loss), float(gn)
            el = time.time() - t0
            curve.append({"step": step, "loss": l, "grad_norm": g, "lr": lr_at(step - 1, a), "seconds": round(el, 1)})
            log(f"step {step}/{a.total_steps if a.total_steps < 10 ** 9 else '?'} loss {l:.4f} gnorm {g:.3f} lr {lr_at(step - 1, a):.2e} {el:.0f}s")
            progress("training", step=step, total_steps=a.total_steps if a.total_steps < 10 ** 9 else None,
                     seconds=round(el, 1), curve=curve)
            if not math.isfinite(l):
                raise SystemExit("loss is not finite")
        if a.ckpt_every > 0 and time.time() - last_ckpt >= a.ckpt_every * 60:
            save_ckpt(step, curve, a.total_steps, time.time() - t0)
            last_ckpt = time.time()
    train_seconds = time.time() - t0
    a.stopped = stopped
    log(f"trained {step} steps, {step * tokens_per_step / 1e6:.1f}M tokens in {train_seconds:.0f} s")
    if a.ckpt_every > 0:
        save_ckpt(step, curve, a.total_steps, train_seconds)
    return step, curve, train_seconds


if __name__ == "__main__":
    main()
