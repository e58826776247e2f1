#!/usr/bin/env bash
# Issue 14: the verdict's read-outs (L and V of each of the glance's top 20) over a study run's glance
# records, on the GPU machine right after study-go.sh, which left them in $HOME/work-<RUN>/ (so the same
# machine, the calls back to back). scripts/backbone/verdict-records.ts does the scoring; this script
# bundles it here and runs it there, validation and test side by side. The same steps were first run by
# hand (docs/history/BACKBONE.md, "gavel-large routed"); this is them, kept.
#
#   here:   bash scripts/device/verdict-go.sh pack                # -> .device/vl/ (carry [".device/vl"])
#   device: RUN=large7 BACKBONE=.device/backbones/gavel-large.gguf LIMIT=540 bash scripts/device/verdict-go.sh run
#
# `run` is resumable (verdict-records.ts skips the tasks already in its output), so a call stopped by
# LIMIT (seconds, per split) is simply repeated. What comes back: $OUT/<RUN>/{val,test}-verdict.jsonl.gz
# and each split's log. Then, here, BM25's read-outs and the table (docs/BACKBONE.md):
#   npx vite-node scripts/device/lexical-records.ts -- ../shared/data/swe-skills-bench/tasks.jsonl OUT val… test…
#
# CANDIDATES=pool: judge each record's recorded pool (its `verdict` entries: a route's glance 20 ∪ BM25 20)
# instead of its glance's top 20 (verdict-records.ts --candidates).
# SPLITS (default "val test"): the splits to judge, side by side. SHARDS (default 1): processes per split,
# each over its own slice of the records (the rate is per process: 0.7-0.8 s a task on one H200 for
# gavel-large, with the card far from busy), then the slices' outputs joined in the records' order.
# Overrides for a dry run on a CPU (one was run with the tiny model): VL_WORK (the run's work
# folder), VL_LIB (tasks.jsonl, golds.jsonl, mit.jsonl), VL_APP (a folder whose node_modules the bundle
# resolves from), VL_THREADS (per process).
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-}
if [ "$mode" = pack ]; then
  rm -rf .device/vl && mkdir -p .device/vl
  # npm packages stay external: on the device they resolve from the staged package (~/gavel/node_modules)
  npx esbuild scripts/backbone/verdict-records.ts --bundle --platform=node --format=esm --packages=external \
    --log-level=warning --outfile=.device/vl/verdict-records.mjs
  du -sh .device/vl
  exit 0
fi
[ "$mode" = run ] || { echo "usage: verdict-go.sh pack | run (RUN=name BACKBONE=path [LIMIT=s])"; exit 2; }
: "${RUN:?set RUN, the study run whose glance records to judge}" "${BACKBONE:?set BACKBONE, the GGUF of the run}"
OUT=${OUT:-/tmp/gavel-out}/$RUN
W=${VL_WORK:-$HOME/work-$RUN}
L=${VL_LIB:-$HOME/lib}
APP=${VL_APP:-$HOME/gavel}
mkdir -p "$OUT"
[ -f .device/vl/verdict-records.mjs ] || { echo "verdict-go.sh: no .device/vl/verdict-records.mjs (run pack here and carry .device/vl)"; exit 2; }
for f in $(for s in ${SPLITS:-val test}; do echo "$W/$s-glance.jsonl"; done) "$L/tasks.jsonl" "$L/golds.jsonl" "$L/mit.jsonl" "$BACKBONE"; do
  [ -f "$f" ] || { echo "verdict-go.sh: missing $f"; exit 2; }
done
# node lives in $HOME/bin on the device (gpu-build.sh put it there; env.sh adds it for train-full.sh,
# but this script runs outside it: a chain once lost its verdict to a bare PATH)
export PATH="$HOME/bin:$PATH"
command -v node >/dev/null || { echo "verdict-go.sh: no node on PATH (\$HOME/bin)"; exit 2; }
# The bundle sits beside the staged package so that its external imports resolve there.
cp .device/vl/verdict-records.mjs "$APP/verdict-records.mjs"
[ -z "${GAVEL_ADDON:-}" ] && [ -f "$APP/addon-path" ] && export GAVEL_ADDON=$(cat "$APP/addon-path")
model=$(readlink -f "$BACKBONE")
SPLITS=${SPLITS:-val test}
SHARDS=${SHARDS:-1}
[[ $SHARDS =~ ^[1-9][0-9]*$ ]] || { echo "verdict-go.sh: SHARDS must be a positive integer"; exit 2; }
nproc_all=$(( $(echo $SPLITS | wc -w) * SHARDS ))
threads=${VL_THREADS:-$(( $(nproc) / nproc_all > 0 ? $(nproc) / nproc_all : 1 ))}
pids=()
for split in $SPLITS; do
  rec="$W/$split-glance.jsonl"
  if [ "$SHARDS" = 1 ]; then
    timeout "${LIMIT:-540}" node "$APP/verdict-records.mjs" --model "$model" --records "$rec" \
      --tasks "$L/tasks.jsonl" --library "$L/golds.jsonl" --library "$L/mit.jsonl" \
      --out "$W/$split-verdict.jsonl" --threads "$threads" ${CANDIDATES:+--candidates "$CANDIDATES"} > "$OUT/$split-verdict.log" 2>&1 &
    pids+=($!)
    continue
  fi
  # slice k holds records k, k + SHARDS, …; each slice resumes from its own output
  n=$(wc -l < "$rec")
  for ((k = 0; k < SHARDS; k++)); do
    awk -v k=$k -v s=$SHARDS '(NR - 1) % s == k' "$rec" > "$W/$split-glance.s$k.jsonl"
    timeout "${LIMIT:-540}" node "$APP/verdict-records.mjs" --model "$model" --records "$W/$split-glance.s$k.jsonl" \
      --tasks "$L/tasks.jsonl" --library "$L/golds.jsonl" --library "$L/mit.jsonl" \
      --out "$W/$split-verdict.s$k.jsonl" --threads "$threads" ${CANDIDATES:+--candidates "$CANDIDATES"} > "$OUT/$split-verdict.s$k.log" 2>&1 &
    pids+=($!)
  done
  echo "$split: $n records in $SHARDS slices"
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=$?; done
for split in $SPLITS; do
  if [ "$SHARDS" != 1 ]; then
    # joined in the records' order (slice k's i-th line is record i * SHARDS + k); a slice cut short by
    # LIMIT leaves the tail of its records unjudged, and the join keeps what was judged
    python3 - "$W/$split-verdict.jsonl" "$SHARDS" <<'PYEOF'
import os, sys
out, shards = sys.argv[1], int(sys.argv[2])
# a slice whose process failed before writing has no file: it joins as empty
parts = [out[: -len(".jsonl")] + f".s{k}.jsonl" for k in range(shards)]
lines = [open(p).read().splitlines() if os.path.exists(p) else [] for p in parts]
with open(out, "w") as f:
    for i in range(max(map(len, lines), default=0)):
        for k in range(shards):
            if i < len(lines[k]): f.write(lines[k][i] + "\n")
PYEOF
    cat "$OUT/$split-verdict".s*.log > "$OUT/$split-verdict.log" && rm -f "$OUT/$split-verdict".s*.log
  fi
  [ -f "$W/$split-verdict.jsonl" ] && gzip -c "$W/$split-verdict.jsonl" > "$OUT/$split-verdict.jsonl.gz"
  echo "$split: $( [ -f "$W/$split-verdict.jsonl" ] && wc -l < "$W/$split-verdict.jsonl" || echo 0) of $(wc -l < "$W/$split-glance.jsonl") tasks judged"
  tail -n 2 "$OUT/$split-verdict.log"
done
# 124: a split ran out of LIMIT (run again to go on); anything else non-zero is a failure
exit $status
