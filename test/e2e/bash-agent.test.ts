// examples/bash-agent end to end: the sandbox (allow-list, time limit, removal), and the agent's loop
// on gavel-mini over the example skills, driven by a scripted policy whose turns are read through
// the real model (so the live context, the gate and the route read real states), then a short run
// with gavel-mini generating.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Gate, GATE_SCORE_FEATURES, Model, Router, type ChatMessage } from "../../src/index.js";
import {
  actionsOf, MarginGate, ModelPolicy, runAgent, ScriptedPolicy, SUBMIT_MARKER, type AgentEvent, type TokenTrace,
} from "../../examples/bash-agent/agent.js";
import { DEFAULT_ALLOWED, parseCommand, refusal, Sandbox } from "../../examples/bash-agent/sandbox.js";
import { repoRoot, viteNodeCli } from "../helpers/paths.js";
import { runNode } from "../helpers/run.js";

const modelPath = join(repoRoot, "models", "gavel-mini.gguf");
const projectionsPath = join(repoRoot, "models", "gavel-mini.projections.gguf");
const skillsDir = join(repoRoot, "examples", "skills");

describe("bash-agent sandbox", () => {
  const allowed = new Set<string>(DEFAULT_ALLOWED);

  it("reads the program of every simple command, past quotes, redirections, assignments and heredocs", () => {
    expect(parseCommand("cat a.txt | grep -c foo > out.txt 2>&1 && echo 'a; rm b'").programs).toEqual(["cat", "grep", "echo"]);
    expect(parseCommand("FOO=1 ls -la; (cd sub && wc -l x)").programs).toEqual(["ls", "cd", "wc"]);
    expect(parseCommand("if [ -f x ]; then cat x; else echo no; fi").programs).toEqual(["[", "cat", "echo"]);
    expect(parseCommand("for f in *.jpg; do echo $f; done").programs).toEqual(["echo"]);
    expect(parseCommand("cat <<'EOF' > f.sh\nrm -rf /\nEOF\nls").programs).toEqual(["cat", "ls"]);
    expect(refusal("ls -la && rm -rf thumbs", allowed)).toMatch(/`rm` is not an allowed command/);
    expect(refusal("echo $(curl x)", allowed)).toMatch(/command substitution/);
    expect(refusal("echo \"`id`\"", allowed)).toMatch(/command substitution/);
    expect(refusal("find . -name '*.tmp' -exec rm {} \\;", allowed)).toMatch(/find -exec/);
    expect(refusal("/bin/rm x", allowed)).toMatch(/not an allowed command/);
    expect(refusal("$CMD x", allowed)).toMatch(/not a plain word/);
    expect(refusal("ls | sort | head -3", allowed)).toBeNull();
  });

  it("runs in its folder, refuses what the allow-list lacks, kills a command past its time limit, and is removed", async () => {
    const box = Sandbox.create({ timeoutMs: 800 });
    try {
      const ok = await box.exec("echo hello > a.txt && cat a.txt && pwd");
      expect(ok).toMatchObject({ refused: null, returncode: 0, timedOut: false });
      expect(ok.output).toBe(`hello\n${box.dir}\n`);
      expect(readFileSync(join(box.dir, "a.txt"), "utf8")).toBe("hello\n");

      const no = await box.exec("curl -O https://example.com/x");
      expect(no.refused).toMatch(/`curl` is not an allowed command/);
      expect(no.returncode).toBeNull();

      // a background child too: the whole process group goes. No clock: each sleep outlasts this
      // test's timeout, so a command left running (or a child holding its output open) fails by timeout.
      const slow = await box.exec("sleep 600 & echo $! > pid; sleep 600");
      expect(slow.timedOut).toBe(true);
      expect(slow.returncode).toBeNull();
      const pid = Number(readFileSync(join(box.dir, "pid"), "utf8"));
      await new Promise((r) => setTimeout(r, 200));
      // gone, or dead and waiting for its reaper (this machine's init may be slow to reap orphans)
      const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, "utf8") : null;
      expect(stat === null || / \(sleep\) Z /.test(stat)).toBe(true);
    } finally {
      box.dispose();
    }
    expect(existsSync(box.dir)).toBe(false);
    await expect(box.exec("ls")).rejects.toThrow(/removed/);
  });
});

/** The scripted conversation: turn 2 is where the agent turns to an image job (examples/skills/image-resizing). */
const TASK = "Make 256 pixel square WebP thumbnails of the photos in ./photos.";
const TURNS = [
  "Let me see what is in the folder first.\n```bash\nls\n```",
  "There is a photos folder. Let me list it.\n```bash\nls photos\n```",
  "I will resize the photos into square thumbnails and convert them to WebP with ImageMagick.\n```bash\nmkdir -p thumbs\n```",
  "I need to download a tool.\n```bash\ncurl -O https://example.com/magick\n```",
  "Let me wait for it.\n```bash\nsleep 600\n```", // outlasts the test's timeout: the time limit must kill it
  `Done.\n\`\`\`bash\necho ${SUBMIT_MARKER} && ls thumbs photos\n\`\`\``,
];
const NEEDY = 2;
/** The turn written again after a skill load. */
const RESTART = "Following the image-resizing skill, I make the output folder first.\n```bash\nmkdir -p thumbs && ls\n```";

/** Turn i of the script, or RESTART right after a skill load. */
function script(_call: number, messages: readonly ChatMessage[]): string {
  if (messages[messages.length - 1].content.startsWith("[skill loaded:")) return RESTART;
  const replies = messages.filter((m) => m.role === "assistant").length;
  const loads = messages.filter((m) => m.content.startsWith("[skill loaded:")).length;
  return TURNS[replies - loads];
}

function setup(dir: string): void {
  mkdirSync(join(dir, "photos"));
  writeFileSync(join(dir, "photos", "a.jpg"), "not really a jpeg");
  writeFileSync(join(dir, "photos", "b.jpg"), "nor this");
}

describe("bash-agent on gavel-mini (scripted turns read through the model)", () => {
  let model: Model;
  let router: Router;
  let bankDir: string;
  /** Every generated token of the run with a gate that never goes positive. */
  const quiet: TokenTrace[] = [];
  let quietEvents: AgentEvent[] = [];

  beforeAll(async () => {
    model = await Model.load(modelPath, { contextSize: 2048, threads: 1 });
    bankDir = mkdtempSync(join(tmpdir(), "bash-agent-bank-"));
    router = await Router.open(model, { projections: projectionsPath, bankDir, skillBudget: 1024 });
    const report = await router.install(skillsDir);
    expect(report.failed).toEqual([]);
  }, 300_000);
  afterAll(async () => {
    await router?.close();
    await model?.dispose();
    if (bankDir) rmSync(bankDir, { recursive: true, force: true });
  });

  it("runs the commands in the sandbox, returns their output, refuses, times out, submits, and never routes when the gate stays negative", async () => {
    const nEmbd = model.info.nEmbd;
    // a linear gate whose logit is −1 at every token
    const gate = new Gate({ weights: new Float64Array(GATE_SCORE_FEATURES.length + nEmbd), bias: -1 });
    const policy = new ScriptedPolicy(model, script);
    const res = await runAgent(TASK, {
      router, policy, gate, setup, sandbox: { timeoutMs: 1_000 }, onToken: (t) => quiet.push(t),
    });
    quietEvents = res.events;
    expect(res.status).toBe("submitted");
    expect(res.turns).toBe(TURNS.length);
    expect(res.output).toBe("photos:\na.jpg\nb.jpg\n\nthumbs:\n");
    const actions = res.events.filter((e): e is Extract<AgentEvent, { type: "action" }> => e.type === "action");
    expect(actions.map((a) => a.command)).toEqual(TURNS.map((t) => actionsOf(t)[0]));
    // outputs come back as the next user message
    expect(actions[1]).toMatchObject({ refused: null, returncode: 0, output: "a.jpg\nb.jpg\n" });
    const obs = res.messages.filter((m) => m.role === "user").slice(1).map((m) => m.content);
    expect(obs[1]).toBe("<returncode>0</returncode>\n<output>\na.jpg\nb.jpg\n</output>");
    // the disallowed command is refused, and the model is told so
    expect(actions[3].refused).toMatch(/`curl` is not an allowed command/);
    expect(obs[3]).toMatch(/^The command was not run: `curl` is not an allowed command/);
    // the sleeping command is killed at the time limit (no clock: not killed, it would outlast the test)
    expect(actions[4]).toMatchObject({ timedOut: true, returncode: null });
    expect(obs[4]).toMatch(/timed out after 1 s and has been killed/);
    // the sandbox is gone
    expect(existsSync(res.sandbox)).toBe(false);
    expect(res.events.at(-1)).toMatchObject({ type: "end", status: "submitted", removed: true, loads: [] });
    // no firing: every token's logit was −1
    expect(quiet.length).toBe(res.events.filter((e) => e.type === "assistant").reduce((n, e) => n + (e as { tokens: number }).tokens, 0));
    expect(quiet.every((t) => t.logit === -1 && !t.fired)).toBe(true);
    expect(res.events.some((e) => e.type === "fire" || e.type === "route" || e.type === "load")).toBe(false);
    expect(res.loads).toEqual([]);
    expect(res.messages.some((m) => m.content.startsWith("[skill loaded:"))).toBe(false);
    // the live context read the whole conversation at each token (prompt + reply so far)
    expect(quiet.every((t, i) => i === 0 || t.turn !== quiet[i - 1].turn || t.contextTokens === quiet[i - 1].contextTokens + 1)).toBe(true);
    // every event is one JSON line
    for (const e of res.events) expect(JSON.parse(JSON.stringify(e))).toEqual(e);
  });

  it("fires on the turn that needs an image skill, loads image-resizing, and restarts the turn with it in context", async () => {
    expect(quiet.length).toBeGreaterThan(0);
    // The gate: positive while the live margin g₁ − g₂ exceeds τ, τ set between the largest margin
    // the other turns reach and the largest the needy turn reaches (measured in the quiet run above,
    // which saw the same conversation up to the firing).
    const marginOf = (turns: (t: TokenTrace) => boolean) => Math.max(...quiet.filter(turns).map((t) => t.features.margin));
    const needy = marginOf((t) => t.turn === NEEDY);
    const before = marginOf((t) => t.turn < NEEDY);
    const after = marginOf((t) => t.turn > NEEDY);
    console.log(`live margins: turns before ${before.toFixed(4)}, needy turn ${needy.toFixed(4)}, after ${after.toFixed(4)}`);
    expect(needy).toBeGreaterThan(before + 0.005);
    const tau = (needy + before) / 2;
    const weights = new Float64Array(GATE_SCORE_FEATURES.length + model.info.nEmbd);
    weights[GATE_SCORE_FEATURES.indexOf("margin")] = 1;
    // where this gate must fire: the second of the first two consecutive tokens of turn NEEDY above τ
    const needyTokens = quiet.filter((t) => t.turn === NEEDY);
    const fireAt = needyTokens.findIndex((t, i) => i > 0 && t.features.margin > tau && needyTokens[i - 1].features.margin > tau);
    expect(fireAt).toBeGreaterThan(0);

    const policy = new ScriptedPolicy(model, script);
    const lines: string[] = [];
    const res = await runAgent(TASK, {
      router, policy, gate: new Gate({ weights, bias: -tau }), setup, maxLoads: 1, sandbox: { timeoutMs: 1_000 },
      log: (e) => lines.push(JSON.stringify(e)),
    });
    const events = lines.map((l) => JSON.parse(l) as AgentEvent);
    expect(res.status).toBe("submitted");
    const fires = events.filter((e): e is Extract<AgentEvent, { type: "fire" }> => e.type === "fire");
    expect(fires.length).toBe(1);
    expect(fires[0]).toMatchObject({ turn: NEEDY, attempt: 0, atToken: fireAt + 1 });
    // the same states as the quiet run up to the firing: the partial text is what the script had written
    const partial = needyTokens.slice(0, fireAt + 1).map((t) => t.text).join("");
    expect(fires[0].partial).toBe(partial);
    expect(TURNS[NEEDY].startsWith(partial) && partial.length < TURNS[NEEDY].length).toBe(true);
    const route = events.find((e): e is Extract<AgentEvent, { type: "route" }> => e.type === "route")!;
    console.log(`fired at token ${fireAt + 1} of turn ${NEEDY} (${JSON.stringify(partial)}); route: ${JSON.stringify(route)}`);
    expect(route).toMatchObject({ turn: NEEDY, name: "image-resizing", abstained: false });
    expect(res.loads).toEqual([{ skill: route.skill, name: "image-resizing", turn: NEEDY, atToken: fireAt + 1 }]);

    // the restarted turn saw: …, the half-written message, then the skill's SKILL.md
    const skillMd = readFileSync(join(skillsDir, "image-resizing", "SKILL.md"), "utf8");
    const restartCall = policy.calls.findIndex((c) => c[c.length - 1].content.startsWith("[skill loaded:"));
    expect(restartCall).toBe(NEEDY + 1);
    const seen = policy.calls[restartCall];
    expect(seen.at(-1)).toEqual({ role: "user", content: `[skill loaded: image-resizing]\n\n${skillMd}` });
    expect(seen.at(-2)).toEqual({ role: "assistant", content: partial });
    expect(seen.length).toBe(policy.calls[NEEDY].length + 2);
    // the restart's reply is the turn's action, and the rest of the run goes on with the skill in context
    const restarted = res.events.find((e) => e.type === "assistant" && e.turn === NEEDY && e.attempt === 1);
    expect(restarted).toMatchObject({ text: RESTART, interrupted: false });
    const actions = res.events.filter((e): e is Extract<AgentEvent, { type: "action" }> => e.type === "action");
    expect(actions[NEEDY].command).toBe("mkdir -p thumbs && ls");
    expect(actions[NEEDY].output).toBe("photos\nthumbs\n");
    expect(policy.calls.at(-1)!.some((m) => m.content === `[skill loaded: image-resizing]\n\n${skillMd}`)).toBe(true);
    expect(existsSync(res.sandbox)).toBe(false);
    // the other turns were as in the quiet run
    expect(actions.map((a) => a.command)).toEqual(quietEvents.filter((e) => e.type === "action").map((a, i) => (i === NEEDY ? "mkdir -p thumbs && ls" : (a as { command: string }).command)));
  });

  it("runs with gavel-mini generating (greedy, a few tokens a turn): the loop's mechanics", async () => {
    const traces: TokenTrace[] = [];
    const res = await runAgent(TASK, {
      router, policy: new ModelPolicy(model, { temperature: 0, maxTokens: 16 }), gate: new MarginGate(), maxTurns: 2, setup,
      onToken: (t) => traces.push(t),
    });
    expect(res.error).toBeUndefined();
    expect(["submitted", "max-turns"]).toContain(res.status);
    expect(res.turns).toBeGreaterThanOrEqual(1);
    const replies = res.events.filter((e): e is Extract<AgentEvent, { type: "assistant" }> => e.type === "assistant");
    expect(replies.length).toBeGreaterThanOrEqual(1);
    for (const r of replies) expect(r.tokens).toBeGreaterThan(0);
    // gavel-mini knows skills text, not the format: each turn ends in an action or a format error
    const outcomes = res.events.filter((e) => e.type === "action" || e.type === "format-error");
    expect(outcomes.length).toBe(res.turns);
    // the live context read every generated token
    expect(traces.length).toBe(replies.reduce((n, r) => n + r.tokens, 0));
    expect(traces.every((t) => Number.isFinite(t.features.max) && t.top.length === 2)).toBe(true);
    expect(existsSync(res.sandbox)).toBe(false);
    console.log(res.events.map((e) => JSON.stringify(e)).join("\n"));
  });

  it("a gate that reads the final layer gets each generated token's final-layer row from generate (gateState, or a gate file's stateLayer)", async () => {
    const seen: Float32Array[] = [];
    const recorder = { step: (_g: ArrayLike<number>, s: ArrayLike<number>) => (seen.push(Float32Array.from(s)), false), reset: () => undefined };
    const res = await runAgent(TASK, { router, policy: new ModelPolicy(model, { temperature: 0, maxTokens: 3 }), gate: recorder, gateState: "final", maxTurns: 1, setup });
    expect(res.error).toBeUndefined();
    expect(seen.length).toBe(3);
    // The same turn generated by hand: the recorder saw exactly the chunks' finalState.
    const { generateChat } = await import("../../src/index.js");
    const finals: Float32Array[] = [];
    const states: Float32Array[] = [];
    for await (const c of generateChat(model, res.messages.slice(0, 2), { temperature: 0, maxTokens: 3, captureLayer: router.projections.layer, finalState: true })) {
      finals.push(c.finalState!);
      states.push(c.state);
    }
    const maxAbs = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);
    for (let i = 0; i < 3; i++) {
      expect(seen[i].length).toBe(model.info.nEmbd);
      expect(maxAbs(seen[i], finals[i])).toBeLessThanOrEqual(1e-4 * finals[i].reduce((m, v) => Math.max(m, Math.abs(v)), 0));
      if (router.projections.layer !== model.info.nLayer - 1) expect(maxAbs(seen[i], states[i])).toBeGreaterThan(0);
    }
    // The scripted policy gives the final-layer rows of one hiddenStatesAt pass.
    const scripted: Float32Array[] = [];
    const rec2 = { step: (_g: ArrayLike<number>, s: ArrayLike<number>) => (scripted.push(Float32Array.from(s)), false), reset: () => undefined };
    const policy = new ScriptedPolicy(model, script);
    const sres = await runAgent(TASK, { router, policy, gate: rec2, gateState: "final", maxTurns: 1, setup });
    expect(sres.error).toBeUndefined();
    const { renderChat } = await import("../../src/index.js");
    const prompt = model.tokenize(renderChat(model.info.chatTemplate ?? null, policy.calls[0], { addGenerationPrompt: true }), { special: true, addBos: model.info.addBos });
    const reply = model.tokenize(TURNS[0], { special: false, addBos: false });
    expect(scripted.length).toBe(reply.length);
    const ref = await model.hiddenStates(Int32Array.from([...prompt, ...reply]), model.info.nLayer - 1);
    const d = model.info.nEmbd;
    scripted.forEach((row, i) => expect(Array.from(row)).toEqual(Array.from(ref.subarray((prompt.length + i) * d, (prompt.length + i + 1) * d))));
    // A gate file's Gate that reads the final layer asks for it by itself (a policy that gave no finalState would end the run in an error).
    const nf = GATE_SCORE_FEATURES.length;
    const gate = new Gate({ weights: new Float64Array(nf + model.info.nEmbd), bias: -1 });
    gate.info = { stateLayer: model.info.nLayer - 1, glanceLayer: router.projections.layer, model: router.projections.model, projections: router.projections.hash, librarySize: 24 };
    expect(gate.stateSource).toBe(router.projections.layer === model.info.nLayer - 1 ? "star" : "final");
    const auto = await runAgent(TASK, { router, policy: new ModelPolicy(model, { temperature: 0, maxTokens: 2 }), gate, maxTurns: 1, setup });
    expect(auto.error).toBeUndefined();
    await expect(runAgent(TASK, { router, gate, gateState: "sideways" as "final", maxTurns: 1, setup })).rejects.toThrow(/gateState/);
  });
});

describe("bash-agent CLI (examples/bash-agent/main.ts)", () => {
  it("runs a turn with gavel-mini and writes one JSON line per step", async () => {
    const dir = mkdtempSync(join(tmpdir(), "bash-agent-cli-"));
    try {
      const log = join(dir, "steps.jsonl");
      const main = join(repoRoot, "examples", "bash-agent", "main.ts");
      const r = await runNode([viteNodeCli, main, "--", "List the files here.", "--max-turns", "1", "--max-tokens", "8", "--threads", "1", "--log", log], { cwd: repoRoot, timeoutMs: 180_000 });
      expect(r.code, r.err).toBe(0);
      const events = readFileSync(log, "utf8").trim().split("\n").map((l) => JSON.parse(l) as AgentEvent & { t: string });
      expect(events[0]).toMatchObject({ type: "start", task: "List the files here.", skills: 24, gate: "margin ≥ 0.06" });
      expect(events.at(-1)).toMatchObject({ type: "end", turns: 1, removed: true });
      expect(events.some((e) => e.type === "assistant")).toBe(true);
      expect(existsSync((events[0] as { sandbox: string }).sandbox)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
