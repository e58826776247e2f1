#!/usr/bin/env bash
# Per-query records over tiny libraries, for the abstention fit's smallest shape: examples/skills cut
# into libraries of 3-5 skills (a seeded shuffle; sizes 3,3,4,4,5,5), each installed into its own bank
# with the shipped pair, then `gavel eval` of the short requests whose gold skill is in that library
# (bench/data/short-requests-examples.jsonl: in-domain) and of the hand-written off-domain prompts
# (bench/data/off-domain-prompts.jsonl), the lexical read-outs recomputed over that library. A request
# whose gold is not in a library is not routed there (no skill may serve it: neither label holds).
# Runs on this CPU (~1 min a library).
# Usage: [SIZES="3 3 4 4 5 5"] bash scripts/device/tiny-records.sh OUT_DIR [SEED ...]   (default seeds 1 2)
#   SIZES: the libraries' sizes, cut in turn from one shuffle (at most 24 skills in all; SIZES=24: the
#   whole of examples/skills, one library)
#   ONELINE=1: each skill cut to one line, as a quick start writes them (its description's first
#   sentence; its body the first line of the original body)
#   EXTRA=N: N public skills beside each library (../shared/data/skills-mit.jsonl.gz, full texts, from
#   a seeded offset), so that the same requests are measured over libraries of ~100 or ~1,000 skills
#   REQUESTS=FILE: the in-domain requests (default bench/data/short-requests-examples.jsonl; JSONL of
#   {id, text, gold_skill_ids, batch}, batches <= 5 fitted on by the abstention fit)
#   OUT_DIR/tiny.jsonl.gz: every library's records; each record's batch is kept, its id gets @<library>
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: tiny-records.sh OUT_DIR [SEED ...]}; shift
seeds=${*:-1 2}
requests=${REQUESTS:-bench/data/short-requests-examples.jsonl}
sizes=$(echo "${SIZES:-3 3 4 4 5 5}" | tr ' ' ',')
mkdir -p "$out"
P=models/gavel-mini.projections.gguf
k1=$(node --input-type=module -e "import { Projections } from 'gavel-router'; const p = await Projections.load('$P'); console.log(p.lexicalK1 + ' ' + p.lexicalB)")
set -- $k1; K1=$1; B=$2
CLI="node dist/cli/gavel.js"
A="--model models/gavel-mini.gguf --projections $P --context 2048 --skill-budget 512"
: > "$out/tiny.jsonl"
for seed in $seeds; do
  # the seeded cut: library name, then its skill folders
  node -e '
    const fs = require("fs"); let s = Number(process.argv[1]) * 2654435761 % 4294967296;
    const rnd = () => (s = (s * 1664525 + 1013904223) % 4294967296) / 4294967296;
    const all = fs.readdirSync("examples/skills").filter((d) => fs.existsSync(`examples/skills/${d}/SKILL.md`)).sort();
    for (let i = all.length - 1; i > 0; i--) { const j = Math.floor(rnd() * (i + 1)); [all[i], all[j]] = [all[j], all[i]]; }
    let at = 0; process.argv[2].split(",").map(Number).forEach((n, k) => { console.log(`s${process.argv[1]}l${k} ${all.slice(at, at + n).join(" ")}`); at += n; });
  ' "$seed" "$sizes" > "$out/libraries-$seed.txt"
  while read -r name skills; do
    d="$out/$name"; rm -rf "$d"; mkdir -p "$d/skills"
    for sk in $skills; do cp -r "examples/skills/$sk" "$d/skills/"; done
    if [ "${ONELINE:-0}" = 1 ]; then
      for sk in $skills; do node -e '
        const fs = require("fs"); const f = process.argv[1]; const t = fs.readFileSync(f, "utf8");
        const [, front, body] = t.match(/^---\n([\s\S]*?)\n---\n([\s\S]*)$/);
        const name = front.match(/^name: (.*)$/m)[1]; const desc = front.match(/^description: (.*)$/m)[1];
        const first = desc.split(/(?<=\.) /)[0]; const line = body.split("\n").find((l) => l.trim() !== "").replace(/^#+ */, "");
        fs.writeFileSync(f, `---\nname: ${name}\ndescription: ${first}\n---\n\n${line}\n`);' "$d/skills/$sk/SKILL.md"; done
    fi
    # in-domain: the requests whose gold skill is in this library
    node -e '
      const fs = require("fs"); const lib = new Set(process.argv[2].split(" "));
      for (const l of fs.readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean)) {
        const t = JSON.parse(l); if (t.gold_skill_ids.some((g) => lib.has(g))) console.log(JSON.stringify({ ...t, gold_skill_ids: t.gold_skill_ids.filter((g) => lib.has(g)) }));
      }' "$requests" "$skills" > "$d/in.jsonl"
    $CLI install "$d/skills" --bank "$d/bank" --jobs 2 --threads 2 $A > "$d/install.txt" 2>&1
    L="--library $d/skills"
    if [ "${EXTRA:-0}" -gt 0 ]; then
      # (head closes the pipe early: no pipefail there)
      (set +o pipefail; zcat ../shared/data/skills-mit.jsonl.gz | tail -n +$(( seed * 7919 % 20000 + 1 )) | head -n "$EXTRA") | node -e '
        const rl = require("readline").createInterface({ input: process.stdin });
        rl.on("line", (l) => { const d = JSON.parse(l); console.log(JSON.stringify({ id: d.id, name: d.name, description: d.description, body: d.body })); });' > "$d/extra.jsonl"
      $CLI install "$d/extra.jsonl" --bank "$d/bank" --jobs 4 --threads 2 $A >> "$d/install.txt" 2>&1
      L="$L --library $d/extra.jsonl"
    fi
    E="$L --bank $d/bank --methods bm25,glance,ruling --pool 8 --lexical-pool 8 $A"
    if [ -s "$d/in.jsonl" ]; then $CLI eval --tasks "$d/in.jsonl" $E --per-query "$d/in.rec.jsonl" > "$d/eval-in.txt" 2>&1; fi
    $CLI eval --tasks bench/data/off-domain-prompts.jsonl $E --per-query "$d/off.rec.jsonl" > "$d/eval-off.txt" 2>&1
    cat "$d"/*.rec.jsonl > "$d/all.jsonl" && gzip -f "$d/all.jsonl"
    mkdir -p "$d/lex"
    npx vite-node scripts/device/lexical-records.ts -- "$requests",bench/data/off-domain-prompts.jsonl \
      "$d/lex" "$d/all.jsonl.gz" $L --k1 "$K1" --b "$B" > "$d/lex.txt" 2>&1
    zcat "$d/lex/all.jsonl.gz" | node -e '
      const rl = require("readline").createInterface({ input: process.stdin });
      rl.on("line", (l) => { const r = JSON.parse(l); r.id = `${r.id}@${process.argv[1]}`; console.log(JSON.stringify(r)); });' "$name" >> "$out/tiny.jsonl"
    echo "$name ($(echo $skills | wc -w) skills + ${EXTRA:-0}): $(wc -l < "$d/in.jsonl") in-domain; $(wc -l < "$out/tiny.jsonl") records so far"
  done < "$out/libraries-$seed.txt"
done
gzip -f "$out/tiny.jsonl"
