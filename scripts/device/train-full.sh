#!/usr/bin/env bash
# Issue 12's full recipe on the lent GPU machine, in device calls of at most 10 minutes (files under
# $HOME live only while the machine stays warm, so chain the calls back to back):
#
#   here:    bash scripts/device/pack.sh; npx vite-node scripts/device/pack-library.ts -- models/gavel-mini.gguf \
#              512 /tmp/gpu/mit.jsonl ../shared/data/skills-mit.jsonl.gz;
#            cp ../shared/data/swe-skills-bench/skills.jsonl /tmp/gpu/golds.jsonl; bash scripts/device/pack-gpu.sh
#   call 1:  carry [".device/run"]   bash scripts/device/train-full.sh build   (gpu-build.sh, ~240 s)
#   here:    QPS=… TRAIN_LIMIT=… bash scripts/device/train-full.sh prepare   (the masks and BM25 lists,
#            tokenized on this CPU into .device/lib/prepared/, so no device minute goes to them)
#   call 2+: carry [".device/lib"]   bash scripts/device/train-full.sh go      (again until "all done")
#
# On the device `go` starts the training as one detached process (DETACH=1, the default there: states,
# main phase, fine-tune and projections without re-reading anything between calls) and follows its log
# until it ends or the call's deadline; the next `go` follows the same process, then runs the evaluation
# steps. DETACH=0 keeps the older call-bound run (stopped before each deadline, resumed from checkpoints).
# Knobs: LAYER (default 7), BACKBONE (another GGUF instead of gavel-mini), MAIN_STEPS, FT_STEPS, QPS, …
#
# `go` runs the steps below in order, each skipped once done and each resumable, inside DEADLINE
# seconds (default 560) of the call; every exit packs what the lead needs into $OUT/results.tgz (the
# projections, the checkpoints, the training log, the per-query records, the step logs), so a later
# call on a fresh machine can go on from .device/lib/seed/ (see full-eval.sh) after restaging:
#   train-main   gavel train --queries all --device cuda (states of TRAIN_LIMIT skills at ℓ* cached
#                under $HOME/states; BM25 hard and in-batch negatives), stopped TRAIN_MARGIN s before
#                the deadline; a call that ends with the main phase unfinished caps the phase at the
#                step reached (MAIN_STEPS is an upper bound: the phase trains for what the calls allow)
#   train-ft     the W_q fine-tune against the ε-cover keys (FT_STEPS), then the projections file
#   install-*    the 49 SWE-Skills-Bench golds and the packed public library into $HOME/bank, the
#                library's states read from the training's cache (REUSE_STATES=1, the default)
#   val-glance   gavel eval --methods glance on batches 1-5 (validation: the split recipe choices are
#                judged on), per-query records; first, so that no choice waits on a test figure
#   test-glance  the same on batches 6-10 (test)
#   sub-1k/5k    the glance on 1K and 5K-skill libraries holding the golds (SUBSETS=1)
#   test-ruling  the full ruling on batches 6-10 (RULING=1)
# ℓ* = 7: the trained layer scan's pick on batches 1-5 (docs/BACKBONE.md); no choice here reads 6-10.
# Every SWE-Skills-Bench task text is screened out of the pseudo-queries (--exclude-tasks), and no
# skill named like a benchmark gold gives a query (--exclude).
#
# A finished main checkpoint can become projections here without the fine-tune (scripts/device/
# ckpt-to-projections.ts); put it in .device/lib/seed/trained.gguf and `go` skips training.
#
# Simulate it end to end on a CPU (tiny scale, no CUDA): SIM=1 bash scripts/device/train-full.sh go
# with G, L, W, OUT pointing at local folders (see the SIM block).
set -uo pipefail
cd "$(dirname "$0")/../.."
t0=$(date +%s)
mode=${1:-go}
if [ "$mode" = build ]; then
  # the CUDA build, its addon and libraries sent back in pieces (gpu-stage.sh can restage them)
  PACK_LIBS=${PACK_LIBS-1} SKIP_CHECKS=${SKIP_CHECKS:-1} bash scripts/device/gpu-build.sh
  exit $?
fi

if [ "$mode" = prepare ]; then
  # Here, on the CPU, before the device calls: the states pass's masks and BM25 look-alikes, tokenized
  # with no forward pass (gavel train --prepare-only), into .device/lib/prepared/<cache key>/ (carried
  # with .device/lib; `go` seeds the states cache from it, so the device spends no minute on them).
  # Same knobs as `go` (QPS, TRAIN_LIMIT, …): the file's name hashes the inputs, so a mismatch is ignored.
  SIM=1; L=${L:-/tmp/tf-prep/lib}; mkdir -p "$L"
  [ -f "$L/mit.jsonl" ] || xz -dc .device/lib/mit.jsonl.xz > "$L/mit.jsonl"
  for f in golds.jsonl tasks.jsonl extra.jsonl; do [ -f ".device/lib/$f" ] && cp ".device/lib/$f" "$L/"; done
  PREP_DIR=$PWD/.device/lib/prepared; STATES=$PREP_DIR
fi

if [ -n "${SIM:-}" ]; then
  # CPU simulation: the staged package is this tree, inputs prepared by the caller under $L.
  OUT=${OUT:-/tmp/tf-sim/out}; G=$PWD; L=${L:-/tmp/tf-sim/lib}; W=${W:-/tmp/tf-sim/work}
  mkdir -p "$OUT" "$L" "$W"; cp models/gavel-mini.gguf "$W/" 2>/dev/null || true
  DEVICE=${DEVICE:-cpu}; MODEL=${MODEL:-$W/gavel-mini.gguf}
else
  # A cold machine (the last call ended over 30 s before this one started) has no staged package:
  # say so at once; run `build` again (calls that return large files, or a slow reply, lose the machine).
  [ -f "$HOME/gavel/addon-path" ] || { echo "train-full.sh: no staged package under \$HOME/gavel (a fresh machine): run 'train-full.sh build' first"; exit 3; }
  source scripts/device/env.sh
  export GAVEL_LOG=${GAVEL_LOG:-1}
  export GGML_CUDA_DISABLE_GRAPHS=${GGML_CUDA_DISABLE_GRAPHS:-1}
  export UV_THREADPOOL_SIZE=${UV_THREADPOOL_SIZE:-$(nproc)}   # projections and covers run in libuv's pool
  DEVICE=${DEVICE:-cuda}; MODEL=$W/gavel-mini.gguf
  # BACKBONE=path/to/other.gguf (carried, e.g. issue 14's gavel-mini2): trained and evaluated instead of
  # gavel-mini, copied once into $W; WORK_DIR (env.sh) keeps each backbone's work apart (states, bank, records).
  if [ -n "${BACKBONE:-}" ]; then
    MODEL="$W/$(basename "$BACKBONE")"; [ -f "$MODEL" ] || cp "$BACKBONE" "$MODEL"
  fi
fi
END=$((t0 + ${DEADLINE:-560}))
left() { echo $((END - $(date +%s))); }
log() { echo "[$(( $(date +%s) - t0 ))s] $*" | tee -a "$OUT/train-full.log"; }
R=$PWD
HOME_STATES=${STATES:-$W/states}
BANK=${BANK:-$W/bank}
mkdir -p "$W/logs"

# Seeds a machine that lost $W: checkpoints, logs and records an earlier call sent back.
for f in "$R"/.device/lib/seed/*; do [ -f "$f" ] && [ ! -f "$W/$(basename "$f")" ] && cp "$f" "$W/"; done
trap 'cp "$OUT/train-full.log" "$W/logs/" 2>/dev/null; (cd "$W" && tar -czf "$OUT/results.tgz" $(ls -d *.jsonl *.gguf *.ckpt *.done main-steps logs 2>/dev/null | grep -v -x -e gavel-mini.gguf -e "$(basename "$MODEL")")) 2>/dev/null; ls -la "$OUT"' EXIT

step() { # name, then the command; skipped when $W/<name>.done exists; 0 ok, 75 unfinished, else failed
  local name=$1; shift
  [ -f "$W/$name.done" ] && { log "$name: done before"; return 0; }
  local t=$(left)
  [ "$t" -lt 20 ] && { log "$name: no time left"; return 124; }
  log "$name: start ($t s left)"
  timeout -s INT "$t" "$@" > "$W/logs/$name.out" 2>&1
  local rc=$?
  tail -3 "$W/logs/$name.out" | tee -a "$OUT/train-full.log"
  [ $rc -eq 0 ] && { touch "$W/$name.done"; log "$name: ok"; return 0; }
  log "$name: rc $rc"
  return $rc
}

CLI="node $G/dist/cli/gavel.js"
EXCL=$(node "$R/scripts/device/gold-names.mjs" "$L/golds.jsonl")
MAIN_STEPS=${MAIN_STEPS:-20000}
[ -f "$W/main-steps" ] && MAIN_STEPS=$(cat "$W/main-steps")
FT_STEPS=${FT_STEPS:-300}
TRAIN=(train --model "$MODEL" --library "$L/mit.jsonl" --queries all --queries-per-skill "${QPS:-2}" --layer "${LAYER:-7}"
  --dim 256 --skill-tokens 512 --context 2048 --limit "${TRAIN_LIMIT:-8000}" --exclude "$EXCL" --exclude-tasks "$L/tasks.jsonl"
  --batch-tasks "${BATCH_TASKS:-64}" --batch-tokens "${BATCH_TOKENS:-200000}" --negatives "${NEG:-7}" --hard-negatives "${HARD:-4}" --in-batch
  --glance-negatives "${GLANCE_NEG:-0}" --refresh-every "${REFRESH_EVERY:-2000}" --refresh-tasks "${REFRESH_TASKS:-1024}"
  --val-fraction "${VAL_FRACTION:-0.003}" --val-every "${VAL_EVERY:-300}" --log-every 50 --checkpoint-every "${CKPT_EVERY:-100}"
  --finetune-steps "$FT_STEPS" --cache "$HOME_STATES" --out "$W/trained.gguf" --log-file "$W/train-log.jsonl"
  --device "$DEVICE" --precision "${PRECISION:-bf16}" --threads "$(nproc)" --seed "${SEED:-3}" --resume
  --states-workers "${STATES_WORKERS:-1}")
# EXTRA=1: the pseudo-labelled task statements of scripts/distill ($L/extra.jsonl, carried in .device/lib)
# join the training split, each EXTRA_REPEAT times (the distillation of issue 34's item 3)
[ "${EXTRA:-0}" = 1 ] && TRAIN+=(--extra-pairs "$L/extra.jsonl" --extra-repeat "${EXTRA_REPEAT:-1}")

if [ "$mode" = prepare ]; then
  rm -rf "$PREP_DIR"
  $CLI "${TRAIN[@]}" --steps "$MAIN_STEPS" --prepare-only
  rm -f "$PREP_DIR"/*/about.json; xz -T2 -9 "$PREP_DIR"/*/prepared-*.json   # carried: every MiB counts
  ls -la "$PREP_DIR"/*
  exit 0
fi
# Prepared inputs from `prepare` (here): beside the states, where the states pass looks for them.
if [ -d "$R/.device/lib/prepared" ]; then
  for f in "$R"/.device/lib/prepared/*/prepared-*.json.xz; do
    [ -f "$f" ] || continue
    d="$HOME_STATES/$(basename "$(dirname "$f")")"; t="$d/$(basename "$f" .xz)"
    mkdir -p "$d"; [ -f "$t" ] || { xz -dc "$f" > "$t.tmp" && mv "$t.tmp" "$t" && log "prepared inputs seeded: $t"; }
  done
fi

# DETACH=1 (the default on the device): one training process for the whole recipe (states, main phase,
# fine-tune, projections), started by the first `go` with setsid so that it outlives its call; every
# `go` then follows its log until it ends or the call's deadline comes. The states stay in memory from
# the first step to the last (a call-bound run re-read 14 GB of cached states in every call).
PIDF="$W/train.pid"
alive() { [ -f "$PIDF" ] && kill -0 "$(cat "$PIDF")" 2>/dev/null; }
if [ ! -f "$W/trained.gguf" ] && [ "${DETACH:-$([ -n "${SIM:-}" ] && echo 0 || echo 1)}" = 1 ]; then
  if ! alive; then
    out="$W/logs/train-detached-$(date +%s).out"
    log "train: start detached (main steps $MAIN_STEPS, fine-tune $FT_STEPS), log $out"
    setsid nohup $CLI "${TRAIN[@]}" --steps "$MAIN_STEPS" > "$out" 2>&1 < /dev/null &
    echo $! > "$PIDF"
  fi
  log_now=$(ls -t "$W"/logs/train-detached-*.out | head -1)
  seen=0
  while alive && [ "$(left)" -gt "${TRAIN_MARGIN:-45}" ]; do
    sleep 15
    n=$(wc -l < "$log_now")
    # the new lines, thinned: every step line would drown the call's output
    [ "$n" -gt "$seen" ] && sed -n "$((seen + 1)),${n}p" "$log_now" | grep -v -E "^(main|finetune) step [0-9]*[1-9]50?/" | tail -n 6
    seen=$n
  done
  if [ ! -f "$W/trained.gguf" ]; then
    if alive; then log "train: still running detached (pid $(cat "$PIDF")): call go again"; exit 0; fi
    log "train: the detached run ended without trained.gguf"; tail -n 20 "$log_now"; exit 1
  fi
  log "train: done"
fi

# Main phase: stop TRAIN_MARGIN s before the deadline; unfinished at the end of a call → cap at the
# step reached, so the next call runs the fine-tune (the loop's settings do not hash the step count).
if [ ! -f "$W/trained.gguf" ]; then
  stop=$(( $(left) - ${TRAIN_MARGIN:-45} ))
  if [ "$stop" -gt 30 ]; then
    log "train: start ($stop s of training time, main steps ≤ $MAIN_STEPS, fine-tune $FT_STEPS)"
    timeout -s INT $(( stop + 40 )) $CLI "${TRAIN[@]}" --steps "$MAIN_STEPS" --stop-after "$stop" > "$W/logs/train-$(date +%s).out" 2>&1
    rc=$?
    tail -4 "$(ls -t "$W"/logs/train-*.out | head -1)" | tee -a "$OUT/train-full.log"
    log "train: rc $rc"
    if [ $rc -eq 75 ] && [ ! -f "$W/main-steps" ] && [ "${CAP_MAIN:-1}" = 1 ]; then
      s=$(node -e 'let s=0;for(const l of require("fs").readFileSync(process.argv[1],"utf8").split("\n"))if(l){const p=JSON.parse(l);if(p.phase==="main")s=Math.max(s,p.step)}console.log(s)' "$W/train-log.jsonl")
      # only once the main phase has run (a states pass cut by the deadline leaves no step)
      if [ "$s" -gt 0 ]; then echo "$s" > "$W/main-steps"; log "train: main phase capped at step $s"; fi
    fi
  else log "train: no time left in this call"; exit 0; fi
  [ -f "$W/trained.gguf" ] || exit 0
fi
[ -f "$W/proj.gguf" ] || cp "$W/trained.gguf" "$W/proj.gguf"
# TRAIN_ONLY=1: stop here (the evaluation runs on another machine with full-eval.sh, PROJ=trained.gguf)
[ "${TRAIN_ONLY:-0}" = 1 ] && { log "trained (TRAIN_ONLY)"; exit 0; }

A="--model $MODEL --projections $W/proj.gguf --context 2048 --skill-budget 512"
# REUSE_STATES=1 (default): installs read the trainer's states cache, so the skills it holds (same
# tokens at the same layer of the same model file: --skill-budget 512 = --skill-tokens 512) skip their
# forward pass (~250 s at 30,544 skills on gavel-mini); a miss is computed as before, nothing is written.
SC=""; [ "${REUSE_STATES:-1}" = 1 ] && [ -d "$HOME_STATES" ] && SC="--states-cache $HOME_STATES"
I="--jobs ${JOBS:-8} --threads ${INSTALL_THREADS:-4} $SC"
LIBS="--library $L/golds.jsonl --library $L/mit.jsonl"
step install-golds $CLI install "$L/golds.jsonl" $I $A --bank "$BANK" || exit 0
step install-mit $CLI install "$L/mit.jsonl" $I $A --bank "$BANK" || exit 0
# validation (batches 1-5) first: every choice is read from it before any test figure is seen
# ALSO=1: the glance evals also give g to BM25's full-text leaders ($L/also.jsonl, also-list.ts), so that
# the first stage g + βB replays offline over the union of both pools (select-default.ts's pool)
GM="glance"; [ "${ALSO:-0}" = 1 ] && [ -f "$L/also.jsonl" ] && GM="bm25,glance --pool 20 --lexical-pool 20 --also $L/also.jsonl"
step val-glance $CLI eval --tasks "$L/tasks.jsonl" $LIBS --batches 1-5 --methods $GM --per-query "$W/val-glance.jsonl" --resume $A --bank "$BANK" || exit 0
step test-glance $CLI eval --tasks "$L/tasks.jsonl" $LIBS --batches 6-10 --methods $GM --per-query "$W/test-glance.jsonl" --resume $A --bank "$BANK" || exit 0
# INDEX=1: validation's glance again through the bank's glance index (GAVEL_GLANCE_INDEX=on: trained on
# this bank at its first use, then the staged search), for its top-20 agreement with the exact glance
# and Hit@1 on a real bank (compare val-glance.jsonl with val-glance-index.jsonl)
if [ "${INDEX:-0}" = 1 ]; then
  step val-glance-index env GAVEL_GLANCE_INDEX=on $CLI eval --tasks "$L/tasks.jsonl" $LIBS --batches 1-5 --methods glance --per-query "$W/val-glance-index.jsonl" --resume $A --bank "$BANK" || exit 0
fi
if [ "${SUBSETS:-1}" = 1 ]; then
  for n in 1000 5000; do
    k=$((n - $(wc -l < "$L/golds.jsonl")))
    [ -f "$L/mit$n.jsonl" ] || head -n "$k" "$L/mit.jsonl" > "$L/mit$n.jsonl"
    step "sub$n-install" sh -c "$CLI install $L/golds.jsonl $I $A --bank $W/bank$n && $CLI install $L/mit$n.jsonl $I $A --bank $W/bank$n" || exit 0
    step "sub$n-glance" $CLI eval --tasks "$L/tasks.jsonl" --library "$L/golds.jsonl" --library "$L/mit$n.jsonl" --batches 6-10 --methods glance \
      --per-query "$W/sub$n-glance.jsonl" --resume $A --bank "$W/bank$n" || exit 0
  done
fi
if [ "${RULING:-1}" = 1 ]; then
  step test-ruling $CLI eval --tasks "$L/tasks.jsonl" $LIBS --batches 6-10 --methods glance,ruling,gL,gV --pool 20 --per-query "$W/test-ruling.jsonl" --resume $A --bank "$BANK" || exit 0
fi
log "all done"
