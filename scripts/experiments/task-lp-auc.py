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
import importlib.util
import json
import sys

spec = importlib.util.spec_from_file_location("domain_train", __file__.replace("experiments/task-lp-auc.py", "lexical/domain-train.py"))
dt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dt)

lp = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("id"):
        lp[r["id"]] = r

print("| library | rows (in / off), fitting · held out | reach | lp | blend (w on reach, chosen on fitting) | declined / let through at the fitting cut (reach · blend), held out |")
print("| --- | --- | --- | --- | --- | --- |")
for arg in sys.argv[2:]:
    name, path = arg.split("=", 1)
    rows = []
    for line in gzip.open(path, "rt"):
        r = json.loads(line)
        t = lp[r["id"].split("@")[0]]
        rows.append({"off": t["off"], "fit": dt.fitting(r["batch"], t["off"]), "reach": dt.reach_of(r), "lp": t["lp"]})
    fit = [r for r in rows if r["fit"]]
    held = [r for r in rows if not r["fit"]]
    w, blend = dt.best_blend(fit, "reach", "lp")
    cnt = lambda s: f"{sum(not r['off'] for r in s)} / {sum(r['off'] for r in s)}"
    pair = lambda f: f"{dt.auc(fit, f):.3f} · {dt.auc(held, f):.3f}"
    print(f"| {name} | {cnt(fit)} · {cnt(held)} | {pair(lambda r: r['reach'])} | {pair(lambda r: r['lp'])} | w {w:.2f}: {pair(blend)} | {dt.at_cut(fit, held, lambda r: r['reach'])} · {dt.at_cut(fit, held, blend)} |")
