import sys, json, gzip, re, importlib.util
spec = importlib.util.spec_from_file_location("wa", "scripts/experiments/word-assoc.py"); wa = importlib.util.module_from_spec(spec); sys.argv=["x"]; spec.loader.exec_module(wa)
import numpy as np
golds = [json.loads(l) for l in open("../shared/data/swe-skills-bench/skills.jsonl")]
pub = []
with gzip.open("../shared/data/skills-mit.jsonl.gz", "rt") as f:
    for i, l in enumerate(f):
        if i >= 9951: break
        pub.append(json.loads(l))
lib = golds + pub
seen=set(); lib2=[]
for d in lib:
    if d["id"] in seen: continue
    seen.add(d["id"]); lib2.append(d)
print(len(lib2), "skills")
tasks = [json.loads(l) for l in open("../shared/data/swe-skills-bench/tasks.jsonl")]
for k1, b in [(1.2, 0.75), (3.0, 1.0)]:
    bm = wa.Bm25(lib2, k1, b); ids = {x: i for i, x in enumerate(bm.ids)}
    for name, rng in [("val", range(1, 6)), ("test", range(6, 11))]:
        ts = [t for t in tasks if int(re.match(r"batch(\d+)/", t["id"]).group(1)) in rng and t["gold_skill_ids"][0] in ids]
        h1 = r20 = 0
        for t in ts:
            s = bm.scores(dict(__import__("collections").Counter(wa.words(t["text"]))))
            g = ids[t["gold_skill_ids"][0]]; rank = int((s > s[g]).sum())
            h1 += rank == 0; r20 += rank < 20
        print(f"k1 {k1} b {b} {name} n {len(ts)} Hit@1 {h1/len(ts):.3f} R@20 {r20/len(ts):.3f}")
