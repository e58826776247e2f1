set -x
cd "/root/cpuroute/pkg"
export GAVEL_LOG=0
A="--model /root/cpuroute/pkg/models/gavel-mini.gguf --projections /root/cpuroute/pkg/models/gavel-mini.projections.gguf --context 2048 --skill-budget 512"
B="--model /root/cpuroute/pkg/models/gavel-mini.gguf --projections /root/cpuroute/pkg/models/gavel-mini.projections.gguf"
L="/root/cpuroute/run/skills.jsonl,/root/cpuroute/run/mit-full.jsonl"
IA="env GAVEL_ADDON=/root/gavel-cuda/gavel.node GAVEL_GLANCE_DEVICE=cpu"
bank_of() { # n: a bank of the golds and the first n-49 public skills (n = all: every one)
  local n=$1 b=/root/cpuroute/run/bank-$1
  [ -f $b.done ] && return 0
  $IA node dist/cli/gavel.js install /root/cpuroute/run/skills.jsonl --bank $b --jobs 8 --threads 4 $A > $b.install.txt 2>&1 || return 1
  if [ $n = all ]; then src=/root/cpuroute/run/mit-full.jsonl; else src=/root/cpuroute/run/mit-$n.jsonl; head -n $((n - 49)) /root/cpuroute/run/mit-full.jsonl > $src; fi
  $IA node dist/cli/gavel.js install $src --bank $b --jobs 8 --threads 4 $A >> $b.install.txt 2>&1 && touch $b.done
}
route_on() { # bank size, label, tasks, environment…
  local n=$1 label=$2 k=$3; shift 3
  env "$@" taskset -c 0,1 node bench/route-rerank-real.bench.mjs /root/cpuroute/run/bank-$n /root/cpuroute/run/tasks.jsonl $L --batches 6-10 --limit $k     --shipped-only $B --records /root/cpuroute/run/route-$n-$label.jsonl > /root/cpuroute/run/route-$n-$label.txt 2>&1
}
prompts_on() { # bank size [label reps]: the examples' requests, the hook's decision and the full route, pinned
  taskset -c 0,1 node bench/route-prompts.bench.mjs /root/cpuroute/run/bank-$1 demo-tasks.json,everyday-tasks.json --reps ${3:-3} $B > /root/cpuroute/run/prompts-$1${2:+-$2}.txt 2>&1
}
bank_of all
if [ "prompts" = prompts ]; then
  export GAVEL_KEY_IVF_I8=off; prompts_on all i8off 1
  unset GAVEL_KEY_IVF_I8; prompts_on all i8on 3
  echo chain-done; exit 0
fi
prompts_on all
route_on all ivf 40
route_on all exact 12 GAVEL_KEY_IVF=off
node bench/glance-index-real.bench.mjs /root/cpuroute/run/bank-all /root/cpuroute/run/tasks.jsonl $L --batches 1-5 --limit 40 --cache /root/cpuroute/run/q30.bin --project-only > /root/cpuroute/run/project.txt 2>&1
node bench/kivf.bench.mjs real /root/cpuroute/run/bank-all /root/cpuroute/run/q30.bin --tasks 40 --reps 1 --nprobe d > /root/cpuroute/run/kivf.txt 2>&1
for n in ; do
  bank_of $n && prompts_on $n && route_on $n ivf 40
  [ $n -lt 3000 ] || route_on $n exact 12 GAVEL_KEY_IVF=off   # below 3,000 the default is the exact glance
done
echo chain-done
