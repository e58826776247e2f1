"""How often a backbone's verdict alone picks a present gold in the shipped route's recorded pools.

For each NAME=DIR (a folder of per-query records, {val,test}.jsonl.gz, whose `verdict` entries carry
L and V over a task's pool), prints per split: the tasks, those whose pool holds an accepted skill,
and among those how often argmax L and argmax V is one of them.

  python3 scripts/select/pool-accuracy.py mini=bench/results/2026-11-28-h200-default/l1 \
    mini2=bench/results/2026-12-03-h200-mini2-pool/l1 large=bench/results/2026-12-03-h200-large-pool/l1
"""
import gzip
import json
import sys

for arg in sys.argv[1:]:
    name, path = arg.split("=", 1)
    for split in ["val", "test"]:
        n = present = hitL = hitV = 0
        for line in gzip.open(f"{path}/{split}.jsonl.gz", "rt"):
            r = json.loads(line)
            acc, v = set(r["accepted"]), r["verdict"]
            if not v:
                continue
            n += 1
            if not any(c["skill"] in acc for c in v):
                continue
            present += 1
            hitL += max(v, key=lambda c: c["L"])["skill"] in acc
            hitV += max(v, key=lambda c: c["V"])["skill"] in acc
        print(name, split, "n", n, "present", present, "argmaxL", round(hitL / present, 3), "argmaxV", round(hitV / present, 3), "pool size", len(v))
