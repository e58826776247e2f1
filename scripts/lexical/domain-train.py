"""The domain score (src/lexical/domain.ts): a bag-of-words logistic model of "an agent's kind of work" against everyday
assistant queries, trained on domain-corpus.py's texts, and how its score separates the short requests
a skill serves from the hand-written off-domain prompts, alone and beside the lexical reach (what the
shipped large abstention band reads).

  python3 scripts/lexical/domain-train.py train CORPUS.jsonl MODEL.json
  python3 scripts/lexical/domain-train.py eval MODEL.json LP.jsonl NAME=RECORDS.jsonl.gz [NAME=…]

train: words are runs of [a-z0-9] of the lower-cased text, stop words and one-letter words out, kept
when in 3 or more texts; a text's vector is its distinct words' indicators over sqrt(their count); L2
regularisation λ chosen among 1e-5 … 1e-3 by accuracy on a 10% split of the corpus (never on the
benchmark's rows); then refitted on all of it.
eval: as task-lp-auc.py (the same rows, fitting and held-out split, blend and cut), with the domain
score in place of lp; LP.jsonl (task-lp.ts's output) only maps record ids to texts.
"""
import gzip
import json
import math
import random
import re
import sys

import numpy as np

STOP = set("a an the of to in for on and or is are be with by it this that i my me you your we our can how what do does from as at".split())


def words(t):
    return sorted({w for w in re.findall(r"[a-z0-9]+", t.lower()) if w not in STOP and len(w) > 1})


def fit(X, y, lam, steps=400):
    w = np.zeros(X.shape[1], dtype=np.float64)
    b = 0.0
    m = np.zeros_like(w); v = np.zeros_like(w); mb = vb = 0.0
    for it in range(1, steps + 1):
        z = X @ w + b
        p = 1 / (1 + np.exp(-z))
        g = X.T @ (p - y) / len(y) + lam * w
        gb = float((p - y).mean())
        m = 0.9 * m + 0.1 * g; v = 0.999 * v + 0.001 * g * g
        w -= 0.05 * (m / (1 - 0.9 ** it)) / (np.sqrt(v / (1 - 0.999 ** it)) + 1e-8)
        mb = 0.9 * mb + 0.1 * gb; vb = 0.999 * vb + 0.001 * gb * gb
        b -= 0.05 * (mb / (1 - 0.9 ** it)) / (math.sqrt(vb / (1 - 0.999 ** it)) + 1e-8)
    return w, b


def matrix(texts, idx):
    X = np.zeros((len(texts), len(idx)), dtype=np.float64)
    for i, t in enumerate(texts):
        ws = [idx[w] for w in words(t) if w in idx]
        if ws:
            X[i, ws] = 1 / math.sqrt(len(ws))
    return X


def train(corpus, out):
    rows = [json.loads(l) for l in open(corpus)]
    df = {}
    for r in rows:
        for w in words(r["text"]):
            df[w] = df.get(w, 0) + 1
    vocab = sorted(w for w, c in df.items() if c >= 3)
    idx = {w: i for i, w in enumerate(vocab)}
    X = matrix([r["text"] for r in rows], idx)
    y = np.array([r["label"] for r in rows], dtype=np.float64)
    order = list(range(len(rows)))
    random.Random(7).shuffle(order)
    cut = len(order) // 10
    te, tr = np.array(order[:cut]), np.array(order[cut:])
    best = None
    for lam in [1e-5, 1e-4, 1e-3]:
        w, b = fit(X[tr], y[tr], lam)
        acc = float(((X[te] @ w + b > 0) == (y[te] > 0.5)).mean())
        print(f"λ {lam:g}: accuracy on the corpus's 10% split {acc:.4f}")
        if best is None or acc > best[1]:
            best = (lam, acc)
    w, b = fit(X, y, best[0])
    json.dump({"lambda": best[0], "splitAccuracy": best[1], "bias": b, "words": vocab, "weights": [round(x, 5) for x in w.tolist()]}, open(out, "w"))
    o = np.argsort(w)
    print(f"chose λ {best[0]:g}; {len(vocab)} words")
    print("most off-domain:", ", ".join(vocab[i] for i in o[:30]))
    print("most in-domain:", ", ".join(vocab[i] for i in o[-30:]))


def scorer(model):
    idx = {w: i for i, w in enumerate(model["words"])}
    # the weights as the projections store them (f32), so that a score here is a route's to the last bit
    wt = [float(x) for x in np.array(model["weights"], dtype=np.float32)]

    def score(t):
        ws = [idx[w] for w in words(t) if w in idx]
        return model["bias"] + (sum(wt[i] for i in ws) / math.sqrt(len(ws)) if ws else 0.0)
    return score


def fitting(batch, off):
    if off:
        return int("".join(c for c in batch if c.isdigit())) <= 5
    return batch in {"sl1", "sl2", "sl3", "sl4", "sl5", "fresh1", "mid1", "mid2", "mid3", "mid4", "mid5", "demo1"}


def auc(rows, f):
    pos = [f(r) for r in rows if not r["off"]]
    neg = [f(r) for r in rows if r["off"]]
    if not pos or not neg:
        return float("nan")
    return sum(1 if p > q else 0.5 if p == q else 0 for p in pos for q in neg) / len(pos) / len(neg)


def reach_of(record):
    """The lexical reach of a per-query record (src/lexical/postings.ts lexicalReach)."""
    n = record["lexical"]["size"]
    top = record["lexical"]["top"][0]["s"] if record["lexical"]["top"] else 0.0
    return math.log1p(max(0.0, top) / math.log(1 + (n + 0.5) / 0.5))


def best_blend(fitr, a, b):
    """w·z(a) + (1 − w)·z(b), z standardised over the fitting rows, w on a grid of 0.05 chosen by their AUC: (w, the blend)."""
    mu = {k: sum(r[k] for r in fitr) / len(fitr) for k in [a, b]}
    sd = {k: math.sqrt(sum((r[k] - mu[k]) ** 2 for r in fitr) / len(fitr)) for k in [a, b]}
    blend = lambda w: (lambda r: w * (r[a] - mu[a]) / sd[a] + (1 - w) * (r[b] - mu[b]) / sd[b])
    w = max([i / 20 for i in range(21)], key=lambda w: (auc(fitr, blend(w)), w))
    return w, blend(w)


def at_cut(fitr, held, f):
    """The cut letting at most 10% of the fitting prompts through (abstain at or under it): held out, declined / let through."""
    off = sorted((f(r) for r in fitr if r["off"]), reverse=True)
    cut = off[len(off) // 10]
    dec = sum(f(r) <= cut for r in held if not r["off"]) / sum(not r["off"] for r in held)
    thr = sum(f(r) > cut for r in held if r["off"]) / sum(r["off"] for r in held)
    return f"{dec:.3f} / {thr:.3f}"


def evaluate(model_path, lp_path, specs):
    score = scorer(json.load(open(model_path)))
    texts = {}
    for l in open(lp_path):
        r = json.loads(l)
        if r.get("id"):
            texts[r["id"]] = r
    print("| library | AUC fitting · held out: reach | domain | blend (w on reach) | held out at the fitting cut (≤ 10% of fitting prompts through), declined / through: reach · domain · blend |")
    print("| --- | --- | --- | --- | --- |")
    for spec in specs:
        name, path = spec.split("=", 1)
        rows = []
        for l in gzip.open(path, "rt"):
            r = json.loads(l)
            t = texts[r["id"].split("@")[0]]
            rows.append({"off": t["off"], "fit": fitting(r["batch"], t["off"]), "reach": reach_of(r), "dom": score(t["text"])})
        fitr = [r for r in rows if r["fit"]]
        held = [r for r in rows if not r["fit"]]
        w, blend = best_blend(fitr, "reach", "dom")
        pair = lambda f: f"{auc(fitr, f):.3f} · {auc(held, f):.3f}"
        cuts = " · ".join(at_cut(fitr, held, f) for f in [lambda r: r["reach"], lambda r: r["dom"], blend])
        print(f"| {name} | {pair(lambda r: r['reach'])} | {pair(lambda r: r['dom'])} | w {w:.2f}: {pair(blend)} | {cuts} |")


if __name__ == "__main__":
    if sys.argv[1] == "train":
        train(sys.argv[2], sys.argv[3])
    else:
        evaluate(sys.argv[2], sys.argv[3], sys.argv[4:])
