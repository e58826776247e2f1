#!/usr/bin/env bash
# On the GPU machine (after gpu-stage.sh, with .device/lib and .device/scan carried): the trained layer
# scan of the paper's appendix B on validation tasks. Each .device/scan/p<ℓ>.gguf holds projections
# trained at depth ℓ under one frozen recipe (docs/BACKBONE.md); each installs the 49 benchmark golds
# plus the first 1,000 public skills and ranks the first VAL_PER_BATCH tasks of each of batches 1-5
# by the glance. The best depth (R@20, then Hit@1, then the shallower) goes to $HOME/work/layer.txt,
# which full-eval.sh trains at. Test batches 6-10 are never read here.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
head -"${SCAN_SKILLS:-1000}" "$L/mit.jsonl" > "$L/mit1000.jsonl"
node "$G/scripts/device/val-tasks.mjs" "$L/tasks.jsonl" "$L/val-tasks.jsonl" "${VAL_PER_BATCH:-10}"
mkdir -p "$W/scan"
cp .device/scan/p*.gguf "$W/scan/"
cd "$G"
CLI="node dist/cli/gavel.js"
for p in "$W"/scan/p*.gguf; do
  l=$(basename "$p" .gguf); l=${l#p}
  A="--model $W/gavel-mini.gguf --projections $p --bank $HOME/scan-bank-$l --context 2048 --skill-budget 512"
  t=$(date +%s)
  $CLI install "$L/golds.jsonl" $A > "$W/scan/install-$l.log" 2>&1 && $CLI install "$L/mit1000.jsonl" $A >> "$W/scan/install-$l.log" 2>&1
  $CLI eval --tasks "$L/val-tasks.jsonl" --library "$L/golds.jsonl" --library "$L/mit1000.jsonl" --batches 1-5 --methods glance --json $A > "$W/scan/eval-$l.json" 2> "$W/scan/eval-$l.err"
  node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).table[0];console.log(JSON.stringify({layer:+process.argv[2],hit1:r.hitAt1,r20:r.recallAt20,n:r.n,seconds:+process.argv[3]}))' \
    "$W/scan/eval-$l.json" "$l" "$(( $(date +%s) - t ))" | tee -a "$W/scan/results.jsonl" "$OUT/layer-scan.jsonl"
done
node -e 'const rs=require("fs").readFileSync(process.argv[1],"utf8").split("\n").filter(Boolean).map(JSON.parse);
  rs.sort((a,b)=>b.r20-a.r20||b.hit1-a.hit1||a.layer-b.layer);console.log(rs[0].layer)' "$W/scan/results.jsonl" > "$W/layer.txt"
echo "chosen layer: $(cat "$W/layer.txt")" | tee -a "$OUT/layer-scan.jsonl"
