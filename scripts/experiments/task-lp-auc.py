"""Does the backbone's own log-probability of a request (task-lp.ts) separate requests a skill serves
from off-domain prompts beyond what the shipped large band reads (the lexical reach)?

For each records file (per-query records of the 114 short requests and the 80 hand-written prompts over
a library, e.g. bench/results/2026-12-01-cpu-small-band-size/records/short-1k.jsonl.gz), joined by id
with task-lp.ts's output: the ROC AUC (in-domain above off-domain) of the reach, of lp, and of a blend
w·z(reach) + (1 − w)·z(lp) (z: standardised over the fitting rows), w on a grid chosen on the fitting
rows (requests of batches sl1-5, fresh1, mid1-5, demo1; prompts of batches 1-5) and read on the rest;
then, for the reach and the blend, the cut that lets at most 10% of the fitting prompts through, and
what it declines and lets through of the held-out rows.

  python3 scripts/experiments/task-lp-auc.py LP.jsonl NAME=RECORDS.jsonl.gz [NAME=…]
"""
import gzip
import json
import math
import sys

lp = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("id"):
        lp[r["id"]] = r


def fitting(batch, off):
    if off:
        return int("".join(c for c in batch if c.isdigit())) <= 5
    return batch in {"sl1", "sl2", "sl3", "sl4", "sl5", "fresh1", "mid1", "mid2", "mid3", "mid4", "mid5", "demo1"}


def auc(rows, f):
    pos = [f(r) for r in rows if not r["off"]]
    neg = [f(r) for r in rows if r["off"]]
    if not pos or not neg:
        return float("nan")
    c = sum(1 if p > q else 0.5 if p == q else 0 for p in pos for q in neg)
    return c / len(pos) / len(neg)


print("| library | rows (in / off), fitting · held out | reach | lp | blend (w on reach, chosen on fitting) | declined / let through at the fitting cut (reach · blend), held out |")
print("| --- | --- | --- | --- | --- | --- |")
for arg in sys.argv[2:]:
    name, path = arg.split("=", 1)
    rows = []
    for line in gzip.open(path, "rt"):
        r = json.loads(line)
        base = r["id"].split("@")[0]
        t = lp[base]
        n = r["lexical"]["size"]
        top = r["lexical"]["top"][0]["s"] if r["lexical"]["top"] else 0.0
        reach = math.log1p(max(0.0, top) / math.log(1 + (n + 0.5) / 0.5))
        rows.append({"off": t["off"], "fit": fitting(r["batch"], t["off"]), "reach": reach, "lp": t["lp"]})
    fit = [r for r in rows if r["fit"]]
    held = [r for r in rows if not r["fit"]]
    mu = {k: sum(r[k] for r in fit) / len(fit) for k in ["reach", "lp"]}
    sd = {k: math.sqrt(sum((r[k] - mu[k]) ** 2 for r in fit) / len(fit)) for k in ["reach", "lp"]}
    blend = lambda w: (lambda r: w * (r["reach"] - mu["reach"]) / sd["reach"] + (1 - w) * (r["lp"] - mu["lp"]) / sd["lp"])
    w = max([i / 20 for i in range(21)], key=lambda w: (auc(fit, blend(w)), w))
    cnt = lambda s: f"{sum(not r['off'] for r in s)} / {sum(r['off'] for r in s)}"
    pair = lambda f: f"{auc(fit, f):.3f} · {auc(held, f):.3f}"
    def at_cut(f):
        # the cut letting at most 10% of the fitting prompts through (a route abstains at or under it)
        off = sorted((f(r) for r in fit if r["off"]), reverse=True)
        cut = off[len(off) // 10]
        dec = sum(f(r) <= cut for r in held if not r["off"]) / sum(not r["off"] for r in held)
        thr = sum(f(r) > cut for r in held if r["off"]) / sum(r["off"] for r in held)
        return f"{dec:.3f} / {thr:.3f}"
    print(f"| {name} | {cnt(fit)} · {cnt(held)} | {pair(lambda r: r['reach'])} | {pair(lambda r: r['lp'])} | w {w:.2f}: {pair(blend(w))} | {at_cut(lambda r: r['reach'])} · {at_cut(blend(w))} |")
