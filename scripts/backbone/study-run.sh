#!/usr/bin/env bash
# Issue 14's scaling study on the GPU machine: stage the packed corpus, train the two backbones detached,
# wait for them, send their GGUFs back. Runs in the repo root of a device call; everything lives under
# $HOME, which survives between calls while the machine stays warm (each call must follow the last
# within its 30 s idle release). docs/BACKBONE.md, "Issue 14: the scaling study (plan)", gives the calls.
#
#   stage N                     call N carries .device/corpus/cN (call 1 also .device/corpus/tools):
#                               checks the pieces' sha256, unpacks segment N into $HOME/corpus
#                               (decompressed sha256 checked), and in call 1 the held-out files and
#                               the tools (gguf-py, the vocabulary); says which segments are missing
#   train NAME [--gpu N] [--minutes M] [--size mini|large] [train.py flags]
#                               starts train.py detached (setsid) under $HOME/runs/NAME: checkpoints,
#                               progress.json, train.log, then NAME.gguf and metrics.json. Runs on one
#                               GPU (--gpu, default 0) queue on its lock, so `train a …; train b …`
#                               runs a, then b; on a machine of two GPUs, --gpu 1 runs b beside a. Steps
#                               end by the study's deadline ($HOME/study/t0 + STUDY_HOLD_S −
#                               STUDY_RESERVE_S) whatever --minutes says.
#   wait NAME [SECONDS]         polls until NAME is done or failed, or SECONDS (default 540) pass,
#                               printing its progress; exit 0 done, 3 still running, 1 failed
#   fetch NAME [FIRST]          into $OUT: NAME.gguf.xz pieces FIRST.. (at most 4 of 15 MiB, with
#                               metrics.json, train.log and NAME.sha256: 7 files, < 64 MiB); says
#                               what a next `fetch NAME K` must send
#   stop NAME                   training ends at its next step; evaluation and export follow
#   rescue NAME                 evaluates and exports NAME's last checkpoint (a run that died)
#   status                      staged segments, runs, GPU
#
# STUDY_DRY=1: train.py --dry-run (CPU, tiny model; for checking this script off the GPU machine, with
# HOME and OUT pointing at local folders). STUDY_PY: the python with torch (default python3).
# STUDY_CORPUS_DIR: where the carried groups are (default .device/corpus).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
C="$HOME/corpus"
R="$HOME/runs"
S="$HOME/study"
PY=${STUDY_PY:-python3}
D=${STUDY_CORPUS_DIR:-.device/corpus}   # the carried groups
HOLD=${STUDY_HOLD_S:-1560}      # 26 min from the first call (the machine started 1-2 min before)
RESERVE=${STUDY_RESERVE_S:-180} # evaluation, export and the fetch calls after the last step
mkdir -p "$C" "$R" "$S"
[[ -f "$S/t0" ]] || date +%s > "$S/t0"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# export.py's needs: gguf-py and the vocabulary, staged from the tools folder (else a local build's)
export GGUF_PY="$S/tools/gguf-py" GAVEL_VOCAB="$S/tools/ggml-vocab-llama-spm.gguf"
[[ -d $GGUF_PY ]] || GGUF_PY="$REPO/build/llama.cpp/gguf-py"
[[ -f $GAVEL_VOCAB ]] || GAVEL_VOCAB="$REPO/build/llama.cpp/models/ggml-vocab-llama-spm.gguf"

die() { echo "study-run.sh: $*" >&2; exit 1; }
manifest() { # python over the manifest: manifest 'expr using m'
  "$PY" -c "import json,sys; m=json.load(open(sys.argv[1])); $1" "$C/manifest.json"
}
alive() { [[ -f "$R/$1/pid" ]] && kill -0 "$(cat "$R/$1/pid")" 2>/dev/null; }

staged_report() {
  [[ -f "$C/manifest.json" ]] || { echo "nothing staged"; return 1; }
  manifest "
import os
have=[s for s in m['segments'] if os.path.exists(os.path.join('$C', s['file']+'.ok'))]
miss=[s for s in m['segments'] if s not in have]
held=os.path.exists('$C/heldout.ok'); tools=os.path.exists('$S/tools.ok')
tok=sum(s['tokens'] for s in have)
print(f\"staged: segments {[s['index'] for s in have]} ({tok:,} of {m['stream']['tokens']:,} tokens), held-out files {'yes' if held else 'NO'}, tools {'yes' if tools else 'NO'}\")
if miss: print(f\"missing: segments {[s['index'] for s in miss]} (groups {sorted({s['group'] for s in miss})})\")
sys.exit(0 if not miss and held and tools else 2)"
}

case "${1:-}" in
stage)
  N=${2:?stage N}
  G=$D/c$N
  [[ -d $G ]] || die "$G was not carried (carry [\".device/corpus/c$N\"])"
  (cd "$G" && sha256sum --quiet -c SHA256SUMS) || die "$G: pieces fail their sha256"
  cp "$G/manifest.json" "$C/manifest.json.new"
  if [[ -f "$C/manifest.json" ]] && ! cmp -s "$C/manifest.json" "$C/manifest.json.new"; then
    die "$G belongs to another packing than the staged one ($C/manifest.json): rm -rf $C first"
  fi
  mv "$C/manifest.json.new" "$C/manifest.json"
  for seg in $(manifest "print(' '.join(s['file'] for s in m['segments'] if s['group']=='c$N'))"); do
    want=$(manifest "print([s['sha256'] for s in m['segments'] if s['file']=='$seg'][0])")
    cat "$G/$seg".xz.part-* | xz -dc > "$C/$seg.tmp"
    got=$(sha256sum "$C/$seg.tmp" | cut -d' ' -f1)
    [[ $got == "$want" ]] || { rm -f "$C/$seg.tmp"; die "$seg: decompressed sha256 $got != $want"; }
    mv "$C/$seg.tmp" "$C/$seg" && touch "$C/$seg.ok"
    echo "$seg: $(($(stat -c %s "$C/$seg") / 2)) tokens, sha256 ok"
  done
  if [[ -f $G/heldout.tar.xz ]]; then
    xz -dc "$G/heldout.tar.xz" | tar -xf - -C "$C"
    manifest "
import hashlib, os
for f, x in m['heldout']['files'].items():
    h=hashlib.sha256(open(os.path.join('$C', f),'rb').read()).hexdigest()
    assert h==x['sha256'], f'{f}: sha256 {h} != {x[\"sha256\"]}'
print('held-out files ok:', ', '.join(f'{f} {x[\"tokens\"]:,}' for f, x in m['heldout']['files'].items()))"
    touch "$C/heldout.ok"
  fi
  if [[ -f $D/tools/tools.tar.xz ]]; then
    (cd "$D/tools" && sha256sum --quiet -c SHA256SUMS) || die "tools: sha256"
    rm -rf "$S/tools" && mkdir -p "$S/tools"
    xz -dc "$D/tools/tools.tar.xz" | tar -xf - -C "$S/tools"
    touch "$S/tools.ok"
    echo "tools: $(ls "$S/tools" | tr '\n' ' ')"
  fi
  staged_report || true
  ;;

train)
  NAME=${2:?train NAME [--gpu N] [--minutes M] [--size mini|large] [train.py flags]}
  shift 2
  GPU=0
  pass=()
  while (($#)); do
    if [[ $1 == --gpu ]]; then GPU=${2:?--gpu N}; shift 2; else pass+=("$1"); shift; fi
  done
  set -- "${pass[@]+"${pass[@]}"}"
  [[ $NAME =~ ^[A-Za-z0-9._-]+$ ]] || die "NAME: letters, digits, . _ - only"
  W="$R/$NAME"
  alive "$NAME" && die "$NAME is running (pid $(cat "$W/pid"))"
  [[ -f "$W/metrics.json" ]] && die "$NAME already trained ($W/metrics.json): another NAME, or rm -rf $W"
  if [[ ${STUDY_DRY:-0} != 1 ]]; then staged_report || die "the corpus is not fully staged"; fi
  rm -rf "$W" && mkdir -p "$W"
  # the code runs from a copy, so a later call's fresh tree cannot change it under a running job
  mkdir -p "$W/code" && cp scripts/backbone/{train,export,reference}.py "$W/code/"
  deadline=$(($(cat "$S/t0") + HOLD - RESERVE))
  extra=(--ckpt-every 3 --stop-file "$W/STOP" --deadline "$deadline")
  [[ ${STUDY_DRY:-0} == 1 ]] && extra+=(--dry-run)
  cmd=("$PY" "$W/code/train.py" --data "$C" --out "$W" --name "$NAME" "${extra[@]}" "$@")
  printf '%q ' "${cmd[@]}" > "$W/command"
  echo >> "$W/command"
  echo "{\"status\": \"queued\", \"time\": $(date +%s)}" > "$W/progress.json"
  # queued on one lock a GPU: each GPU trains one backbone at a time
  export CUDA_VISIBLE_DEVICES=$GPU
  setsid nohup flock "$S/gpu$GPU.lock" bash -c '
    echo "{\"status\": \"started\", \"time\": $(date +%s)}" > "$1/progress.json"
    { command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; } || true
    shift; "$@"; rc=$?
    echo $rc > "'"$W"'/rc"; exit $rc' _ "$W" "${cmd[@]}" > "$W/train.log" 2>&1 < /dev/null &
  echo $! > "$W/pid"
  echo "started $NAME on GPU $GPU (pid $(cat "$W/pid")): $(cat "$W/command")"
  echo "training steps end by $(date -d @"$deadline" +%T) (t0 $(date -d @"$(cat "$S/t0")" +%T) + ${HOLD}s - ${RESERVE}s)"
  ;;

wait)
  NAME=${2:?wait NAME [SECONDS]}
  MAX=${3:-540}
  W="$R/$NAME"
  [[ -d $W ]] || die "no run $NAME"
  end=$(($(date +%s) + MAX))
  seen=0
  while :; do
    if [[ -f $W/train.log ]]; then
      n=$(wc -l < "$W/train.log")
      if ((n > seen)); then sed -n "$((seen + 1)),${n}p" "$W/train.log"; seen=$n; fi
    fi
    if [[ -f $W/rc ]]; then
      rc=$(cat "$W/rc")
      if [[ $rc == 0 && -f $W/metrics.json ]]; then
        "$PY" - "$W/metrics.json" <<'PYEOF'
import json, sys
m = json.load(open(sys.argv[1]))
print(f"done: {m['name']} ({m['size']}), {m['n_params']:,} parameters, {m['steps']} steps, "
      f"{m['tokens_seen'] / 1e6:.0f}M tokens ({m['epochs']:.2f} epochs of {m['train_tokens'] / 1e6:.0f}M) in {m['train_seconds']:.0f} s; "
      f"GGUF {m['gguf']['bytes'] / 1e6:.2f} MB")
print("curve: " + ", ".join(f"{c['step']}: {c['loss']:.3f}" for c in m["curve"][:: max(1, len(m["curve"]) // 12)] + m["curve"][-1:]))
print("eval: " + json.dumps({k: round(v.get("ppl", v.get("accuracy", 0)), 4) for k, v in m["eval"].items()}))
PYEOF
        exit 0
      fi
      echo "$NAME failed (rc $rc): see the log above; a checkpoint: $(ls "$W"/ckpt.pt 2>/dev/null || echo none)"
      exit 1
    fi
    if ! alive "$NAME" && [[ ! -f $W/rc ]]; then
      echo "$NAME is not running and left no exit status (killed?)"; exit 1
    fi
    if (($(date +%s) >= end)); then
      echo "still running after ${MAX}s: $(cat "$W/progress.json" 2>/dev/null | head -c 300)"
      exit 3
    fi
    sleep 5
  done
  ;;

fetch)
  NAME=${2:?fetch NAME [FIRST]}
  FIRST=${3:-0}
  W="$R/$NAME"
  : "${OUT:?OUT must be set (the device tool sets it)}"
  [[ -f $W/$NAME.gguf && -f $W/metrics.json ]] || die "$NAME has no GGUF yet (wait $NAME)"
  if [[ ! -f $W/pieces.done ]]; then
    (cd "$W" && sha256sum "$NAME.gguf" > "$NAME.sha256")
    rm -f "$W/$NAME.gguf.xz".part-*
    xz -T0 -6 -c "$W/$NAME.gguf" | split -b 15M -d -a 2 - "$W/$NAME.gguf.xz.part-"
    (cd "$W" && sha256sum "$NAME.gguf.xz".part-* >> "$NAME.sha256")
    touch "$W/pieces.done"
  fi
  mapfile -t parts < <(cd "$W" && ls "$NAME.gguf.xz".part-* | sort)
  cp "$W/metrics.json" "$OUT/$NAME.metrics.json"
  cp "$W/$NAME.sha256" "$OUT/"
  tail -c 400000 "$W/train.log" > "$OUT/$NAME.train.log"
  sent=()
  for ((i = FIRST; i < ${#parts[@]} && i < FIRST + 4; i++)); do cp "$W/${parts[$i]}" "$OUT/" && sent+=("${parts[$i]}"); done
  echo "$NAME: sent ${sent[*]:-no pieces} ($((${#parts[@]})) pieces in all, $(stat -c %s "$W/$NAME.gguf") bytes of GGUF)"
  if ((FIRST + 4 < ${#parts[@]})); then echo "next: bash scripts/backbone/study-run.sh fetch $NAME $((FIRST + 4))"; else echo "all pieces sent"; fi
  ls -la "$OUT"
  ;;

stop)
  NAME=${2:?stop NAME}
  touch "$R/$NAME/STOP" && echo "$NAME: stop requested (evaluation and export follow)"
  ;;

rescue)
  NAME=${2:?rescue NAME}
  W="$R/$NAME"
  alive "$NAME" && die "$NAME is still running"
  [[ -f $W/ckpt.pt ]] || die "$NAME has no checkpoint"
  eval "orig=($(cat "$W/command"))"
  rm -f "$W/rc"
  setsid nohup bash -c '"$@"; echo $? > "'"$W"'/rc"' _ "${orig[@]}" --export-only "$W/ckpt.pt" >> "$W/train.log" 2>&1 < /dev/null &
  echo $! > "$W/pid"
  echo "rescuing $NAME from $W/ckpt.pt (pid $(cat "$W/pid")); then: wait $NAME, fetch $NAME"
  ;;

status)
  staged_report || true
  for W in "$R"/*/; do
    [[ -d $W ]] || continue
    n=$(basename "$W")
    st=$(cat "$W/progress.json" 2>/dev/null | head -c 200 || true)
    echo "$n: $(alive "$n" && echo running || echo stopped) rc=$(cat "$W/rc" 2>/dev/null || echo -) $st"
  done
  echo "t0 $(date -d @"$(cat "$S/t0")" +%T), now $(date +%T) (+$(($(date +%s) - $(cat "$S/t0")))s), deadline for steps +$((HOLD - RESERVE))s"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.used,memory.total,utilization.gpu --format=csv,noheader || true
  ;;

*)
  sed -n '2,30p' "$0"
  exit 2
  ;;
esac
