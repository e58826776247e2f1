set -x
cd "/root/gavel"
SB=default
export SKILL_BUDGET=$SB
A="--model /root/gavel/models/gavel-mini.gguf --projections /root/gavel/models/gavel-mini.projections.gguf --bank /root/route10k/bank --context 2048$([ $SB = default ] || echo " --skill-budget $SB")"
[ -f /root/route10k/install-golds.done ] || { node dist/cli/gavel.js install /root/route10k/skills.jsonl --jobs 8 --threads 4 $A && touch /root/route10k/install-golds.done; }
[ -f /root/route10k/install-mit.done ] || { node dist/cli/gavel.js install /root/route10k/mit-9951.jsonl --jobs 8 --threads 4 $A && touch /root/route10k/install-mit.done; }
if [ "0" = 1 ]; then
  node bench/route-prompts.bench.mjs /root/route10k/bank /root/route10k/demo-tasks.json,/root/route10k/everyday-tasks.json --reps 3 > /root/route10k/prompts.txt 2>&1
  node bench/route-prompts.bench.mjs /root/route10k/bank /root/route10k/demo-tasks.json,/root/route10k/everyday-tasks.json --reps 1 --abstain-off > /root/route10k/prompts-abstain-off.txt 2>&1
  echo chain-done; exit 0
fi
if [ "0" = 1 ]; then
  for sp in 1-5:val 6-10:test; do
    node bench/weights-records.bench.mjs /root/route10k/bank /root/route10k/tasks.jsonl /root/route10k/wr-${sp#*:}.jsonl.gz --batches ${sp%:*} --variants uniform/0,idf/0 > /root/route10k/wr-${sp#*:}.txt 2>&1
  done
fi
if [ "0" = 1 ]; then
  for sp in 1-5:val 6-10:test; do
    node bench/key-tf.bench.mjs /root/route10k/bank /root/route10k/tasks.jsonl --batches ${sp%:*} --only '.' --records /root/route10k/keytf-${sp#*:}.jsonl > /root/route10k/keytf-${sp#*:}.txt 2>&1
  done
fi
if [ "1" = 0 ]; then echo chain-done; exit 0; fi
if [ "0" = 1 ]; then
  node bench/route-rerank-real.bench.mjs /root/route10k/bank /root/route10k/tasks.jsonl /root/route10k/skills.jsonl,/root/route10k/mit-9951.jsonl --batches 6-10 --skill-budget $SB     --records /root/route10k/test.jsonl --abstain-off > /root/route10k/test.txt 2>&1
  node bench/route-rerank-real.bench.mjs /root/route10k/bank /root/route10k/tasks.jsonl /root/route10k/skills.jsonl,/root/route10k/mit-9951.jsonl --batches 6-10 --skill-budget $SB     --records /root/route10k/test-solo.jsonl --abstain-off --shipped-only > /root/route10k/test-solo.txt 2>&1
  echo chain-done; exit 0
fi
if [ "0" = 1 ]; then
  GAVEL_GLANCE_ROW_WEIGHTS=uniform GAVEL_GLANCE_VOTE_SHARE=0 node bench/route-rerank-real.bench.mjs /root/route10k/bank /root/route10k/tasks.jsonl /root/route10k/skills.jsonl,/root/route10k/mit-9951.jsonl --batches 6-10     --records /root/route10k/test-paper.jsonl --abstain-off > /root/route10k/test-paper.txt 2>&1
fi
if [ "0" = 1 ]; then
  E="--library /root/route10k/skills.jsonl --library /root/route10k/mit-9951.jsonl --methods bm25,glance,ruling --pool 8 --lexical-pool 8"
  node dist/cli/gavel.js eval --tasks /root/route10k/short-requests.jsonl $E --per-query /root/route10k/short-in.jsonl --resume $A > /root/route10k/short-in.txt 2>&1
  node dist/cli/gavel.js eval --tasks /root/route10k/off-domain-prompts.jsonl $E --per-query /root/route10k/short-off.jsonl --resume $A > /root/route10k/short-off.txt 2>&1
  echo chain-done; exit 0
fi
for v in "" $([ -f bench/route-rerank-real-old.bench.mjs ] && [ "0" = 1 ] && echo -old); do
  node bench/route-rerank-real$v.bench.mjs /root/route10k/bank /root/route10k/tasks.jsonl /root/route10k/skills.jsonl,/root/route10k/mit-9951.jsonl --batches 6-10 --skill-budget $SB     --records /root/route10k/test$v.jsonl --abstain-off --off-domain /root/route10k/off-domain-prompts.jsonl > /root/route10k/test$v.txt 2>&1
  node bench/route-rerank-real$v.bench.mjs /root/route10k/bank /root/route10k/tasks.jsonl /root/route10k/skills.jsonl,/root/route10k/mit-9951.jsonl --batches 1-5 --skill-budget $SB     --records /root/route10k/val$v.jsonl --abstain-off --off-domain /root/route10k/off-domain-prompts.jsonl --off-batches offhw1,offhw2,offhw3,offhw4,offhw5 > /root/route10k/val$v.txt 2>&1
done
if [ "0" = 1 ]; then
  node bench/glance-index-real.bench.mjs /root/route10k/bank /root/route10k/tasks.jsonl /root/route10k/skills.jsonl,/root/route10k/mit-9951.jsonl --batches 1-5 --limit 40     --cache /root/route10k/q30.bin --project-only > /root/route10k/project.txt 2>&1
  GAVEL_GLANCE_DEVICE=cpu node bench/kivf.bench.mjs real /root/route10k/bank /root/route10k/q30.bin --tasks 40 --reps 1 --nprobe d,512,2048 > /root/route10k/kivf.txt 2>&1
fi
echo chain-done
