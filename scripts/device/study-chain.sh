#!/usr/bin/env bash
# Issue 14: a backbone's whole router recipe as ONE detached process on the GPU machine, chained after
# its training: wait for the trained GGUF (study-run.sh's export), then study-go.sh (train-full.sh's
# states, main phase, fine-tune, installs, validation then test glance), then the verdict's read-outs
# (verdict-go.sh), the validation split's as soon as its glance is done, beside the test glance.
# Device calls only keep the machine held and follow the log, so no phase waits on a call boundary and
# none is cut by one; a machine goes back 30 minutes after it was started, at the end of the call in
# flight, so the last call (started before then) may run its whole 10 minutes.
#
#   start   (carry [".device/lib", ".device/vl"]; after `train-full.sh build` on the same machine)
#           CHAIN_RUN=large7 CHAIN_LAYER=7 CHAIN_WAIT=$HOME/runs/gavel-large/gavel-large.gguf \
#           CHAIN_KNOBS="QPS=2 …" bash scripts/device/study-chain.sh start
#           copies scripts/ and the carried .device/lib and .device/vl to $HOME/chain/repo (a later
#           call's tree cannot change them under the running chain), then starts the chain (setsid)
#   follow  bash scripts/device/study-chain.sh follow [SECONDS]: prints the chain's new log lines until
#           it ends (exit 0), fails (1) or SECONDS pass (3, default 540)
#   collect bash scripts/device/study-chain.sh collect: the chain's outputs into $OUT as one tar
#           (the chain log; per run results.tgz, stdout, the verdict records and logs)
#   status  where the chain is
#
# CHAIN_WAIT: a file whose arrival starts the recipe (with CHAIN_WAIT_ALSO, e.g. the run's
# metrics.json, written after the export); CHAIN_KNOBS: train-full.sh's knobs as K=V words;
# CHAIN_SHARDS: verdict processes per split (default 2). Everything lives under $HOME/chain.
set -uo pipefail
cd "$(dirname "$0")/../.."
C="$HOME/chain"
mode=${1:-}
case "$mode" in
start)
  : "${CHAIN_RUN:?set CHAIN_RUN (a name for the run)}" "${CHAIN_LAYER:?set CHAIN_LAYER}" "${CHAIN_WAIT:?set CHAIN_WAIT (the GGUF to wait for)}"
  [ -f "$HOME/gavel/addon-path" ] || { echo "study-chain.sh: no staged build under \$HOME/gavel: run train-full.sh build first"; exit 3; }
  for d in .device/lib .device/vl; do [ -d "$d" ] || { echo "study-chain.sh: $d was not carried"; exit 2; }; done
  if [ -f "$C/pid" ] && kill -0 "$(cat "$C/pid")" 2>/dev/null; then echo "study-chain.sh: a chain is running (pid $(cat "$C/pid"))"; exit 2; fi
  rm -rf "$C" && mkdir -p "$C/repo/.device" "$C/out"
  cp -r scripts "$C/repo/" && cp -r .device/lib .device/vl "$C/repo/.device/"
  [ -f models/gavel-mini.gguf ] && mkdir -p "$C/repo/models" && cp models/gavel-mini.gguf "$C/repo/models/"
  export CHAIN_RUN CHAIN_LAYER CHAIN_WAIT CHAIN_WAIT_ALSO=${CHAIN_WAIT_ALSO:-} CHAIN_KNOBS=${CHAIN_KNOBS:-} CHAIN_SHARDS=${CHAIN_SHARDS:-2}
  setsid nohup bash "$C/repo/scripts/device/study-chain.sh" chain > "$C/chain.log" 2>&1 < /dev/null &
  echo $! > "$C/pid"
  echo "chain started (pid $(cat "$C/pid")): $CHAIN_RUN at layer $CHAIN_LAYER after $CHAIN_WAIT"
  ;;
chain)
  # the chain itself, started by `start` from the copy under $HOME/chain/repo
  t0=$(date +%s)
  say() { echo "[chain +$(( $(date +%s) - t0 ))s] $*"; }
  say "waiting for $CHAIN_WAIT $CHAIN_WAIT_ALSO"
  while [ ! -f "$CHAIN_WAIT" ] || { [ -n "$CHAIN_WAIT_ALSO" ] && [ ! -f "$CHAIN_WAIT_ALSO" ]; }; do sleep 5; done
  say "backbone ready: $(stat -c %s "$CHAIN_WAIT") bytes"
  [ -n "$CHAIN_KNOBS" ] && export $CHAIN_KNOBS
  V="$HOME/work-$CHAIN_RUN"
  # the validation split's verdict starts once its glance is done, beside the test glance
  ( while [ ! -f "$V/val-glance.done" ] && [ ! -f "$C/recipe.done" ]; do sleep 5; done
    if [ -f "$V/val-glance.done" ]; then
      say "verdict (val) starts"
      OUT="$C/out" RUN=$CHAIN_RUN BACKBONE="$CHAIN_WAIT" SPLITS=val SHARDS=$CHAIN_SHARDS LIMIT=3000 \
        bash scripts/device/verdict-go.sh run > "$C/verdict-val.txt" 2>&1
      say "verdict (val) rc $?"; tail -n 4 "$C/verdict-val.txt"
    fi ) &
  vpid=$!
  say "recipe starts"
  OUT="$C/out" DEADLINE=${DEADLINE:-100000} RUNS="$CHAIN_RUN:$CHAIN_WAIT:$CHAIN_LAYER" bash scripts/device/study-go.sh
  say "recipe rc $?"
  touch "$C/recipe.done"
  if [ -f "$V/test-glance.done" ]; then
    say "verdict (test) starts"
    OUT="$C/out" RUN=$CHAIN_RUN BACKBONE="$CHAIN_WAIT" SPLITS=test SHARDS=$CHAIN_SHARDS LIMIT=3000 bash scripts/device/verdict-go.sh run
    say "verdict (test) rc $?"
  fi
  wait $vpid
  say "chain done"
  ;;
follow)
  MAX=${2:-540}
  end=$(( $(date +%s) + MAX ))
  seen=$(cat "$C/seen" 2>/dev/null || echo 0)
  while :; do
    n=$(wc -l < "$C/chain.log")
    # the new lines, thinned: every step line would drown the call's output
    [ "$n" -gt "$seen" ] && sed -n "$((seen + 1)),${n}p" "$C/chain.log" | grep -v -E "^(main|finetune) step [0-9]*[1-9]50?/|^states: (skill|query) " | tail -n 15
    seen=$n; echo "$seen" > "$C/seen"
    if grep -q "chain done" "$C/chain.log"; then exit 0; fi
    kill -0 "$(cat "$C/pid")" 2>/dev/null || { echo "study-chain.sh: the chain ended without 'chain done'"; exit 1; }
    [ "$(date +%s)" -ge "$end" ] && { echo "still running after ${MAX}s"; exit 3; }
    sleep 10
  done
  ;;
collect)
  # one file (a call brings back at most 8): the chain log, and per run results.tgz, stdout and the
  # verdict records with their logs
  OUT=${OUT:?OUT must be set (the device tool sets it)}
  (cd "$C" && tar -cf "$OUT/chain-results.tar" chain.log $(cd "$C" && ls -d verdict-val.txt out/*/results.tgz out/*/stdout.txt out/*/*-verdict.* 2>/dev/null))
  tar -tvf "$OUT/chain-results.tar"
  ;;
status)
  tail -n 5 "$C/chain.log" 2>/dev/null || echo "no chain"
  kill -0 "$(cat "$C/pid" 2>/dev/null)" 2>/dev/null && echo running || echo "not running"
  ;;
*)
  sed -n '2,25p' "$0"; exit 2
  ;;
esac
