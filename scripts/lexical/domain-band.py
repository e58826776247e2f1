"""A large abstention band over (reach, domain) against the shipped one (reach < cut), by the rule in
bench/results/2026-12-04-cpu-domain-score/decision.txt.

  python3 scripts/lexical/domain-band.py MODEL.json LP.jsonl RECORDS30K_DIR SHORT1K SHORT3K [--cut 1.6072215894838473] [--held-out] [--write-band BAND.json] [--gap]
      [--conv NAME=RECORDS --conv …] [--conv-texts A.jsonl,B.jsonl] [--baseline MODEL.json[.gz]:BAND.json]

Prints the fitted model and the fitting rows' table with the rule's verdict; --held-out adds the held-out rows;
--write-band writes the band as the projections store a logistic model (scripts/lexical/write-domain.ts reads it).

MODEL.json: domain-train.py's model. LP.jsonl: task-lp.ts's output over the request files (id → text).
RECORDS30K_DIR: {val,test,offdomain}.jsonl.gz with lexical read-outs over the 30,593 skills
(scripts/device/refit-abstention.ts -- --work DIR writes them). SHORT1K / SHORT3K: the per-query
records of the short requests and prompts over 1,024 / 3,024 skills.
Texts: ../shared/data/swe-skills-bench/tasks.jsonl and bench/data/off-domain-prompts.jsonl.
--conv adds a library of conversational requests and prompts (scripts/lexical/reach-records.ts's
records, texts from --conv-texts), weighted as the others: batches conv and convoff fit, conv2 and
convoff2 are held out. --baseline compares with a shipped large band (its domain table and band.json)
instead of the reach threshold.
"""
import gzip
import importlib.util
import json
import sys

import numpy as np

spec = importlib.util.spec_from_file_location("probe", __file__.replace("domain-band.py", "domain-train.py"))
probe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(probe)
VALUED = ("--cut", "--write-band", "--conv", "--conv-texts", "--baseline")
args = [a for i, a in enumerate(sys.argv[1:], 1) if not a.startswith("--") and sys.argv[i - 1] not in VALUED]
convs = [sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "--conv"]
conv_texts = sys.argv[sys.argv.index("--conv-texts") + 1].split(",") if "--conv-texts" in sys.argv else []
baseline = sys.argv[sys.argv.index("--baseline") + 1].split(":") if "--baseline" in sys.argv else None
cut0 = float(sys.argv[sys.argv.index("--cut") + 1]) if "--cut" in sys.argv else 1.6072215894838473
model_path, lp_path, d30, s1k, s3k = args[:5]


def load_json(path):
    return json.load(gzip.open(path, "rt") if path.endswith(".gz") else open(path))


score = probe.scorer(load_json(model_path))
base_score = probe.scorer(load_json(baseline[0])) if baseline else None

texts = {}
for l in open(lp_path):
    r = json.loads(l)
    if r.get("id"):
        texts[r["id"]] = r["text"]
for l in open("bench/data/off-domain-prompts.jsonl"):
    r = json.loads(l)
    texts[r["id"]] = r["text"]
for l in open("../shared/data/swe-skills-bench/tasks.jsonl"):
    r = json.loads(l)
    texts[r["id"]] = r["text"]
for f in conv_texts:
    for l in open(f):
        r = json.loads(l)
        texts[r["id"]] = r["text"]


def row(r, off, fit):
    t = texts[r["id"].split("@")[0]]
    out = {"off": off, "fit": fit, "reach": probe.reach_of(r), "dom": score(t)}
    if base_score:
        out["dom0"] = base_score(t)
    return out


def read(path):
    return [json.loads(l) for l in gzip.open(path, "rt")]


def hw_batch(r):
    return int("".join(c for c in r["batch"] if c.isdigit()))


libs = {}
off30 = [r for r in read(f"{d30}/offdomain.jsonl.gz") if r["id"].startswith("offhw")]
libs["30,593 skills"] = [row(r, False, True) for r in read(f"{d30}/val.jsonl.gz")] + [row(r, False, False) for r in read(f"{d30}/test.jsonl.gz")] + [row(r, True, hw_batch(r) <= 5) for r in off30]
for name, path in [("1,024 skills", s1k), ("3,024 skills", s3k)]:
    rows = []
    for r in read(path):
        off = r["id"].startswith("offhw")
        rows.append(row(r, off, probe.fitting(r["batch"], off)))
    libs[name] = rows

for spec in convs:
    name, path = spec.split("=", 1)
    libs[name] = [row(r, r["batch"].startswith("convoff"), r["batch"] in ("conv", "convoff")) for r in read(path)]

# standardise on the fitting rows (each library weighted equally)
fit_rows = [(name, r) for name, rows in libs.items() for r in rows if r["fit"]]
wts = []
for name, r in fit_rows:
    same = [x for x in libs[name] if x["fit"] and x["off"] == r["off"]]
    wts.append(1.0 / len(libs) / 2 / len(same))
wts = np.array(wts)
F = np.array([[r["reach"], r["dom"]] for _, r in fit_rows])
mu = (wts[:, None] * F).sum(0) / wts.sum()
sd = np.sqrt((wts[:, None] * (F - mu) ** 2).sum(0) / wts.sum())
X = np.hstack([(F - mu) / sd, np.ones((len(F), 1))])
y = np.array([1.0 if r["off"] else 0.0 for _, r in fit_rows])  # 1: off-domain (abstain)
beta = np.zeros(3)
for _ in range(50):  # weighted logistic regression, Newton, a tiny ridge on the weights
    p = 1 / (1 + np.exp(-X @ beta))
    g = X.T @ (wts * (p - y)) + 1e-4 * np.r_[beta[:2], 0]
    H = X.T @ (X * (wts * p * (1 - p))[:, None]) + 1e-4 * np.diag([1, 1, 0])
    beta -= np.linalg.solve(H, g)


def z(r):
    return float(np.dot(beta, [(r["reach"] - mu[0]) / sd[0], (r["dom"] - mu[1]) / sd[1], 1.0]))


def rates(abstain, part):
    out = {}
    for name, rows in libs.items():
        sel = [r for r in rows if part(r)]
        ins = [r for r in sel if not r["off"]]
        off = [r for r in sel if r["off"]]
        out[name] = (sum(abstain(r) for r in ins) / len(ins), sum(not abstain(r) for r in off) / len(off), len(ins), len(off))
    return out


if baseline:
    b0 = load_json(baseline[1])
    base = lambda r: sum(w * (x - m) / sc for w, x, m, sc in zip(b0["weights"], [r["reach"], r["dom0"]], b0["mean"], b0["scale"])) + b0["bias"] > b0["threshold"]
else:
    base = lambda r: r["reach"] < cut0
# the loosest cut on z whose mean fitting trigger rate is at most 0.10
zs = sorted({z(r) for _, r in fit_rows})
best = None
for c in zs + [max(zs) + 1]:
    rt = rates(lambda r: z(r) >= c, lambda r: r["fit"])
    trig = sum(v[1] for v in rt.values()) / len(rt)
    dec = sum(v[0] for v in rt.values()) / len(rt)
    if trig <= 0.10 + 1e-12 and (best is None or dec < best[1] or (dec == best[1] and trig < best[2])):
        best = (c, dec, trig)
# a route abstains when its logit is strictly above the threshold: just under that cut, so that it
# decides every row as "abstain at the cut or above" does (with the fitting rows separable, any
# threshold in the gap under the cut decides them alike; the held-out rows need not agree: see --gap)
cut = best[0] - 1e-9
if "--gap" in sys.argv:  # the same, with the threshold halfway down the gap to the next lower fitting logit
    lower = [v for v in zs if v < best[0]]
    cut = (best[0] + lower[-1]) / 2 if lower else cut
cand = lambda r: z(r) > cut
print(f"candidate: logit p(off) = {beta[2]:+.3f} {beta[0]:+.3f}·z(reach) {beta[1]:+.3f}·z(domain); z: (x − {mu.round(4).tolist()}) / {sd.round(4).tolist()}; abstain at logit > {cut:.4f}")
if "--write-band" in sys.argv:
    # the band as the projections store a logistic abstention model (src/projections/abstention-model.ts)
    band = {"kind": "logistic", "features": ["reach", "domain"], "weights": [float(beta[0]), float(beta[1])], "bias": float(beta[2]),
            "mean": [float(mu[0]), float(mu[1])], "scale": [float(sd[0]), float(sd[1])], "threshold": float(cut), "targetTriggerRate": 0.1}
    json.dump(band, open(sys.argv[sys.argv.index("--write-band") + 1], "w"), indent=1)
print()
parts = [("fitting", lambda r: r["fit"])] + ([("held out", lambda r: not r["fit"])] if "--held-out" in sys.argv else [])
for label, part in parts:
    b, c = rates(base, part), rates(cand, part)
    print(f"{label}: declined / let through (in-domain n, prompts n)")
    print("| library | shipped (%s) | reach + domain |" % ("its band" if baseline else "reach < %.3f" % cut0))
    print("| --- | --- | --- |")
    for name in libs:
        print(f"| {name} ({b[name][2]}, {b[name][3]}) | {b[name][0]:.3f} / {b[name][1]:.3f} | {c[name][0]:.3f} / {c[name][1]:.3f} |")
    mb = [sum(v[i] for v in b.values()) / len(b) for i in (0, 1)]
    mc = [sum(v[i] for v in c.values()) / len(c) for i in (0, 1)]
    print(f"| mean | {mb[0]:.3f} / {mb[1]:.3f} | {mc[0]:.3f} / {mc[1]:.3f} |")
    print()
    if label == "fitting":
        ok = mc[0] <= mb[0] + 1e-12 and mc[1] <= mb[1] + 1e-12 and (mb[0] - mc[0] >= 0.03 - 1e-12 or mb[1] - mc[1] >= 0.03 - 1e-12)
        print("rule (decision.txt):", "met" if ok else "not met")
        print()
