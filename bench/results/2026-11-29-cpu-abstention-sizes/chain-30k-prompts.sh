set -x
cd "/root/gavel"
A="--model /root/gavel/models/gavel-mini.gguf --projections /root/gavel/models/gavel-mini.projections.gguf --bank /root/route/bank --context 2048 --skill-budget 512"
[ -f /root/route/install-golds.done ] || { node dist/cli/gavel.js install /root/route/skills.jsonl --jobs 8 --threads 4 $A && touch /root/route/install-golds.done; }
[ -f /root/route/install-mit.done ] || { node dist/cli/gavel.js install /root/route/mit-full.jsonl --jobs 8 --threads 4 $A && touch /root/route/install-mit.done; }
if [ "1" = 1 ]; then
  node bench/route-prompts.bench.mjs /root/route/bank /root/route/demo-tasks.json,/root/route/everyday-tasks.json --reps 3 > /root/route/prompts.txt 2>&1
  node bench/route-prompts.bench.mjs /root/route/bank /root/route/demo-tasks.json,/root/route/everyday-tasks.json --reps 1 --abstain-off > /root/route/prompts-abstain-off.txt 2>&1
  echo chain-done; exit 0
fi
if [ "0" = 1 ]; then
  E="--library /root/route/skills.jsonl --library /root/route/mit-full.jsonl --methods bm25,glance,ruling --pool 8 --lexical-pool 8"
  node dist/cli/gavel.js eval --tasks /root/route/short-requests.jsonl $E --per-query /root/route/short-in.jsonl --resume $A > /root/route/short-in.txt 2>&1
  node dist/cli/gavel.js eval --tasks /root/route/off-domain-prompts.jsonl $E --per-query /root/route/short-off.jsonl --resume $A > /root/route/short-off.txt 2>&1
  echo chain-done; exit 0
fi
node bench/route-rerank-real.bench.mjs /root/route/bank /root/route/tasks.jsonl /root/route/skills.jsonl,/root/route/mit-full.jsonl --batches 6-10   --records /root/route/test.jsonl --abstain-off --off-domain /root/route/off-domain-prompts.jsonl > /root/route/test.txt 2>&1
node bench/route-rerank-real.bench.mjs /root/route/bank /root/route/tasks.jsonl /root/route/skills.jsonl,/root/route/mit-full.jsonl --batches 1-5   --records /root/route/val.jsonl --abstain-off --off-domain /root/route/off-domain-prompts.jsonl --off-batches offhw1,offhw2,offhw3,offhw4,offhw5 > /root/route/val.txt 2>&1
if [ "1" = 1 ]; then
  node bench/glance-index-real.bench.mjs /root/route/bank /root/route/tasks.jsonl /root/route/skills.jsonl,/root/route/mit-full.jsonl --batches 1-5 --limit 40     --cache /root/route/q30.bin --project-only > /root/route/project.txt 2>&1
  GAVEL_GLANCE_DEVICE=cpu node bench/kivf.bench.mjs real /root/route/bank /root/route/q30.bin --tasks 40 --reps 1 --nprobe d,512,2048 > /root/route/kivf.txt 2>&1
fi
echo chain-done
