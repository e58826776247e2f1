import json,gzip,sys
for name,path in [("mini","bench/results/2026-11-28-h200-default/l1"),("mini2","bench/results/2026-12-03-h200-mini2-pool/l1"),("large","bench/results/2026-12-03-h200-large-pool/l1")]:
  for split in ["val","test"]:
    n=0;present=0;hitL=0;hitV=0;hitLV=0
    for line in gzip.open(f"{path}/{split}.jsonl.gz","rt"):
      r=json.loads(line); acc=set(r["accepted"]); v=r["verdict"]
      if not v: continue
      n+=1
      if not any(c["skill"] in acc for c in v): continue
      present+=1
      bL=max(v,key=lambda c:c["L"]); bV=max(v,key=lambda c:c["V"])
      hitL+= bL["skill"] in acc; hitV+= bV["skill"] in acc
    print(name,split,"n",n,"present",present,"argmaxL",round(hitL/present,3),"argmaxV",round(hitV/present,3), "pool size", len(v))
