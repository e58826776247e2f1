set -x
cd "/root/gavel"
SB=default
export SKILL_BUDGET=$SB
A="--model /root/gavel/models/gavel-mini.gguf --projections /root/gavel/models/gavel-mini.projections.gguf --bank /root/route/bank --context 2048$([ $SB = default ] || echo " --skill-budget $SB")"
[ -f /root/route/install-golds.done ] || { node dist/cli/gavel.js install /root/route/skills.jsonl --jobs 8 --threads 4 $A && touch /root/route/install-golds.done; }
[ -f /root/route/install-mit.done ] || { node dist/cli/gavel.js install /root/route/mit-full.jsonl --jobs 8 --threads 4 $A && touch /root/route/install-mit.done; }
if [ "0" = 1 ]; then
  node bench/route-prompts.bench.mjs /root/route/bank /root/route/demo-tasks.json,/root/route/everyday-tasks.json --reps 3 > /root/route/prompts.txt 2>&1
  node bench/route-prompts.bench.mjs /root/route/bank /root/route/demo-tasks.json,/root/route/everyday-tasks.json --reps 1 --abstain-off > /root/route/prompts-abstain-off.txt 2>&1
  if [ -f /work/main/.device/full/example-skills.tgz ]; then
    mkdir -p /root/route/ex && tar -xzf /work/main/.device/full/example-skills.tgz -C /root/route/ex
    [ -f /root/route/install-examples.done ] || { node dist/cli/gavel.js install /root/route/ex/examples/skills $A && touch /root/route/install-examples.done; }
    P=$(ls /work/main/.device/full/prompts/*.json | paste -sd, -)
    node bench/route-prompts.bench.mjs /root/route/bank $P --reps 1 > /root/route/prompts-extra.txt 2>&1
    node bench/route-prompts.bench.mjs /root/route/bank $P --reps 1 --abstain-off > /root/route/prompts-extra-abstain-off.txt 2>&1
  fi
  echo chain-done; exit 0
fi
if [ "0" = 1 ]; then
  for sp in 1-5:val 6-10:test; do
    node bench/weights-records.bench.mjs /root/route/bank /root/route/tasks.jsonl /root/route/wr-${sp#*:}.jsonl.gz --batches ${sp%:*} --variants uniform/0,idf/0 > /root/route/wr-${sp#*:}.txt 2>&1
  done
fi
if [ "0" = 1 ]; then
  for sp in 1-5:val 6-10:test; do
    node bench/key-tf.bench.mjs /root/route/bank /root/route/tasks.jsonl --batches ${sp%:*} --only '.' --records /root/route/keytf-${sp#*:}.jsonl > /root/route/keytf-${sp#*:}.txt 2>&1
  done
fi
if [ "1" = 0 ]; then echo chain-done; exit 0; fi
if [ "0" = 1 ]; then
  node bench/route-rerank-real.bench.mjs /root/route/bank /root/route/tasks.jsonl /root/route/skills.jsonl,/root/route/mit-full.jsonl --batches 6-10 --skill-budget $SB     --records /root/route/test.jsonl --abstain-off > /root/route/test.txt 2>&1
  node bench/route-rerank-real.bench.mjs /root/route/bank /root/route/tasks.jsonl /root/route/skills.jsonl,/root/route/mit-full.jsonl --batches 6-10 --skill-budget $SB     --records /root/route/test-solo.jsonl --abstain-off --shipped-only > /root/route/test-solo.txt 2>&1
  echo chain-done; exit 0
fi
if [ "0" = 1 ]; then
  GAVEL_GLANCE_ROW_WEIGHTS=uniform GAVEL_GLANCE_VOTE_SHARE=0 node bench/route-rerank-real.bench.mjs /root/route/bank /root/route/tasks.jsonl /root/route/skills.jsonl,/root/route/mit-full.jsonl --batches 6-10     --records /root/route/test-paper.jsonl --abstain-off > /root/route/test-paper.txt 2>&1
fi
if [ "0" = 1 ]; then
  E="--library /root/route/skills.jsonl --library /root/route/mit-full.jsonl --methods bm25,glance,ruling --pool 8 --lexical-pool 8"
  node dist/cli/gavel.js eval --tasks /root/route/short-requests.jsonl $E --per-query /root/route/short-in.jsonl --resume $A > /root/route/short-in.txt 2>&1
  node dist/cli/gavel.js eval --tasks /root/route/off-domain-prompts.jsonl $E --per-query /root/route/short-off.jsonl --resume $A > /root/route/short-off.txt 2>&1
  echo chain-done; exit 0
fi
for v in "" $([ -f bench/route-rerank-real-old.bench.mjs ] && [ "0" = 1 ] && echo -old); do
  for sp in val test; do
    if [ $sp = test ]; then
      node bench/route-rerank-real$v.bench.mjs /root/route/bank /root/route/tasks.jsonl /root/route/skills.jsonl,/root/route/mit-full.jsonl --batches 6-10 --skill-budget $SB         --records /root/route/test$v.jsonl --abstain-off --off-domain /root/route/off-domain-prompts.jsonl > /root/route/test$v.txt 2>&1
    else
      node bench/route-rerank-real$v.bench.mjs /root/route/bank /root/route/tasks.jsonl /root/route/skills.jsonl,/root/route/mit-full.jsonl --batches 1-5 --skill-budget $SB         --records /root/route/val$v.jsonl --abstain-off --off-domain /root/route/off-domain-prompts.jsonl --off-batches offhw1,offhw2,offhw3,offhw4,offhw5 > /root/route/val$v.txt 2>&1
    fi
  done
done
if [ "0" = 1 ]; then
  node bench/glance-index-real.bench.mjs /root/route/bank /root/route/tasks.jsonl /root/route/skills.jsonl,/root/route/mit-full.jsonl --batches 1-5 --limit 40     --cache /root/route/q30.bin --project-only > /root/route/project.txt 2>&1
  GAVEL_GLANCE_DEVICE=cpu node bench/kivf.bench.mjs real /root/route/bank /root/route/q30.bin --tasks 40 --reps 1 --nprobe d,512,2048 > /root/route/kivf.txt 2>&1
fi
echo chain-done
