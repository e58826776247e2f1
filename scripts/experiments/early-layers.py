"""Does training gavel-mini's first blocks, not only the glance's two linear maps, teach the glance
task text? (issue 34: the glance's R@20 target; docs/EXPERIMENTS.md says the measurements point at the
backbone.)

Reads the token data of early-layers-data.ts (DATA), gavel-mini's GGUF and the shipped projections,
and runs on one GPU:
  arm `shipped`: the shipped maps over the frozen backbone (a check of this script's glance against
                 the router's figures for keys from the 512-token render);
  arm `maps`:    W_q and W_s trained on the public statements (BM25's posterior over its five best as
                 soft labels, the batch's other candidates as negatives), the backbone frozen;
  arm `blocks`:  the same, with blocks 0 and 1 (the layers under ℓ1) trained too;
  arm `cover@E`: the shipped maps, each skill's keys thinned to the install's ε-cover at ε = E.
Each arm's glance is the router's vote (Eq. 3: idf rows, each row voting for its k = max(10, 1% of N)
best skills by max-sim), over every keyed token of every skill (no ε-cover but in `cover@E`), on SWE-Skills-Bench
validation (batches 1-5) and test (6-10), over all the skills of DATA.

  python3 scripts/experiments/early-layers.py --data DATA --model models/gavel-mini.gguf \
      --projections models/gavel-mini.projections.gguf [--steps 600] [--arms shipped,maps,blocks,cover@0.83] [--out DIR]
      [--lr-maps 1e-3] [--lr-blocks 1e-4] [--min-b=-3.5] [--limit N]
Commands and results: bench/results/2026-12-02-h200-early-layers/.
"""
from __future__ import annotations

import argparse
import json
import struct
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "backbone"))
sys.dont_write_bytecode = True
from train import GavelMini  # noqa: E402


def log(*a):
    print(*a, flush=True)


# ---------------------------------------------------------------------------------------------------
# GGUF (the subset gavel-mini and its projections use: F32, F16, Q8_0)
def read_gguf(path):
    b = Path(path).read_bytes()
    off = 0

    def take(fmt):
        nonlocal off
        v = struct.unpack_from("<" + fmt, b, off)
        off += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal off
        n = take("Q")
        s = b[off:off + n].decode("utf-8", "replace")
        off += n
        return s

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t in scalar:
            return take(scalar[t])
        if t == 8:
            return string()
        if t == 9:
            it, n = take("I"), take("Q")
            return [value(it) for _ in range(n)]
        raise ValueError(f"gguf value type {t}")

    assert b[:4] == b"GGUF", path
    off = 4
    take("I")
    n_t, n_kv = take("Q"), take("Q")
    kv = {}
    for _ in range(n_kv):
        k = string()
        kv[k] = value(take("I"))
    infos = []
    for _ in range(n_t):
        name = string()
        nd = take("I")
        ne = [take("Q") for _ in range(nd)]
        infos.append((name, ne, take("I"), take("Q")))
    align = kv.get("general.alignment", 32)
    base = (off + align - 1) // align * align
    out = {}
    for name, ne, t, o in infos:
        n = int(np.prod(ne))
        p = base + o
        if t == 0:
            a = np.frombuffer(b, np.float32, n, p)
        elif t == 1:
            a = np.frombuffer(b, np.float16, n, p).astype(np.float32)
        elif t == 8:
            blk = np.frombuffer(b, np.uint8, n // 32 * 34, p).reshape(-1, 34)
            d = blk[:, :2].copy().view(np.float16).astype(np.float32)
            q = blk[:, 2:].copy().view(np.int8).astype(np.float32)
            a = (q * d).reshape(-1)
        else:
            raise ValueError(f"{name}: ggml type {t}")
        out[name] = a.reshape(list(reversed(ne))).copy()
    return kv, out


def load_backbone(path, device):
    kv, w = read_gguf(path)
    a = kv["general.architecture"]
    hp = dict(n_embd=kv[f"{a}.embedding_length"], n_layer=kv[f"{a}.block_count"], n_head=kv[f"{a}.attention.head_count"],
              n_head_kv=kv[f"{a}.attention.head_count_kv"], n_ff=kv[f"{a}.feed_forward_length"],
              rope_theta=kv.get(f"{a}.rope.freq_base", 10000.0), rms_eps=kv[f"{a}.attention.layer_norm_rms_epsilon"],
              n_vocab=w["token_embd.weight"].shape[0], init_std=0.02)
    hp["head_dim"] = hp["n_embd"] // hp["n_head"]
    m = GavelMini(hp)
    sd = {"embed.weight": w["token_embd.weight"], "norm.weight": w["output_norm.weight"]}
    names = {"attn_norm": "attn_norm", "attn_q": "q", "attn_k": "k", "attn_v": "v", "attn_output": "o",
             "ffn_norm": "ffn_norm", "ffn_gate": "gate", "ffn_up": "up", "ffn_down": "down"}
    for i in range(hp["n_layer"]):
        for g, t in names.items():
            sd[f"blocks.{i}.{t}.weight"] = w[f"blk.{i}.{g}.weight"]
    m.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()})
    m.set_rope(2048, "cpu")
    return m.to(device), hp


def load_projections(path):
    kv, w = read_gguf(path)
    return kv, w["gavel.w_q"], w["gavel.w_s"]


# ---------------------------------------------------------------------------------------------------
class Stream:
    def __init__(self, data, name, cols):
        self.tok = np.fromfile(data / f"{name}.u16", dtype=np.uint16).astype(np.int64)
        self.rows = np.fromfile(data / f"{name}.i32", dtype=np.int32).reshape(-1, cols)

    def seq(self, i):
        o, n = self.rows[i, 0], self.rows[i, 1]
        return self.tok[o:o + n]


def states(model, layer, seqs, device):
    """ℓ`layer` residual rows of right-padded sequences: [B, T, E] (the router's l_out-<layer>)."""
    T = max(len(s) for s in seqs)
    x = torch.zeros(len(seqs), T, dtype=torch.long)
    for i, s in enumerate(seqs):
        x[i, :len(s)] = torch.from_numpy(s)
    x = x.to(device)
    h = model.embed(x)
    cos, sin = model.cos[:T].to(device), model.sin[:T].to(device)
    for b in model.blocks[:layer + 1]:
        h = b(h, cos, sin)
    return h


class Maps(torch.nn.Module):
    def __init__(self, wq, ws):
        super().__init__()
        self.wq = torch.nn.Parameter(torch.from_numpy(wq.copy()))
        self.ws = torch.nn.Parameter(torch.from_numpy(ws.copy()))


def encode_skills(model, maps, sk, layer, device, bs=256):
    """Padded keys [N, Lk, dim] (f16, zero rows past each skill's keys), their lengths, their tokens."""
    N = sk.rows.shape[0]
    Lk = int((sk.rows[:, 3] - sk.rows[:, 2]).max())
    keys = torch.zeros(N, Lk, maps.ws.shape[0], dtype=torch.float16, device=device)
    lens = torch.zeros(N, dtype=torch.long)
    order = np.argsort(sk.rows[:, 1])
    with torch.no_grad():
        for j in range(0, N, bs):
            idx = order[j:j + bs]
            h = states(model, layer, [sk.seq(i) for i in idx], device)
            for r, i in enumerate(idx):
                a, e = sk.rows[i, 2], sk.rows[i, 3]
                k = F.normalize(h[r, a:e].float() @ maps.ws.t(), dim=-1)
                keys[i, :e - a] = k.half()
                lens[i] = e - a
    return keys, lens


@torch.no_grad()
def cover_mask(keys, lens, eps, chunk=2048):
    """The ε-cover an install keeps (farthest-first from each skill's first key, lowest index on ties,
    until every key lies within eps of a kept one: test/oracles/glance-reference.ts referenceCover),
    for every skill at once: [N, Lk] bool."""
    N, Lk, _ = keys.shape
    dev = keys.device
    kept = torch.zeros(N, Lk, dtype=torch.bool, device=dev)
    pos = torch.arange(Lk, device=dev)
    for c in range(0, N, chunk):
        k = keys[c:c + chunk].float()
        n = lens[c:c + chunk].to(dev)
        valid = pos[None, :] < n[:, None]
        rows = torch.arange(k.shape[0], device=dev)

        def dist(centre):
            return torch.sqrt(torch.clamp(2 - 2 * torch.einsum("bd,bld->bl", centre, k), min=0))

        kc = kept[c:c + chunk]
        kc[:, 0] = n > 0
        mind = dist(k[:, 0]).masked_fill(~valid, -1.0)
        live = n > 0
        while bool(live.any()):
            # the farthest key (lowest index on ties: argmax returns the first maximum)
            far = mind.argmax(1)
            top = mind[rows, far]
            live = live & (top > eps)
            if not bool(live.any()):
                break
            kc[rows[live], far[live]] = True
            d = dist(k[rows, far])
            mind = torch.where(live[:, None], torch.minimum(mind, d.masked_fill(~valid, -1.0)), mind)
    return kept


def idf_table(sk, vocab, kept=None):
    df = np.zeros(vocab, dtype=np.float64)
    km = None if kept is None else kept.cpu().numpy()
    for i in range(sk.rows.shape[0]):
        o, n, a, e = sk.rows[i]
        t = sk.tok[o + a:o + e]
        df[np.unique(t if km is None else t[km[i, :e - a]])] += 1
    n = sk.rows.shape[0]
    return torch.from_numpy(np.log((n + 1) / (df + 0.5))).float()


@torch.no_grad()
def vote(q, w, keys, mask, k, chunk=1024):
    """The router's vote (Eq. 3): each row of q votes its max-sim for its k best skills, weighted by w;
    g = Σ w·m over the rows that voted for a skill / Σ w. [N] float64."""
    N = keys.shape[0]
    m = torch.empty(q.shape[0], N, device=q.device)
    for c in range(0, N, chunk):
        s = torch.einsum("qd,cld->qcl", q, keys[c:c + chunk]).float()
        s.masked_fill_(~mask[c:c + chunk][None], -1.0)
        m[:, c:c + chunk] = s.amax(-1)
    v, ix = m.topk(k, dim=1)
    g = torch.zeros(N, device=q.device, dtype=torch.float64)
    g.index_add_(0, ix.reshape(-1), (v * w[:, None]).reshape(-1).double())
    return g / w.sum().double()


@torch.no_grad()
def glance_eval(model, maps, layer, sk, ts, gold, split, device, keys, lens, idf, chunk=1024, mask=None, keep_g=None):
    N = keys.shape[0]
    k = max(10, round(0.01 * N))
    if mask is None:
        mask = torch.arange(keys.shape[1], device=device)[None, :] < lens.to(device)[:, None]
    hits, r20, ranks = [], [], []
    for t in split:
        o, n, a, e, batch, gf, gc = ts.rows[t]
        h = states(model, layer, [ts.seq(t)], device)[0, a:e].float()
        q = F.normalize(h @ maps.wq.t(), dim=-1).half()
        w = idf[torch.from_numpy(ts.tok[o + a:o + e])].to(device)
        g = vote(q, w, keys, mask, k, chunk)
        if keep_g is not None:
            keep_g.append(g)
        gs = torch.from_numpy(gold[gf:gf + gc]).to(device)
        best = g[gs].max()
        rank = int((g > best).sum())
        ranks.append(rank)
        hits.append(rank == 0)
        r20.append(rank < 20)
    return {"hit1": float(np.mean(hits)), "r20": float(np.mean(r20)), "tasks": len(split), "ranks": ranks}


def rank_report(gs_list, ts, gold, split, device):
    hits, r20, ranks = [], [], []
    for g, t in zip(gs_list, split):
        gf, gc = ts.rows[t, 5], ts.rows[t, 6]
        gs = torch.from_numpy(gold[gf:gf + gc]).to(device)
        rank = int((g > g[gs].max()).sum())
        ranks.append(rank)
        hits.append(rank == 0)
        r20.append(rank < 20)
    return {"hit1": float(np.mean(hits)), "r20": float(np.mean(r20)), "tasks": len(split), "ranks": ranks}


@torch.no_grad()
def feedback(model, maps, layer, sk, keys, mask, idf, g, m, E, device, chunk=1024, text=False):
    """The feedback glance's second pass for one task: its first pass's best m skills (weighted by a
    softmax of g over the m, temperature 0.1 of the best g), each token t of their keyed range weighted
    Σ_d p(d)·tf(t,d)/|d|·idf(t); the best E tokens, each as the query row of its first occurrence in
    the most weighted leader that holds it (W_q of that skill's ℓ1 state), vote as the glance votes
    (k = max(10, 1% of N) best skills per row by max-sim), rows weighted by the token weights.
    text=True, what a route can afford without the leaders' states: tf over the leaders' kept keys
    only (the tokens a bank holds), and the E tokens read as one pseudo-text (BOS, then the tokens by
    weight) through the backbone's first blocks, each row its token's state there."""
    N = keys.shape[0]
    k = max(10, round(0.01 * N))
    v, lead = g.topk(m)
    p = torch.softmax((v - v[0]) / (0.1 * max(float(v[0]), 1e-9)), 0).cpu().numpy()
    w = {}
    where = {}
    for j, d in enumerate(lead.tolist()):
        a, e = sk.rows[d, 2], sk.rows[d, 3]
        seq = sk.seq(d)
        toks = seq[a:e]
        if text:
            toks = toks[mask[d, :e - a].cpu().numpy()]
        u, first, cnt = np.unique(toks, return_index=True, return_counts=True)
        for t, f, c in zip(u.tolist(), first.tolist(), cnt.tolist()):
            w[t] = w.get(t, 0.0) + p[j] * c / len(toks) * float(idf[t])
            if t not in where:
                where[t] = (d, a + f)
    best = sorted(w.items(), key=lambda x: -x[1])[:E]
    # the leaders' ℓ1 states (the route would run the backbone's first blocks over their renders)
    if text:
        pseudo = np.array([int(sk.seq(0)[0])] + [t for t, _ in best], dtype=np.int64)
        q = states(model, layer, [pseudo], device)[0, 1:].float()
    else:
        need = sorted({where[t][0] for t, _ in best})
        hs = states(model, layer, [sk.seq(d) for d in need], device)
        q = torch.stack([hs[need.index(where[t][0]), where[t][1]].float() for t, _ in best])
    q = F.normalize(q @ maps.wq.t(), dim=-1).half()
    ww = torch.tensor([x for _, x in best], device=device, dtype=torch.float32)
    return vote(q, ww, keys, mask, k, chunk)


def train_arm(model, maps, layer, sk, st, b, arm, steps, device, idf, bs=32, lr_maps=1e-3, lr_blocks=1e-4, tau=0.02, log_every=100, min_b=-3.5):
    params = [{"params": list(maps.parameters()), "lr": lr_maps}]
    for p in model.parameters():
        p.requires_grad_(False)
    if arm == "blocks":
        bp = [p for blk in model.blocks[:layer + 1] for p in blk.parameters()]
        for p in bp:
            p.requires_grad_(True)
        params.append({"params": bp, "lr": lr_blocks})
    opt = torch.optim.AdamW(params, weight_decay=0.0)
    rng = np.random.default_rng(3)
    ok = np.where(b[:, 0] > min_b)[0]
    log(f"  {arm}: {len(ok)} statements with BM25's top posterior > {min_b}, {steps} steps of {bs}, lr maps {lr_maps} blocks {lr_blocks}")
    t0 = time.time()
    for step in range(steps):
        sel = rng.choice(ok, bs, replace=len(ok) < bs)
        cand = sorted({int(c) for i in sel for c in st.rows[i, 4:9] if c >= 0})
        col = {c: j for j, c in enumerate(cand)}
        target = torch.zeros(bs, len(cand))
        for r, i in enumerate(sel):
            tops = [(int(c), float(x)) for c, x in zip(st.rows[i, 4:9], b[i]) if c >= 0]
            p = torch.softmax(torch.tensor([x for _, x in tops]), 0)
            for (c, _), pp in zip(tops, p):
                target[r, col[c]] += pp
        # skill keys (grad through W_s and, for `blocks`, the blocks)
        hs = states(model, layer, [sk.seq(c) for c in cand], device)
        Lk = int(max(sk.rows[c, 3] - sk.rows[c, 2] for c in cand))
        keys = torch.zeros(len(cand), Lk, maps.ws.shape[0], device=device)
        kmask = torch.zeros(len(cand), Lk, dtype=torch.bool, device=device)
        for j, c in enumerate(cand):
            a, e = sk.rows[c, 2], sk.rows[c, 3]
            keys[j, :e - a] = F.normalize(hs[j, a:e] @ maps.ws.t(), dim=-1)
            kmask[j, :e - a] = True
        hq = states(model, layer, [st.seq(i) for i in sel], device)
        scores = []
        for r, i in enumerate(sel):
            o, n, a, e = st.rows[i, :4]
            q = F.normalize(hq[r, a:e] @ maps.wq.t(), dim=-1)
            w = idf[torch.from_numpy(st.tok[o + a:o + e])].to(device)
            s = torch.einsum("qd,cld->qcl", q, keys).masked_fill(~kmask[None], -1.0).amax(-1)  # [nq, C]
            scores.append((w[:, None] * s).sum(0) / w.sum())
        logits = torch.stack(scores) / tau
        loss = -(target.to(device) * logits.log_softmax(-1)).sum(-1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if (step + 1) % log_every == 0:
            log(f"    step {step + 1}: loss {loss.item():.4f} ({(time.time() - t0) / (step + 1):.3f} s a step)")
    for p in model.parameters():
        p.requires_grad_(False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--projections", required=True)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--arms", default="shipped,maps,blocks")
    ap.add_argument("--out", default=".")
    ap.add_argument("--lr-maps", type=float, default=1e-3)
    ap.add_argument("--lr-blocks", type=float, default=1e-4)
    ap.add_argument("--min-b", type=float, default=-3.5, help="statements whose BM25 top posterior is above this")
    ap.add_argument("--prf-m", default="3,10", help="prf arms: leaders read")
    ap.add_argument("--prf-e", default="10,30", help="prf arms: expansion rows")
    ap.add_argument("--prf-lambda", default="0.25,0.5", help="prf arms: the second pass's weight")
    ap.add_argument("--prf-text", action="store_true", help="prf arms: the leaders' kept tokens read as a pseudo-text (feedback's text=True)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N skills and the tasks whose golds are among them (a dry run)")
    a = ap.parse_args()
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = True
    data = Path(a.data)
    sk, ts, st = Stream(data, "skills", 4), Stream(data, "tasks", 7), Stream(data, "stmts", 9)
    gold = np.fromfile(data / "gold.i32", dtype=np.int32).astype(np.int64)
    b = np.fromfile(data / "stmts.f32", dtype=np.float32).reshape(-1, 5)
    if a.limit:
        sk.rows = sk.rows[:a.limit]
    N = sk.rows.shape[0]
    kv, wq, ws = load_projections(a.projections)
    layer = int(kv["gavel.layer"])
    log(f"early layers: {N} skills, {ts.rows.shape[0]} tasks, {st.rows.shape[0]} statements; layer {layer}, dim {wq.shape[0]}; {dev} "
        f"{torch.cuda.get_device_name(0) if dev == 'cuda' else ''}, torch {torch.__version__}, {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
    val = [t for t in range(ts.rows.shape[0]) if 1 <= ts.rows[t, 4] <= 5 and (gold[ts.rows[t, 5]:ts.rows[t, 5] + ts.rows[t, 6]] < N).all()]
    test = [t for t in range(ts.rows.shape[0]) if 6 <= ts.rows[t, 4] <= 10 and (gold[ts.rows[t, 5]:ts.rows[t, 5] + ts.rows[t, 6]] < N).all()]
    if a.limit:
        st.rows[:, 4:9][st.rows[:, 4:9] >= N] = -1
        keep = st.rows[:, 4] >= 0
        st.rows, b = st.rows[keep], b[keep]
    idf = idf_table(sk, 32000)
    results = {}
    for arm in a.arms.split(","):
        t0 = time.time()
        model, hp = load_backbone(a.model, dev)
        model.eval()
        maps = Maps(wq, ws).to(dev)
        if arm.startswith("prf@"):
            # prf@EPS: the feedback glance over the keys an install holds at ε = EPS (the decision rule:
            # bench/results/2026-12-02-h200-feedback/decision.txt)
            eps = float(arm.split("@")[1])
            keys, lens = encode_skills(model, maps, sk, layer, dev)
            kept = cover_mask(keys, lens, eps)
            idf_c = idf_table(sk, 32000, kept)
            out = {}
            gval = []
            out["plain-val"] = glance_eval(model, maps, layer, sk, ts, gold, val, dev, keys, lens, idf_c, mask=kept, keep_g=gval)
            log(f"  {arm} plain: val Hit@1 {out['plain-val']['hit1']:.3f} R@20 {out['plain-val']['r20']:.3f}; {time.time() - t0:.0f} s")
            grid = []
            for m in [int(x) for x in a.prf_m.split(",")]:
                for E in [int(x) for x in a.prf_e.split(",")]:
                    gE = [feedback(model, maps, layer, sk, keys, kept, idf_c, g, m, E, dev, text=a.prf_text) for g in gval]
                    for lam in [float(x) for x in a.prf_lambda.split(",")]:
                        mixed = [g + lam * (g.max() / ge.max().clamp(min=1e-12)) * ge for g, ge in zip(gval, gE)]
                        r = rank_report(mixed, ts, gold, val, dev)
                        grid.append(((m, E, lam), r))
                        log(f"  {arm} m {m} E {E} λ {lam}: val Hit@1 {r['hit1']:.3f} R@20 {r['r20']:.3f}; {time.time() - t0:.0f} s")
            # the rule: best validation R@20, then Hit@1, then the smaller m, E, λ
            (m, E, lam), rv = max(grid, key=lambda x: (x[1]["r20"], x[1]["hit1"], -x[0][0], -x[0][1], -x[0][2]))
            out["grid"] = [{"m": c[0], "E": c[1], "lambda": c[2], "val": r} for c, r in grid]
            out["chosen"] = {"m": m, "E": E, "lambda": lam}
            gtest = []
            out["plain-test"] = glance_eval(model, maps, layer, sk, ts, gold, test, dev, keys, lens, idf_c, mask=kept, keep_g=gtest)
            gE = [feedback(model, maps, layer, sk, keys, kept, idf_c, g, m, E, dev, text=a.prf_text) for g in gtest]
            mixed = [g + lam * (g.max() / ge.max().clamp(min=1e-12)) * ge for g, ge in zip(gtest, gE)]
            out["chosen-test"] = rank_report(mixed, ts, gold, test, dev)
            log(f"  {arm} chosen m {m} E {E} λ {lam}: val Hit@1 {rv['hit1']:.3f} R@20 {rv['r20']:.3f}; TEST plain Hit@1 {out['plain-test']['hit1']:.3f} "
                f"R@20 {out['plain-test']['r20']:.3f}, feedback Hit@1 {out['chosen-test']['hit1']:.3f} R@20 {out['chosen-test']['r20']:.3f}; {time.time() - t0:.0f} s")
            results[arm] = out
            del keys, kept, model, maps
            torch.cuda.empty_cache() if dev == "cuda" else None
            Path(a.out).mkdir(parents=True, exist_ok=True)
            (Path(a.out) / "early-layers.json").write_text(json.dumps(results) + "\n")
            continue
        if arm.startswith("cover@"):
            eps = float(arm.split("@")[1])
            keys, lens = encode_skills(model, maps, sk, layer, dev)
            t1 = time.time()
            kept = cover_mask(keys, lens, eps)
            nk = int(kept.sum())
            log(f"  {arm}: kept {nk} of {int(lens.sum())} keys ({nk / max(1, int(lens.sum())):.3f}) in {time.time() - t1:.0f} s")
            idf_c = idf_table(sk, 32000, kept)
            r = {s_: glance_eval(model, maps, layer, sk, ts, gold, split, dev, keys, lens, idf_c, mask=kept) for s_, split in (("val", val), ("test", test))}
            r["keys"] = nk
            results[arm] = r
            log(f"  {arm}: val Hit@1 {r['val']['hit1']:.3f} R@20 {r['val']['r20']:.3f}; test Hit@1 {r['test']['hit1']:.3f} R@20 {r['test']['r20']:.3f}; {time.time() - t0:.0f} s")
            del keys, kept, model, maps
            torch.cuda.empty_cache() if dev == "cuda" else None
            Path(a.out).mkdir(parents=True, exist_ok=True)
            (Path(a.out) / "early-layers.json").write_text(json.dumps(results) + "\n")
            continue
        if arm != "shipped":
            train_arm(model, maps, layer, sk, st, b, arm, a.steps, dev, idf, lr_maps=a.lr_maps, lr_blocks=a.lr_blocks, min_b=a.min_b)
        keys, lens = encode_skills(model, maps, sk, layer, dev)
        r = {s: glance_eval(model, maps, layer, sk, ts, gold, split, dev, keys, lens, idf) for s, split in (("val", val), ("test", test))}
        results[arm] = r
        log(f"  {arm}: val Hit@1 {r['val']['hit1']:.3f} R@20 {r['val']['r20']:.3f} ({r['val']['tasks']}); "
            f"test Hit@1 {r['test']['hit1']:.3f} R@20 {r['test']['r20']:.3f} ({r['test']['tasks']}); {time.time() - t0:.0f} s")
        del keys, model, maps
        torch.cuda.empty_cache() if dev == "cuda" else None
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "early-layers.json").write_text(json.dumps(results) + "\n")


if __name__ == "__main__":
    main()
