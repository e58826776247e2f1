#!/usr/bin/env bash
# Several runs of train-full.sh's recipe at once on one GPU machine: issue 14's backbones and layers beside
# issue 12's gavel-mini, each in its own work folder ($HOME/work-<name>) and its own $OUT/<name>/. Every
# call runs `go` for each run and waits for all: the first call starts each run's detached training, later
# calls follow them, then install and evaluate (train-full.sh's steps, each skipped once done).
#
#   RUNS="mini:-:7:SUBSETS=1,STATES_WORKERS=4 m2l3:.device/backbones/gavel-mini2.gguf:3" \
#     DEADLINE=580 … bash scripts/device/study-go.sh
#
# A run is name:backbone:layer[:K=V,K=V] (backbone "-": gavel-mini); the knobs shared by all runs come
# from the environment (train-full.sh's). gavel-mini's small kernels leave the card mostly idle, so runs
# overlap well; each run's phases are logged as if alone, and a run's wall time here bounds its time alone.
# What comes back: per run results.tgz and stdout.txt (8 files at most: four runs).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gavel-out}
[ -n "${RUNS:-}" ] || { echo "study-go.sh: set RUNS (name:backbone:layer[:K=V,…] …)"; exit 2; }
df -h "$HOME" | tail -1
# States workers (llama.cpp contexts filling the states cache) per run, unless set: 4 for a lone run
# (one worker took ~14 minutes on gavel-large's states once), fewer when runs share the card.
nruns=$(echo $RUNS | wc -w)
export STATES_WORKERS=${STATES_WORKERS:-$(( nruns >= 4 ? 1 : 4 / nruns ))}
# The inputs, unpacked once here: env.sh would unpack them in every run at the same moment.
mkdir -p "$HOME/lib"
[ -f "$HOME/lib/mit.jsonl" ] || xz -dc .device/lib/mit.jsonl.xz > "$HOME/lib/mit.jsonl"
for f in golds.jsonl tasks.jsonl offdomain.jsonl; do [ -f ".device/lib/$f" ] && cp ".device/lib/$f" "$HOME/lib/"; done
for r in $RUNS; do
  IFS=: read -r name bb layer extra <<< "$r"
  mkdir -p "$OUT/$name"
  (
    export OUT="$OUT/$name" LAYER="$layer" WORK_DIR="$HOME/work-$name"
    if [ "$bb" = - ]; then unset BACKBONE; else export BACKBONE="$bb"; fi
    IFS=, read -ra kv <<< "${extra:-}"
    for e in "${kv[@]}"; do export "${e?}"; done
    bash scripts/device/train-full.sh go > "$OUT/stdout.txt" 2>&1
  ) &
  sleep 5   # env.sh re-copies the small inputs at each run's start: let one run read them before the next
done
wait
rm -f "$OUT"/*/train-full.log   # each is inside its results.tgz (logs/)
df -h "$HOME" | tail -1
for r in $RUNS; do
  name=${r%%:*}
  echo "== $name"; grep -v -E "^(main|finetune) step" "$OUT/$name/stdout.txt" | tail -n 10
done
