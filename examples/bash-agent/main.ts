/**
 * The bash agent from the command line, over a local GGUF model (default: the embedded gavel-mini
 * pair and the example skills), one JSON line per step on stdout (or --log FILE).
 *
 *   npx vite-node examples/bash-agent/main.ts -- "Make 256 px WebP thumbnails of the photos" --max-turns 2
 *
 * Options: --model FILE --projections FILE --skills DIR --gate WEIGHTS.json or a `gavel train-gate`
 * file (else the margin rule, --margin M) --gate-state star|final (the state a weights file reads;
 * a gate file says it itself) --no-gate --max-turns N --max-tokens N --temperature T --seed N --timeout SECONDS
 * --context N --threads N --log FILE --keep-sandbox.
 */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Model, Router, defaultModelPaths } from "gavel-router";
import { loadGateModel, MarginGate, ModelPolicy, runAgent, type AgentEvent } from "./agent.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    model: { type: "string" },
    projections: { type: "string" },
    skills: { type: "string" },
    gate: { type: "string" },
    "gate-state": { type: "string" },
    margin: { type: "string" },
    "no-gate": { type: "boolean", default: false },
    "max-turns": { type: "string", default: "4" },
    "max-tokens": { type: "string", default: "256" },
    temperature: { type: "string", default: "0" },
    seed: { type: "string" },
    timeout: { type: "string", default: "10" },
    context: { type: "string", default: "2048" },
    threads: { type: "string" },
    log: { type: "string" },
    "keep-sandbox": { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
});

if (values.help || positionals.length === 0) {
  console.log("usage: main.ts [options] \"TASK\"  (see the header of examples/bash-agent/main.ts)");
  process.exit(values.help ? 0 : 2);
}

const defaults = defaultModelPaths();
const modelPath = values.model ?? defaults.model;
const projections = values.projections ?? defaults.projections;
const skills = values.skills ?? fileURLToPath(new URL("../skills", import.meta.url));

if (values.log) writeFileSync(values.log, "");
const log = (e: AgentEvent) => {
  const line = JSON.stringify({ t: new Date().toISOString(), ...e }) + "\n";
  if (values.log) appendFileSync(values.log, line);
  else process.stdout.write(line);
};

const model = await Model.load(modelPath, { contextSize: Number(values.context), ...(values.threads ? { threads: Number(values.threads) } : {}) });
const bankDir = mkdtempSync(join(tmpdir(), "bash-agent-bank-"));
try {
  const router = await Router.open(model, { projections, bankDir, skillBudget: Math.floor(Number(values.context) / 2) });
  await router.install(skills);
  const gate = values["no-gate"] ? null : values.gate ? await loadGateModel(values.gate) : new MarginGate(values.margin ? Number(values.margin) : undefined);
  const result = await runAgent(positionals.join(" "), {
    router,
    gate,
    ...(values["gate-state"] ? { gateState: values["gate-state"] as "star" | "final" } : {}),
    policy: new ModelPolicy(model, {
      temperature: Number(values.temperature),
      maxTokens: Number(values["max-tokens"]),
      ...(values.seed ? { seed: Number(values.seed) } : {}),
    }),
    maxTurns: Number(values["max-turns"]),
    sandbox: { timeoutMs: Number(values.timeout) * 1000 },
    keepSandbox: values["keep-sandbox"],
    log,
  });
  await router.close();
  process.exitCode = result.status === "error" ? 1 : 0;
} finally {
  await model.dispose();
  rmSync(bankDir, { recursive: true, force: true });
}
