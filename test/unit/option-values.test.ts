// Every public entry point that takes an options object checks it exactly, before any work: not an
// object, an unknown key, a value of the wrong type, NaN, a negative or out-of-range number, an
// empty path: each is a GavelError naming the option and what it takes, never a TypeError from
// inside, never silently taken (a null read as "the default", a string k1 used in arithmetic), and a
// refused Router.open creates no bank. Over real objects: the stories260K model, random projections,
// a router with examples/skills installed, a key bank.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Bm25Index,
  ChatTemplate,
  GlanceIndex,
  KeyBank,
  Model,
  Projections,
  Router,
  connectIfRunning,
  discoverSkills,
  findEndpoint,
  generateChat,
  glancePruned,
  isRunning,
  loadGate,
  loadSkills,
  renderChat,
  request,
  routeViaServerIfRunning,
  searchSkills,
  serverRouter,
  skillRoots,
} from "../../src/index.js";
import * as aiSdk from "../../src/adapters/ai-sdk.js";
import * as langchain from "../../src/adapters/langchain.js";
import * as mastra from "../../src/adapters/mastra.js";
import { needsShared, repoRoot, SHARED, storiesPath } from "../helpers/paths.js";
import { tempDirs } from "../helpers/temp-dirs.js";
import { expectCode } from "../helpers/gavel-error.js";

const SKILLS = join(repoRoot, "examples", "skills");
const newDir = tempDirs("gavel-option-values-");
const NO_SOCKET = join(newDir(), "none.sock");
const MESSAGES = [{ role: "user", content: "hi" }];

/** What `f` throws or rejects with; "no error" when it returns. */
async function outcome(f: () => unknown): Promise<unknown> {
  try {
    await f();
  } catch (err) {
    return err;
  }
  return "no error";
}

/** A row: the entry point, the input in words, the call, the message expected (and the code when not INVALID_ARGUMENT). */
type Row = [entry: string, input: string, call: () => unknown, message: RegExp, code?: string];

/** Each row's call fails with a GavelError of its code whose message matches. */
function refusesAll(rows: () => Row[]): void {
  it("each refusal is typed and names the option", async () => {
    const wrong: string[] = [];
    for (const [entry, input, call, message, code = "INVALID_ARGUMENT"] of rows()) {
      const err = await outcome(call);
      const e = err as { name?: string; code?: string; message?: string };
      if (e?.name !== "GavelError" || e.code !== code || !message.test(e.message ?? "")) {
        wrong.push(`${entry} ${input}: ${err instanceof Error ? `${err.name} ${(err as { code?: string }).code ?? ""} ${err.message}` : String(err)}`);
      }
    }
    expect(wrong).toEqual([]);
  });
}

describe("option values, without a model", () => {
  refusesAll(() => [
    ["loadSkills", "null", () => loadSkills(SKILLS, null as never), /^loadSkills options must be an object$/],
    ["loadSkills", "a misspelt key", () => loadSkills(SKILLS, { limt: 1 } as never), /^unknown option "limt" in loadSkills options \(did you mean limit\?\)/],
    ["loadSkills", "signal a string", () => loadSkills(SKILLS, { signal: "x" } as never), /^signal must be an AbortSignal$/],
    ["discoverSkills", "null", () => discoverSkills(null as never), /^discoverSkills options must be an object$/],
    ["discoverSkills", "projectDir a number", () => discoverSkills({ projectDir: 5 } as never), /^projectDir must be a non-empty path .*got 5$/],
    ["discoverSkills", "home empty", () => discoverSkills({ home: "" }), /^home must be a non-empty path/],
    ["discoverSkills", "codexAdminDir an array", () => discoverSkills({ codexAdminDir: [] } as never), /^codexAdminDir must be a non-empty path .*got an array$/],
    ["discoverSkills", "signal an object", () => discoverSkills({ signal: {} } as never), /^signal must be an AbortSignal$/],
    ["skillRoots", "managedDir an object", () => skillRoots({ managedDir: {} } as never), /^managedDir must be a non-empty path .*got an object$/],
    ["skillRoots", "a misspelt key", () => skillRoots({ hosts: "all" } as never), /^unknown option "hosts" in skillRoots options \(did you mean host\?\)/],
    ["KeyBank", "null", () => new KeyBank(4, null as never), /^KeyBank options must be an object$/],
    ["KeyBank", "a misspelt key", () => new KeyBank(4, { keytype: "f16" } as never), /did you mean keyType\?/],
    ["KeyBank", "keyType null", () => new KeyBank(4, { keyType: null } as never), /^keyType must be "f32" or "f16", got null$/],
    ["Bm25Index", "null", () => new Bm25Index([], null as never), /^bm25 options must be an object$/],
    ["Bm25Index", "k1 a string", () => new Bm25Index([], { k1: "5" } as never), /^bm25: k1 must be a finite number, got the string "5"$/],
    ["Bm25Index", "b an array", () => new Bm25Index([], { b: [] } as never), /^bm25: b must be a finite number, got an array$/],
    ["Bm25Index", "b 2", () => new Bm25Index([], { b: 2 }), /^bm25: b must be in \[0, 1\], got 2$/],
    ["ChatTemplate", "null", () => new ChatTemplate(null as never), /^ChatTemplate options must be an object$/],
    ["ChatTemplate", "bosToken a number", () => new ChatTemplate({ bosToken: 1 } as never), /^bosToken must be a string, got 1$/],
    ["ChatTemplate", "a misspelt key", () => new ChatTemplate({ templat: "" } as never), /did you mean template\?/],
    ["ChatTemplate.render", "tools a string", () => new ChatTemplate().render(MESSAGES, { tools: "x" } as never), /^tools must be an array$/],
    ["renderChat", "extra a number", () => renderChat(null, MESSAGES, { extra: 5 } as never), /^extra must be an object$/],
    ["renderChat", "enableThinking a string", () => renderChat(null, MESSAGES, { enableThinking: "yes" } as never), /^enableThinking must be a boolean/],
    ["renderChat", "eosToken an object", () => renderChat(null, MESSAGES, { eosToken: {} } as never), /^eosToken must be a string, got an object$/],
    ["findEndpoint", "null", () => findEndpoint(null as never), /^findEndpoint options must be an object$/],
    ["findEndpoint", "socket a number", () => findEndpoint({ socket: 5 } as never), /^socket must be a non-empty path .*got 5$/],
    ["connectIfRunning", "bank an object", () => connectIfRunning({ bank: {} } as never), /^bank must be a non-empty path .*got an object$/],
    ["routeViaServerIfRunning", "verdict a string", () => routeViaServerIfRunning("t", { socket: NO_SOCKET, verdict: "no" } as never), /^verdict must be a boolean/],
    ["routeViaServerIfRunning", "a misspelt key", () => routeViaServerIfRunning("t", { socket: NO_SOCKET, abstian: false } as never), /did you mean abstain\?/],
    ["isRunning", "timeoutMs -1", () => isRunning({ socket: NO_SOCKET, timeoutMs: -1 }), /^timeoutMs must be an integer in \[1, 2\^31 - 1\], got -1$/],
    ["request", "timeoutMs a string, no server", () => request({ socket: NO_SOCKET }, "ping", {}, { timeoutMs: "5" } as never), /^timeoutMs must be an integer in \[1, 2\^31 - 1\], got the string "5"$/],
    ["request", "onProgress a number", () => request({ socket: NO_SOCKET }, "ping", {}, { onProgress: 1 } as never), /^onProgress must be a function, got 1$/],
    ["serverRouter", "null", () => serverRouter(null as never), /^serverRouter options must be an object$/],
    ["serverRouter", "timeoutMs NaN", () => serverRouter({ timeoutMs: Number.NaN }), /^timeoutMs must be an integer in \[1, 2\^31 - 1\], got NaN$/],
    ["serverRouter", "start.waitMs -1", () => serverRouter({ start: { waitMs: -1 } }), /^start\.waitMs must be an integer/],
    ["serverRouter", "start a string", () => serverRouter({ start: "yes" } as never), /^start \(a boolean or \{ idleExitMs, waitMs, serveArgs \}\) must be an object$/],
    ["serverRouter", "start.serveArgs a string", () => serverRouter({ start: { serveArgs: "--model m" } } as never), /^start\.serveArgs must be an array of at most 64 strings$/],
    ["serverRouter", "start.serveArgs with an empty string", () => serverRouter({ start: { serveArgs: ["--model", ""] } }), /^start\.serveArgs\[1\] must be a non-empty string/],
    ["serverRouter", "start.serveArgs naming the bank", () => serverRouter({ start: { serveArgs: ["--bank=/x"] } }), /^start\.serveArgs\[0\] is --bank=\/x: the start sets --bank, --socket and --idle-exit-ms itself$/],
    ["loadGate", "a misspelt key, no file", () => loadGate(join(newDir(), "gate.json"), { routr: undefined } as never), /^unknown option "routr" in loadGate options \(did you mean router\?\)/],
  ]);
});

describe.skipIf(needsShared("stories260K model for option checks over a real router", SHARED.stories))("option values, over a real model and router", () => {
  let model: Model;
  let projections: Projections;
  let router: Router;
  let bank: KeyBank;
  let index: GlanceIndex;
  const q = new Float32Array(16).fill(0.25);
  beforeAll(async () => {
    model = await Model.load(storiesPath, { contextSize: 512, threads: 1 });
    projections = await Projections.random(model, { seed: 3, dim: 16 });
    router = await Router.open(model, { projections, bankDir: join(newDir(), "bank"), skillBudget: 256 });
    const { skills } = await loadSkills(SKILLS, { limit: 3 });
    await router.install(skills);
    bank = new KeyBank(16);
    for (let s = 0; s < 6; s++) bank.add(new Float32Array(32).map((_, i) => Math.sin(s * 7 + i)));
    index = await GlanceIndex.build(bank, { centroids: 2 });
  }, 120_000);
  afterAll(async () => {
    await router?.close();
    await model?.dispose();
  });

  /** Router.open over a fresh bank folder with `extra` options. */
  const open = (extra: Record<string, unknown>) => Router.open(model, { projections, bankDir: join(newDir(), "bank"), skillBudget: 256, ...extra } as never);

  refusesAll(() => [
    ["Projections.random", "null", () => Projections.random(model, null as never), /^Projections\.random options must be an object$/],
    ["Projections.random", "a misspelt key", () => Projections.random(model, { sead: 1 } as never), /did you mean seed\?/],
    ["Projections.random", "seed 2**53", () => Projections.random(model, { seed: 2 ** 53 }), /^Projections\.random: seed must be a safe integer, got 9007199254740992$/],
    ["Projections.random", "dim null", () => Projections.random(model, { dim: null } as never), /^Projections\.random: dim must be an integer from 1 to 4096, got null$/],
    ["Projections.random", "layer null", () => Projections.random(model, { layer: null } as never), /^Projections\.random: layer must be an integer layer index/, "LAYER_OUT_OF_RANGE"],
    ["Router.open", "projections empty", () => open({ projections: "" }), /^projections must be a Projections object or the non-empty path of a projections file, got the string ""$/],
    ["Router.open", "truncate null", () => open({ truncate: null }), /^truncate must be "start" or "end", got null$/],
    ["Router.open", "keyType null", () => open({ keyType: null }), /^keyType must be "f32" or "f16", got null$/],
    // checked before the projections file is read: the option's error, not FILE_NOT_FOUND
    ["Router.open", "truncate bad, projections missing", () => open({ projections: join(newDir(), "none.gguf"), truncate: "middle" }), /^truncate must be "start" or "end"/],
    ["Router.open", "keyBudget 2**53, projections missing", () => open({ projections: join(newDir(), "none.gguf"), keyBudget: 2 ** 53 }), /^keyBudget must be an integer in \[16, 1048576\]/],
    ["GlanceIndex.build", "null", () => GlanceIndex.build(bank, null as never), /^GlanceIndex\.train options must be an object$/],
    ["GlanceIndex.build", "a misspelt key", () => GlanceIndex.build(bank, { centroid: 2 } as never), /did you mean centroids\?/],
    ["glancePruned", "null", () => glancePruned(bank, index, q, null as never), /^glancePruned options must be an object$/],
    ["glancePruned", "keep a string", () => glancePruned(bank, index, q, { keep: "x" } as never), /^keep must be a function, got the string "x"$/],
    ["glancePruned", "nprobe null", () => glancePruned(bank, index, q, { nprobe: null } as never), /^nprobe must be an integer .*got null$/],
    ["glancePruned", "maxCandidates null", () => glancePruned(bank, index, q, { maxCandidates: null } as never), /^maxCandidates must be an integer .*got null$/],
    ["generateChat", "null", () => generateChat(model, MESSAGES, null as never), /^generateChat options must be an object$/],
    ["generateChat", "template a number", () => generateChat(model, MESSAGES, { template: 5 } as never), /^template must be an object$/],
    ["generateChat", "template's addGenerationPrompt", () => generateChat(model, MESSAGES, { template: { addGenerationPrompt: false } } as never), /^unknown option "addGenerationPrompt" in template/],
    ["searchSkills", "null", () => searchSkills(router, "write a dockerfile", 3, undefined, null as never), /^searchSkills options must be an object$/],
    ["searchSkills", "signal a string", () => searchSkills(router, "write a dockerfile", 3, "x" as never), /^signal must be an AbortSignal$/],
    ["Model.tokenizeAsync", "signal a string", () => model.tokenizeAsync("a cat", { signal: "x" } as never), /^signal must be an AbortSignal$/],
    ["Model.tokenizeAsync", "a misspelt key", () => model.tokenizeAsync("a cat", { signl: new AbortController().signal } as never), /^unknown option "signl" in tokenizeAsync options \(did you mean signal\?\)/],
    ["Model.tokenize", "signal (tokenizeAsync's alone)", () => model.tokenize("a cat", { signal: new AbortController().signal } as never), /^unknown option "signal" in tokenize options/],
    ["KeyBank.glance", "signal an object without listeners", () => bank.glance(q, { signal: { aborted: false } } as never), /^signal must be an AbortSignal$/],
    ["KeyBank.glance", "signal null", () => bank.glance(q, { signal: null } as never), /^signal must be an AbortSignal$/],
    ["ai-sdk gavelLoadSkillTool", "maxChars null", () => aiSdk.gavelLoadSkillTool(router, { maxChars: null } as never), /^maxChars must be a non-negative integer or Infinity, got null$/],
    ["ai-sdk gavelPrepareStep", "maxChars 1.5", () => aiSdk.gavelPrepareStep(router, { maxChars: 1.5 }), /^maxChars must be a non-negative integer or Infinity, got 1\.5$/],
    ["ai-sdk gavelPrepareStep", "system a number", () => aiSdk.gavelPrepareStep(router, { system: 5 } as never), /^system must be a string, got 5$/],
    ["ai-sdk gavelSearchSkillsTool", "description an object", () => aiSdk.gavelSearchSkillsTool(router, { description: {} } as never), /^description must be a string, got an object$/],
    ["ai-sdk gavelSkillTools", "search a string", () => aiSdk.gavelSkillTools(router, { search: "x" } as never), /^search \(gavelSearchSkillsTool options\) must be an object$/],
    ["ai-sdk gavelSkills", "loadSkill null", () => aiSdk.gavelSkills(router, { loadSkill: null } as never), /^loadSkill \(gavelLoadSkillTool options\) must be an object$/],
    ["langchain gavelSearchSkillsTool", "name empty", () => langchain.gavelSearchSkillsTool(router, { name: "" }), /^name must be a non-empty string, got the string ""$/],
    ["langchain gavelLoadSkillTool", "description a number", () => langchain.gavelLoadSkillTool(router, { description: 1 } as never), /^description must be a string, got 1$/],
    ["langchain GavelSkillRetriever", "maxChars -Infinity", () => new langchain.GavelSkillRetriever(router, { maxChars: -Infinity }), /^maxChars must be a non-negative integer or Infinity/],
    ["mastra gavelSkillProcessor", "id a number", () => mastra.gavelSkillProcessor(router, { id: 5 } as never), /^id must be a non-empty string, got 5$/],
    ["mastra gavelSkillTools", "maxChars NaN", () => mastra.gavelSkillTools(router, { maxChars: Number.NaN }), /^maxChars must be a non-negative integer or Infinity, got NaN$/],
  ]);

  it("a refused Router.open leaves no bank folder behind", async () => {
    for (const extra of [{ truncate: null }, { keyType: null }, { projections: "" }, { truncate: "middle", projections: join(newDir(), "none.gguf") }]) {
      const bankDir = join(newDir(), "bank");
      await expectCode(Router.open(model, { projections, bankDir, skillBudget: 256, ...extra } as never), "INVALID_ARGUMENT");
      expect(existsSync(bankDir)).toBe(false);
    }
  });

  it("the values the options take still pass", async () => {
    expect((await Projections.random(model, { seed: -1, dim: 4, layer: 0 })).dim).toBe(4);
    expect(new Bm25Index([], { k1: 0, b: 1 }).b).toBe(1);
    expect(new KeyBank(4, { keyType: "f16" }).keyType).toBe("f16");
    expect(renderChat(null, MESSAGES, { tools: [], extra: {}, enableThinking: false, bosToken: "", eosToken: "" })).toContain("hi");
    expect(skillRoots({ host: "codex", projectDir: "/p", home: "/h", codexAdminDir: "/etc/codex" }).length).toBeGreaterThan(0);
    expect((await loadSkills(SKILLS, { offset: 0, limit: Infinity, signal: new AbortController().signal })).skills.length).toBeGreaterThan(0);
    expect(await model.tokenizeAsync("a cat", { special: false, addBos: true, signal: new AbortController().signal })).toEqual(model.tokenize("a cat", { addBos: true }));
    expect(await isRunning({ socket: NO_SOCKET, timeoutMs: 50 })).toBe(false);
    expect(await routeViaServerIfRunning("t", { socket: NO_SOCKET, verdict: false, signal: undefined })).toBeNull();
    expect((await glancePruned(bank, index, q, { nprobe: "all", maxCandidates: 0, keep: () => true })).search).toBeDefined();
    expect(aiSdk.gavelLoadSkillTool(router, { maxChars: Infinity, description: "" })).toBeDefined();
    expect(mastra.gavelSkillProcessor(router, { id: "skills", maxChars: 0 }).id).toBe("skills");
    serverRouter({ socket: NO_SOCKET, timeoutMs: 1000, start: { idleExitMs: 1000, waitMs: 1000 } }).close();
  });
});
