#!/usr/bin/env bash
# ℓ* by validation for a backbone too large to train a scan on this CPU (issue 14's gavel-large): the
# trained layer scan of layer-scan.sh, with each depth's projections trained on the GPU machine by one
# small frozen recipe, in one call. For each depth in LAYERS:
#   1. gavel train on the first SCAN_SKILLS public skills (the benchmark's golds excluded by name, every
#      task text screened out of the pseudo-queries, as train-full.sh): STEPS main steps, no fine-tune;
#   2. install the 49 golds and the same SCAN_SKILLS skills (states read from the trainer's cache);
#   3. the glance on every validation task (batches 1-5); batches 6-10 are never read.
# One line of JSON a depth goes to $OUT/layer-scan.jsonl, its per-task records to $OUT/val-<ℓ>.jsonl.gz;
# the best (R@20, then Hit@1, then the shallower) is printed last. Each depth's states are deleted after its glance (a 768-wide model's fill the disk).
#
#   device, after gpu-build.sh, carrying .device/lib:
#     BACKBONE=.device/backbones/gavel-large.gguf LAYERS="4 7 10 12" bash scripts/device/layer-scan-gpu.sh
#   this CPU, end to end at toy scale (the tree's dist and gavel-mini):
#     SIM=1 LAYERS="3 5" SCAN_SKILLS=40 STEPS=3 bash scripts/device/layer-scan-gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
R=$PWD
if [ -n "${SIM:-}" ]; then
  OUT=${OUT:-/tmp/ls-sim/out}; G=$R; L=${L:-/tmp/ls-sim/lib}; W=${W:-/tmp/ls-sim/work}
  mkdir -p "$OUT" "$L" "$W"
  [ -f "$L/mit.jsonl" ] || zcat ../shared/data/skills-mit.jsonl.gz | head -n "$(( ${SCAN_SKILLS:-40} + 20 ))" > "$L/mit.jsonl"
  [ -f "$L/golds.jsonl" ] || cp ../shared/data/swe-skills-bench/skills.jsonl "$L/golds.jsonl"
  [ -f "$L/tasks.jsonl" ] || cp ../shared/data/swe-skills-bench/tasks.jsonl "$L/tasks.jsonl"
  DEVICE=${DEVICE:-cpu}; MODEL=${BACKBONE:-$R/models/gavel-mini.gguf}
else
  [ -f "$HOME/gavel/addon-path" ] || { echo "layer-scan-gpu.sh: no staged package under \$HOME/gavel: run gpu-build.sh first"; exit 3; }
  W=${WORK_DIR:-$HOME/work-scan}
  source scripts/device/env.sh
  export GGML_CUDA_DISABLE_GRAPHS=${GGML_CUDA_DISABLE_GRAPHS:-1} UV_THREADPOOL_SIZE=${UV_THREADPOOL_SIZE:-$(nproc)}
  DEVICE=${DEVICE:-cuda}
  [ -n "${BACKBONE:-}" ] || { echo "layer-scan-gpu.sh: set BACKBONE (a carried GGUF)"; exit 2; }
  MODEL=$W/$(basename "$BACKBONE"); [ -f "$MODEL" ] || cp "$BACKBONE" "$MODEL"
fi
N=${SCAN_SKILLS:-2000}
head -n "$N" "$L/mit.jsonl" > "$L/mit-scan.jsonl"
EXCL=$(node "$R/scripts/device/gold-names.mjs" "$L/golds.jsonl")
CLI="node $G/dist/cli/gavel.js"
mkdir -p "$W/scan"
: > "$OUT/layer-scan.jsonl"
for l in ${LAYERS:?set LAYERS, e.g. \"4 7 10 12\"}; do
  t=$(date +%s)
  S="$W/scan/states-$l"; P="$W/scan/p$l.gguf"; B="$W/scan/bank-$l"
  rm -rf "$B"
  $CLI train --model "$MODEL" --library "$L/mit-scan.jsonl" --queries all --queries-per-skill "${QPS:-2}" --layer "$l" \
    --dim 256 --skill-tokens 512 --context 2048 --limit "$N" --exclude "$EXCL" --exclude-tasks "$L/tasks.jsonl" \
    --batch-tasks "${BATCH_TASKS:-64}" --batch-tokens 200000 --negatives 7 --hard-negatives 4 --in-batch \
    --steps "${STEPS:-400}" --finetune-steps 0 --val-fraction 0.01 --val-every "${STEPS:-400}" --log-every 100 \
    --cache "$S" --out "$P" --device "$DEVICE" --precision "${PRECISION:-bf16}" --threads "$(nproc)" --seed 3 \
    --states-workers "${STATES_WORKERS:-4}" > "$W/scan/train-$l.log" 2>&1 || { echo "layer $l: train failed"; tail -5 "$W/scan/train-$l.log"; continue; }
  tt=$(( $(date +%s) - t ))
  A="--model $MODEL --projections $P --bank $B --context 2048 --skill-budget 512"
  $CLI install "$L/golds.jsonl" $A --states-cache "$S" > "$W/scan/install-$l.log" 2>&1 &&
    $CLI install "$L/mit-scan.jsonl" $A --states-cache "$S" >> "$W/scan/install-$l.log" 2>&1 ||
    { echo "layer $l: install failed"; tail -5 "$W/scan/install-$l.log"; continue; }
  $CLI eval --tasks "$L/tasks.jsonl" --library "$L/golds.jsonl" --library "$L/mit-scan.jsonl" --batches 1-5 --methods glance \
    --per-query "$W/scan/val-$l.jsonl" --json $A > "$W/scan/eval-$l.json" 2> "$W/scan/eval-$l.err" ||
    { echo "layer $l: eval failed"; tail -5 "$W/scan/eval-$l.err"; continue; }
  gzip -c "$W/scan/val-$l.jsonl" > "$OUT/val-$l.jsonl.gz"   # per-task records: the scan's choice can be re-read with intervals
  node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).table[0];
    console.log(JSON.stringify({layer:+process.argv[2],hit1:r.hitAt1,r20:r.recallAt20,n:r.n,trainSeconds:+process.argv[3],seconds:+process.argv[4]}))' \
    "$W/scan/eval-$l.json" "$l" "$tt" "$(( $(date +%s) - t ))" | tee -a "$OUT/layer-scan.jsonl"
  grep -E "val Hit@1" "$W/scan/train-$l.log" | tail -1
  rm -rf "$S" "$B"
done
node -e 'const rs=require("fs").readFileSync(process.argv[1],"utf8").split("\n").filter(Boolean).map(JSON.parse);
  if(!rs.length){console.log("no depth finished");process.exit(1)}
  rs.sort((a,b)=>b.r20-a.r20||b.hit1-a.hit1||a.layer-b.layer);console.log("chosen layer: "+rs[0].layer)' "$OUT/layer-scan.jsonl" | tee -a "$OUT/layer-scan.jsonl"
