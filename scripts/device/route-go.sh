#!/usr/bin/env bash
# The shipped default route through the runtime over the whole benchmark library on the GPU: the 49
# SWE-Skills-Bench golds and the 30,544 public skills installed from their FULL texts (the bank's
# lexicon then reads what a user's bank reads; pack-library.ts's cut texts favour the golds), then
# bench/route-rerank-real.bench.ts over test (batches 6-10, with the held-out off-domain prompts) and
# validation (batches 1-5): Router.route as shipped, the first stage alone, and the re-ranked route
# with abstention off, a record per task. Last, optionally (KIVF=1), the key IVF against the exact
# glance on that bank (bench/kivf.bench.ts real, 40 validation tasks), on the machine's CPU.
# SHORT=1 instead routes short requests over that bank for the abstention fit: `gavel eval` of
# bench/data/short-requests.jsonl and of the hand-written off-domain prompts (records short-in.jsonl,
# short-off.jsonl; the benches are skipped). PROMPTS=1 instead routes the examples' 22 requests
# through the router over that bank (bench/route-prompts.bench.ts, with and without abstention;
# prompts.txt, prompts-abstain-off.txt).
# KEYTF=1 then replays the glance with skill-side term frequency (scripts/experiments/key-tf.ts,
# variants matching KEYTF_ONLY) over validation and test (keytf-val.txt, keytf-test.txt and records).
# PASSES=1 instead routes test twice: as the default run does (the shipped route, the first stage's own
# router, the shipped route with abstention off: test.jsonl) and with no first-stage router beside it
# (--shipped-only: test-solo.jsonl), both recording the best 5's read-outs of each pass.
# RECORDS=1 first writes first-stage records of every glance variant in VARIANTS over validation and
# test (scripts/select/weights-records.ts: wr-val.jsonl.gz, wr-test.jsonl.gz); ROUTES=0 stops there.
# PROMPT_FILES=a.json,b.json (at pack time: request files of route-prompts.bench.ts's shape, packed
# with examples/skills) makes PROMPTS=1 also install the 24 example skills into the bank and route those
# files over it (prompts-extra.txt, prompts-extra-abstain-off.txt): requests whose golds are the examples.
# MIT_LIMIT=N installs (and reads for the accepted ids) only the first N public skills beside the golds: a
# smaller real library (TAG keeps its files apart from the whole library's).
# KEY_BUDGET=N installs with --key-budget N (keys read past the render's cut); SKILL_BUDGET=N installs
# and routes with that skill budget (default 512, the budget of every SWE-Skills-Bench table;
# SKILL_BUDGET=default gives none, as `gavel` with no flags: ¾ of the context); TAG=x keeps this run's
# files in ~/routex (two runs side by side: start the first with WAIT_S=0).
# SPLITS: which splits the routes run, in order (default "test val"; "val test" routes validation
# first, so that a device budget cut short still yields it).
# OLD=1 also routes test and validation with .device/full/route-rerank-real-old.bench.mjs (test-old,
# val-old), bundled by `OLD_REV=<commit> bash scripts/device/route-go.sh pack` from that commit's
# tree (its fixed skill budget replaced by this run's): the same bank routed by an earlier runtime.
# BASELINE=1 also routes test with the paper's glance (GAVEL_GLANCE_ROW_WEIGHTS=uniform,
# GAVEL_GLANCE_VOTE_SHARE=0: test-paper.txt). A projections file carried at .device/proj/default.projections.gguf
# replaces the packed one (a second `start` on the same warm machine reuses the installed bank); ADOPT=path
# instead routes the maps at path (e.g. $W/trained.gguf) with the packed file's constants.
#   here:    bash scripts/device/route-go.sh pack
#              .device/full: the public library's full texts (xz), golds, tasks, the shipped
#              projections, the off-domain prompts and the three benches bundled from this tree
#   device, back to back on one warm machine (bench/results, models, prebuilds moved out: DEVICE.md;
#   pack-gpu.sh leaves the model in .device/stage-b for step 1b):
#     1. carry [".device/run"]:   SKIP_CHECKS=1 bash scripts/device/gpu-build.sh
#     1b. carry [".device/stage-b"]: source scripts/device/env.sh   (puts gavel-mini.gguf in $W: models/
#         is moved out, and .device/full leaves no room for it)
#     2. carry [".device/full"]:  bash scripts/device/route-go.sh start   (detached; follows it)
#   The machine goes back after ~30 s without a call: issue each call as soon as the last returns.
#     3. no carry:                bash scripts/device/route-go.sh wait    (again until it ends)
#     4. no carry:                bash scripts/device/route-go.sh fetch   ($OUT/route.tgz)
set -uo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-wait}
if [ "$mode" = pack ]; then
  set -e
  F=.device/full; mkdir -p "$F"
  for b in route-rerank-real glance-index-real kivf route-prompts; do
    npx esbuild "bench/$b.bench.ts" --bundle --platform=node --format=esm --packages=external \
      --outfile="$F/$b.bench.mjs" --log-level=warning
  done
  if [ -n "${OLD_REV:-}" ]; then
    O=$(mktemp -d); git worktree add -q --detach "$O" "$OLD_REV"; ln -s "$PWD/node_modules" "$O/node_modules"
    sed -i 's/skillBudget: 512 }/skillBudget: process.env.SKILL_BUDGET === "default" ? undefined : Number(process.env.SKILL_BUDGET ?? 512) }/' "$O/bench/route-rerank-real.bench.ts"
    grep -c 'process.env.SKILL_BUDGET' "$O/bench/route-rerank-real.bench.ts"
    npx esbuild "$O/bench/route-rerank-real.bench.ts" --bundle --platform=node --format=esm --packages=external \
      --outfile="$F/route-rerank-real-old.bench.mjs" --log-level=warning
    git worktree remove --force "$O"
  else rm -f "$F/route-rerank-real-old.bench.mjs"; fi
  npx esbuild scripts/experiments/key-tf.ts --bundle --platform=node --format=esm --packages=external \
    --outfile="$F/key-tf.bench.mjs" --log-level=warning
  npx esbuild scripts/select/weights-records.ts --bundle --platform=node --format=esm --packages=external \
    --outfile="$F/weights-records.bench.mjs" --log-level=warning
  cp models/gavel-mini.projections.gguf "$F/default.projections.gguf"
  cp ../shared/data/swe-skills-bench/tasks.jsonl ../shared/data/swe-skills-bench/skills.jsonl bench/data/off-domain-prompts.jsonl bench/data/short-requests.jsonl examples/demo-tasks.json examples/everyday-tasks.json "$F/"
  if [ ! -f "$F/mit-full.jsonl.xz" ]; then
    zcat ../shared/data/skills-mit.jsonl.gz | node -e '
      const rl = require("readline").createInterface({ input: process.stdin });
      rl.on("line", (l) => { const d = JSON.parse(l); process.stdout.write(JSON.stringify({ id: d.id, name: d.name, description: d.description, body: d.body }) + "\n"); });' \
      | xz -T2 -9 > "$F/mit-full.jsonl.xz"
  fi
  rm -rf "$F/prompts" "$F/example-skills.tgz"
  if [ -n "${PROMPT_FILES:-}" ]; then
    mkdir -p "$F/prompts"; for f in ${PROMPT_FILES//,/ }; do cp "$f" "$F/prompts/"; done
    tar -czf "$F/example-skills.tgz" examples/skills
  fi
  du -sh "$F"; exit 0
fi
source scripts/device/env.sh
R="$HOME/route${TAG:-}"; mkdir -p "$R"
export GAVEL_LOG=${GAVEL_LOG:-0} GGML_CUDA_DISABLE_GRAPHS=${GGML_CUDA_DISABLE_GRAPHS:-1}
alive() { [ -f "$R/pid" ] && kill -0 "$(cat "$R/pid")" 2>/dev/null; }
if [ "$mode" = start ]; then
  F=.device/full
  [ -f "$R/mit-full.jsonl" ] || { xz -dc "$F/mit-full.jsonl.xz" > "$R/mit-full.tmp" && mv "$R/mit-full.tmp" "$R/mit-full.jsonl"; }
  MIT="$R/mit-full.jsonl"
  if [ -n "${MIT_LIMIT:-}" ]; then MIT="$R/mit-$MIT_LIMIT.jsonl"; head -n "$MIT_LIMIT" "$R/mit-full.jsonl" > "$MIT"; fi
  cp "$F"/tasks.jsonl "$F"/skills.jsonl "$F"/off-domain-prompts.jsonl "$F"/short-requests.jsonl "$F"/*-tasks.json "$F"/default.projections.gguf "$R/"
  if [ -f .device/proj/default.projections.gguf ]; then cp .device/proj/default.projections.gguf "$R/default.projections.gguf"; fi
  # ADOPT=path: maps trained on this machine (train-full.sh's $W/trained.gguf) routed with the packed
  # file's constants (adopt-constants.mjs), so the maps are the only difference
  if [ -n "${ADOPT:-}" ]; then node "$G/scripts/device/adopt-constants.mjs" "$F/default.projections.gguf" "$ADOPT" "$R/default.projections.gguf" || exit 1; fi
  mkdir -p "$G/bench" "$G/models" && cp "$F"/*.bench.mjs "$G/bench/"
  cp "$W/gavel-mini.gguf" "$G/models/gavel-mini.gguf" && cp "$R/default.projections.gguf" "$G/models/gavel-mini.projections.gguf"
  cat > "$R/chain.sh" <<EOF
set -x
cd "$G"
SB=${SKILL_BUDGET:-512}
export SKILL_BUDGET=\$SB
A="--model $G/models/gavel-mini.gguf --projections $G/models/gavel-mini.projections.gguf --bank $R/bank --context 2048\$([ \$SB = default ] || echo " --skill-budget \$SB")${KEY_BUDGET:+ --key-budget $KEY_BUDGET}"
[ -f $R/install-golds.done ] || { node dist/cli/gavel.js install $R/skills.jsonl --jobs 8 --threads 4 \$A && touch $R/install-golds.done; }
[ -f $R/install-mit.done ] || { node dist/cli/gavel.js install $MIT --jobs 8 --threads 4 \$A && touch $R/install-mit.done; }
if [ "${PROMPTS:-0}" = 1 ]; then
  node bench/route-prompts.bench.mjs $R/bank $R/demo-tasks.json,$R/everyday-tasks.json --reps 3 > $R/prompts.txt 2>&1
  node bench/route-prompts.bench.mjs $R/bank $R/demo-tasks.json,$R/everyday-tasks.json --reps 1 --abstain-off > $R/prompts-abstain-off.txt 2>&1
  if [ -f $PWD/$F/example-skills.tgz ]; then
    mkdir -p $R/ex && tar -xzf $PWD/$F/example-skills.tgz -C $R/ex
    [ -f $R/install-examples.done ] || { node dist/cli/gavel.js install $R/ex/examples/skills \$A && touch $R/install-examples.done; }
    P=\$(ls $PWD/$F/prompts/*.json | paste -sd, -)
    node bench/route-prompts.bench.mjs $R/bank \$P --reps 1 > $R/prompts-extra.txt 2>&1
    node bench/route-prompts.bench.mjs $R/bank \$P --reps 1 --abstain-off > $R/prompts-extra-abstain-off.txt 2>&1
  fi
  echo chain-done; exit 0
fi
if [ "${RECORDS:-0}" = 1 ]; then
  for sp in 1-5:val 6-10:test; do
    node bench/weights-records.bench.mjs $R/bank $R/tasks.jsonl $R/wr-\${sp#*:}.jsonl.gz --batches \${sp%:*} --variants ${VARIANTS:-uniform/0,idf/0} > $R/wr-\${sp#*:}.txt 2>&1
  done
fi
if [ "${KEYTF:-0}" = 1 ]; then
  for sp in 1-5:val 6-10:test; do
    node bench/key-tf.bench.mjs $R/bank $R/tasks.jsonl --batches \${sp%:*} --only '${KEYTF_ONLY:-.}' --records $R/keytf-\${sp#*:}.jsonl > $R/keytf-\${sp#*:}.txt 2>&1
  done
fi
if [ "${ROUTES:-1}" = 0 ]; then echo chain-done; exit 0; fi
if [ "${PASSES:-0}" = 1 ]; then
  node bench/route-rerank-real.bench.mjs $R/bank $R/tasks.jsonl $R/skills.jsonl,$MIT --batches 6-10 --skill-budget \$SB \
    --records $R/test.jsonl --abstain-off > $R/test.txt 2>&1
  node bench/route-rerank-real.bench.mjs $R/bank $R/tasks.jsonl $R/skills.jsonl,$MIT --batches 6-10 --skill-budget \$SB \
    --records $R/test-solo.jsonl --abstain-off --shipped-only > $R/test-solo.txt 2>&1
  echo chain-done; exit 0
fi
if [ "${BASELINE:-0}" = 1 ]; then
  GAVEL_GLANCE_ROW_WEIGHTS=uniform GAVEL_GLANCE_VOTE_SHARE=0 node bench/route-rerank-real.bench.mjs $R/bank $R/tasks.jsonl $R/skills.jsonl,$MIT --batches 6-10 \
    --records $R/test-paper.jsonl --abstain-off > $R/test-paper.txt 2>&1
fi
if [ "${SHORT:-0}" = 1 ]; then
  E="--library $R/skills.jsonl --library $MIT --methods bm25,glance,ruling --pool 8 --lexical-pool 8"
  node dist/cli/gavel.js eval --tasks $R/short-requests.jsonl \$E --per-query $R/short-in.jsonl --resume \$A > $R/short-in.txt 2>&1
  node dist/cli/gavel.js eval --tasks $R/off-domain-prompts.jsonl \$E --per-query $R/short-off.jsonl --resume \$A > $R/short-off.txt 2>&1
  echo chain-done; exit 0
fi
for v in "" \$([ -f bench/route-rerank-real-old.bench.mjs ] && [ "${OLD:-0}" = 1 ] && echo -old); do
  for sp in ${SPLITS:-test val}; do
    if [ \$sp = test ]; then
      node bench/route-rerank-real\$v.bench.mjs $R/bank $R/tasks.jsonl $R/skills.jsonl,$MIT --batches 6-10 --skill-budget \$SB \
        --records $R/test\$v.jsonl --abstain-off --off-domain $R/off-domain-prompts.jsonl > $R/test\$v.txt 2>&1
    else
      node bench/route-rerank-real\$v.bench.mjs $R/bank $R/tasks.jsonl $R/skills.jsonl,$MIT --batches 1-5 --skill-budget \$SB \
        --records $R/val\$v.jsonl --abstain-off --off-domain $R/off-domain-prompts.jsonl --off-batches offhw1,offhw2,offhw3,offhw4,offhw5 > $R/val\$v.txt 2>&1
    fi
  done
done
if [ "${KIVF:-1}" = 1 ]; then
  node bench/glance-index-real.bench.mjs $R/bank $R/tasks.jsonl $R/skills.jsonl,$MIT --batches 1-5 --limit 40 \
    --cache $R/q30.bin --project-only > $R/project.txt 2>&1
  GAVEL_GLANCE_DEVICE=cpu node bench/kivf.bench.mjs real $R/bank $R/q30.bin --tasks 40 --reps 1 --nprobe d,512,2048 > $R/kivf.txt 2>&1
fi
echo chain-done
EOF
  setsid nohup bash "$R/chain.sh" > "$R/chain.log" 2>&1 < /dev/null &
  echo $! > "$R/pid"; echo "started, pid $(cat "$R/pid")"
  mode=wait
fi
if [ "$mode" = wait ]; then
  end=$(( $(date +%s) + ${WAIT_S:-560} ))
  while [ "$(date +%s)" -lt "$end" ] && alive; do sleep 10; done
  echo "== $(alive && echo running || echo ended)"; tail -5 "$R/chain.log"
  for f in keytf-val.txt keytf-test.txt wr-val.txt wr-test.txt test-paper.txt test.txt test-solo.txt val.txt test-old.txt val-old.txt project.txt kivf.txt short-in.txt short-off.txt prompts.txt prompts-extra.txt prompts-extra-abstain-off.txt; do [ -f "$R/$f" ] && { echo "-- $f"; tail -6 "$R/$f"; }; done
  wc -l "$R"/*.jsonl 2>/dev/null | tail -3
  nvidia-smi --query-gpu=name,memory.used,utilization.gpu --format=csv,noheader
fi
if [ "$mode" = fetch ] || [ "$mode" = wait ]; then
  tar -czf "$OUT/route${TAG:-}.tgz" -C "$R" $(cd "$R" && ls *.txt test.jsonl test-solo.jsonl val.jsonl test-old.jsonl val-old.jsonl test-paper.jsonl wr-*.jsonl.gz keytf-*.jsonl short-*.jsonl chain.log chain.sh 2>/dev/null)
  ls -la "$OUT/route${TAG:-}.tgz"
fi
