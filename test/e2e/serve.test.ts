// `gavel serve`, run as a user would (node dist/cli/gavel.js serve …) over a temp bank of
// examples/skills with the embedded gavel-mini pair, checked against an in-process Router.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, statSync, existsSync, writeFileSync } from "node:fs";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { Model } from "../../src/model/Model.js";
import { Router, type RouteResult } from "../../src/route/index.js";
import { connect, isRunning, routeViaServerIfRunning, type ServeClient } from "../../src/serve/client.js";
import { runNode } from "../helpers/run.js";
import { repoRoot } from "../helpers/paths.js";
import { cli, startServe, type ServeChild } from "../helpers/serve-process.js";
import { expectCode } from "../helpers/gavel-error.js";

const skillsDir = join(repoRoot, "examples", "skills");
const env = { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "" };
const TASKS = [
  "Our quarterly report came as report.pdf; get the revenue table out of it into a CSV file.",
  "This Postgres query on the orders table takes eight seconds; figure out why and make it fast.",
  "Turn the 400 product photos in ./photos into 256 pixel square thumbnails in WebP.",
  "Write a haiku about autumn leaves.",
];

/** A folder of `n` small SKILL.md folders named `<prefix>-<i>`. */
function syntheticSkills(dir: string, prefix: string, n: number): string {
  for (let i = 0; i < n; i++) {
    const d = join(dir, `${prefix}-${i}`);
    mkdirSync(d, { recursive: true });
    const body = `# ${prefix} ${i}\n\n` + `Step ${i}: configure the ${prefix} widget number ${i}, check its logs and restart the service when the health probe fails.\n`.repeat(20);
    writeFileSync(join(d, "SKILL.md"), `---\nname: ${prefix}-${i}\ndescription: Operate the ${prefix} widget ${i} and its service. Use when widget ${i} misbehaves.\n---\n${body}`);
  }
  return dir;
}

const strip = (r: RouteResult) => ({ skill: r.skill, abstained: r.abstained, verdict: r.verdict, shortlist: r.shortlist.map((c) => c.skill) });

describe("gavel serve", () => {
  let dir: string;
  let bank: string;
  let socket: string;
  let server: ServeChild;
  const local: { route: RouteResult[]; glance: RouteResult[]; body: string } = { route: [], glance: [], body: "" };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "gavel-serve-"));
    bank = join(dir, "bank");
    socket = join(bank, "serve.sock");
    // the in-process reference: same pair, same context, same bank
    const model = await Model.load(DEFAULT_MODEL, { contextSize: 2048 });
    try {
      const router = await Router.open(model, { projections: DEFAULT_PROJECTIONS, bankDir: bank });
      try {
        const rep = await router.install(skillsDir);
        expect(rep.failed).toEqual([]);
        for (const t of TASKS) {
          local.route.push(await router.route(t));
          local.glance.push(await router.route(t, { verdict: false }));
        }
      } finally {
        await router.close();
      }
    } finally {
      await model.dispose();
    }
    // a stale socket left by a killed server: the new one must replace it
    const stale = await runNode(["-e", `require("net").createServer().listen(${JSON.stringify(socket)}, () => process.kill(process.pid, "SIGKILL"))`]);
    expect(stale.code).toBe(null);
    expect(statSync(socket).isSocket()).toBe(true);
    server = await startServe(["--bank", bank], { env });
  }, 300_000);

  afterAll(() => {
    server?.child.kill("SIGKILL");
  });

  it("listens on a 0600 socket in the bank, replacing a stale one", async () => {
    expect(server.out()).toContain(`listening on ${socket}`);
    expect(statSync(socket).mode & 0o777).toBe(0o600);
    expect(await isRunning(bank)).toBe(true);
    expect(await isRunning(join(dir, "elsewhere"))).toBe(false);
  });

  it("answers route, glance and get-skill as an in-process Router does", async () => {
    const c = await connect({ bank });
    try {
      for (let i = 0; i < TASKS.length; i++) {
        const r = await c.request<RouteResult & { winner: { path: string | null } | null }>("route", { task: TASKS[i] });
        expect(strip(r)).toEqual(strip(local.route[i]));
        r.shortlist.forEach((cand, j) => expect(cand.g).toBeCloseTo(local.route[i].shortlist[j].g, 5));
        const g = await c.request<RouteResult>("glance", { task: TASKS[i] });
        expect(strip(g)).toEqual(strip(local.glance[i]));
        expect(g.verdict).toBe("off");
        if (r.skill) {
          expect(r.winner!.path).toBe(join(skillsDir, r.skill, "SKILL.md"));
          expect(r.load).toMatchObject({ id: r.skill, path: join(skillsDir, r.skill, "SKILL.md"), dir: join(skillsDir, r.skill) });
        } else expect(r.load).toBeNull();
      }
      expect(local.route[0].skill).toBe("pdf-extract");
      const doc = await c.request<{ name: string; body: string; path: string; contentHash: string; allowedTools: unknown; provenance: unknown; sourceStatus: string; keys: number }>("get-skill", { skill: "pdf-extract" });
      expect(doc.name).toBe("pdf-extract");
      expect(doc).toMatchObject({ allowedTools: null, sourceStatus: "current", provenance: { kind: "folder", hostFolder: skillsDir } });
      expect(doc.keys).toBeGreaterThan(0);
      expect(doc.path).toBe(join(skillsDir, "pdf-extract", "SKILL.md"));
      expect(doc.body.length).toBeGreaterThan(100);
      await expectCode(c.request("get-skill", { skill: "no-such-skill" }), "SKILL_NOT_FOUND");
      await expectCode(c.request("route", {}), "INVALID_ARGUMENT");
    } finally {
      c.close();
    }
    const via = await routeViaServerIfRunning<RouteResult>(TASKS[1], { bank });
    expect(via && strip(via)).toEqual(strip(local.route[1]));
    expect(await routeViaServerIfRunning(TASKS[1], { bank: join(dir, "none") })).toBeNull();
  });

  it("answers 20 concurrent clients as one client: routes and glances (batched passes, glances, verdicts)", async () => {
    const clients: ServeClient[] = await Promise.all(Array.from({ length: 20 }, () => connect({ bank })));
    try {
      for (const op of ["route", "glance"] as const) {
        const want = op === "route" ? local.route : local.glance;
        // every client at once, twice: the second wave arrives while the first one's work still runs
        const waves = await Promise.all(clients.map(async (c, i) => [await c.request<RouteResult>(op, { task: TASKS[i % TASKS.length] }), await c.request<RouteResult>(op, { task: TASKS[(i + 1) % TASKS.length] })]));
        waves.forEach(([a, b], i) => {
          for (const [r, t] of [[a, i % TASKS.length], [b, (i + 1) % TASKS.length]] as const) {
            expect(strip(r), `${op}, client ${i}, task ${t}`).toEqual(strip(want[t]));
            // a batched forward pass moves the rows by float order only (test/model/states-scheduler.test.ts)
            r.shortlist.forEach((c, j) => expect(Math.abs(c.g - want[t].shortlist[j].g), `${op}, client ${i}, task ${t}, g of ${c.skill}`).toBeLessThan(1e-3));
          }
        });
      }
    } finally {
      for (const c of clients) c.close();
    }
  }, 120_000);

  it("serves 8 concurrent routes, also while an install runs", async () => {
    const clients: ServeClient[] = await Promise.all(Array.from({ length: 8 }, () => connect({ bank })));
    try {
      const eight = () => Promise.all(clients.map((c, i) => c.request<RouteResult>("route", { task: TASKS[i % TASKS.length] })));
      const first = await eight();
      first.forEach((r, i) => expect(strip(r)).toEqual(strip(local.route[i % TASKS.length])));
      const extra = syntheticSkills(join(dir, "more"), "widget", 20);
      const installer = await connect({ bank });
      let installing = true;
      const install = installer.request<{ installed: string[]; failed: unknown[] }>("install", { source: extra }).finally(() => (installing = false));
      await new Promise((r) => setTimeout(r, 50));
      const during = await eight();
      expect(installing).toBe(true); // the routes were answered while the install ran
      during.forEach((r) => expect(typeof r.abstained).toBe("boolean"));
      const rep = await install;
      installer.close();
      expect(rep.installed).toHaveLength(20);
      expect(rep.failed).toEqual([]);
      const listed = await clients[0].request<{ name: string }[]>("list");
      expect(listed.map((s) => s.name)).toContain("widget-19");
      expect(await clients[0].request("uninstall", { skill: "widget-19" })).toEqual({ removed: true });
    } finally {
      for (const c of clients) c.close();
    }
  }, 120_000);

  it("aborts a cancelled request", async () => {
    const c = await connect({ bank });
    try {
      // a route and its cancel in one write: the cancel lands before the model runs
      const raw = await new Promise<string>((resolve) => {
        const s = netConnect(socket);
        let buf = "";
        s.setEncoding("utf8").on("data", (d: string) => {
          buf += d;
          if (buf.includes("\n")) (s.end(), resolve(buf));
        });
        s.write(JSON.stringify({ v: 1, id: "r1", op: "route", task: TASKS[0] }) + "\n" + JSON.stringify({ v: 1, id: "r1", op: "cancel" }) + "\n");
      });
      expect(JSON.parse(raw)).toMatchObject({ v: 1, id: "r1", ok: false, error: { code: "ABORTED" } });
      // an install cancelled through the client's AbortSignal
      const ac = new AbortController();
      const p = c.request("install", { source: syntheticSkills(join(dir, "cancelled"), "gizmo", 40) }, { signal: ac.signal });
      setTimeout(() => ac.abort(), 300);
      await expectCode(p, "ABORTED");
      // the server is still fine
      expect(await c.request("ping")).toEqual({ pong: true, v: 1 });
    } finally {
      c.close();
    }
  }, 120_000);

  it("answers `gavel route` for the bank instead of failing with BANK_LOCKED, with no model of its own", async () => {
    // a missing --model: the CLI would fail to load it; through the server it is never read
    const r = await runNode([cli, "route", TASKS[0], "--bank", bank, "--json", "--model", join(dir, "no-such-model.gguf")], { env, timeoutMs: 60_000 });
    expect(r.err).not.toMatch(/BANK_LOCKED/);
    expect(r.code, r.err).toBe(0);
    const res = JSON.parse(r.out) as RouteResult & { winner: unknown };
    // the bank gained widget skills since local.route was taken: the winner is what must agree
    expect(res.skill).toBe(local.route[0].skill);
    expect(res.winner).toMatchObject({ name: "pdf-extract" });
    // --no-abstain: the bank gained widget skills since local.glance was taken, and over a library
    // this small the default's abstention sits near its cut (docs/BENCHMARKS.md, "Abstention: a model by library size");
    // what this checks is that the server answers the CLI's route, not the abstention
    const text = await runNode([cli, "route", TASKS[1], "--bank", bank, "--no-verdict", "--no-abstain"], { env, timeoutMs: 60_000 });
    expect(text.code).toBe(0);
    // the server's own answer to the same request over the bank as it is now (local.glance predates the widgets)
    const c = await connect({ bank });
    try {
      const want = await c.request<RouteResult>("route", { task: TASKS[1], verdict: false, abstain: false });
      expect(want.abstained).toBe(false);
      expect(text.out).toContain(`chosen: ${want.skill}`);
      // libraryCut travels to the router like the other flags (which checks it)
      await expectCode(c.request("route", { task: TASKS[1], libraryCut: "yes" }), "INVALID_ARGUMENT", /libraryCut/);
      expect((await c.request<RouteResult>("route", { task: TASKS[1], verdict: false, abstain: false, libraryCut: false })).skill).toBe(want.skill);
    } finally {
      c.close();
    }
    expect(text.out).toContain("verdict: off");
  }, 60_000);

  it("answers `gavel glance` and `gavel list` for the bank: no model of their own (a missing --model is not read)", async () => {
    // read locally, a missing model file fails FILE_NOT_FOUND; the server's model answers instead
    const noModel = ["--model", join(dir, "no-such-model.gguf")];
    const g = await runNode([cli, "glance", TASKS[0], "--bank", bank, "--top", "3", "--json", ...noModel], { env, timeoutMs: 60_000 });
    expect(g.code, g.err).toBe(0);
    const hits = JSON.parse(g.out) as { skill: string; g: number }[];
    expect(hits).toHaveLength(3);
    expect(hits[0].g).toBeGreaterThanOrEqual(hits[1].g);
    // the server's own glance of the bank as it is now (an earlier test installs more skills into it)
    const direct = await connect({ bank });
    try {
      const top = await direct.request<{ skill: string; g: number }[]>("glance-top", { task: TASKS[0], k: 3 });
      expect(hits.map((h) => h.skill)).toEqual(top.map((h) => h.skill));
      hits.forEach((h, i) => expect(h.g).toBeCloseTo(top[i].g, 6));
    } finally {
      direct.close();
    }
    const l = await runNode([cli, "list", "--bank", bank, "--json", ...noModel], { env, timeoutMs: 60_000 });
    expect(l.code, l.err).toBe(0);
    const skills = JSON.parse(l.out) as Record<string, unknown>[];
    const c = await connect({ bank });
    try {
      const status = await c.request<{ skills: number; inFlight: number }>("status");
      expect(skills).toHaveLength(status.skills);
      // nothing else is in flight, and status itself is not counted
      expect(status.inFlight).toBe(0);
    } finally {
      c.close();
    }
    // Router.list's fields, as a local `gavel list --json` prints them
    const pdf = skills.find((s) => s.id === local.route[0].skill);
    expect(Object.keys(pdf!).sort()).toEqual(["description", "disableModelInvocation", "id", "keys", "name", "renderTokens", "source"]);
    expect(pdf!.keys).toBeGreaterThan(0);
    const text = await runNode([cli, "list", "--bank", bank, ...noModel], { env, timeoutMs: 60_000 });
    expect(text.code, text.err).toBe(0);
    expect(text.out).toMatch(new RegExp(`^${local.route[0].skill}\\s+\\d+\\s+\\d+`, "m"));
  }, 120_000);

  it("`gavel route`, `glance` and `uninstall` answered by the server name on stderr the model flags and variables given, which it does not read; stdout as without them", async () => {
    const c = await connect({ bank });
    let model: string;
    try {
      model = (await c.request<{ model: string }>("status")).model;
    } finally {
      c.close();
    }
    // started with GAVEL_MODEL unset and no --model: the embedded gavel-mini
    expect(model).toBe(DEFAULT_MODEL);
    const said = (command: string, unread: string) => [`gavel ${command}: answered by the gavel serve running for this bank (model ${model}), which does not read ${unread}: it keeps the model and settings it was started with`];
    const notes = (err: string) => err.split("\n").filter((l) => l.includes("answered by the gavel serve"));
    const missing = join(dir, "no-such-model.gguf");
    const gavel = (args: string[], vars: Record<string, string> = {}) => runNode([cli, ...args, "--bank", bank], { env: { ...env, ...vars }, timeoutMs: 60_000 });

    // route --json: --model and --context named (--no-abstain and --json are read); one JSON document on stdout either way
    const plain = await gavel(["route", TASKS[0], "--json", "--no-abstain"]);
    const flagged = await gavel(["route", TASKS[0], "--json", "--no-abstain", "--model", missing, "--context", "4096"]);
    expect(plain.code, plain.err).toBe(0);
    expect(flagged.code, flagged.err).toBe(0);
    expect(notes(plain.err)).toEqual([]);
    expect(notes(flagged.err)).toEqual(said("route", "--model, --context"));
    const [a, b] = [JSON.parse(plain.out) as RouteResult, JSON.parse(flagged.out) as RouteResult];
    expect(strip(b)).toEqual(strip(a));
    expect(Object.keys(b).sort()).toEqual(Object.keys(a).sort());
    // as text: the budgets and --truncate
    const text = await gavel(["route", TASKS[0], "--no-abstain", "--truncate", "start", "--skill-budget", "256", "--key-budget", "300"]);
    expect(text.code, text.err).toBe(0);
    expect(notes(text.err)).toEqual(said("route", "--skill-budget, --key-budget, --truncate"));
    expect(text.out).toContain(`chosen: ${a.skill}`);
    expect(text.out).not.toContain("answered by");

    // glance --json: a flag names itself, not the variable it stands in for; a variable alone is named
    const glance = await gavel(["glance", TASKS[0], "--top", "3", "--json"]);
    const glanceFlagged = await gavel(["glance", TASKS[0], "--top", "3", "--json", "--model", missing, "--threads", "2", "--gpu-layers", "0"], { GAVEL_MODEL: missing, GAVEL_PROJECTIONS: join(dir, "no-such-projections.gguf") });
    expect(glance.code, glance.err).toBe(0);
    expect(glanceFlagged.code, glanceFlagged.err).toBe(0);
    expect(notes(glance.err)).toEqual([]);
    expect(notes(glanceFlagged.err)).toEqual(said("glance", "--model, GAVEL_PROJECTIONS, --threads, --gpu-layers"));
    const hits = (out: string) => (JSON.parse(out) as { skill: string }[]).map((h) => h.skill);
    expect(hits(glanceFlagged.out)).toEqual(hits(glance.out));

    // uninstall --json (a skill the bank lacks: exit 1, nothing changed): GAVEL_MODEL alone named
    const gone = await gavel(["uninstall", "no-such-skill", "--json"]);
    const goneFlagged = await gavel(["uninstall", "no-such-skill", "--json"], { GAVEL_MODEL: missing });
    for (const r of [gone, goneFlagged]) {
      expect(r.code, r.err).toBe(1);
      expect(JSON.parse(r.out)).toEqual({ skill: "no-such-skill", removed: false, server: true });
    }
    expect(goneFlagged.out).toBe(gone.out);
    expect(notes(gone.err)).toEqual([]);
    expect(notes(goneFlagged.err)).toEqual(said("uninstall", "GAVEL_MODEL"));
    // the server's own model, by flag or variable, is not named; what else was given still is
    const same = await gavel(["route", TASKS[0], "--json", "--no-abstain", "--model", model]);
    const sameEnv = await gavel(["route", TASKS[0], "--json", "--no-abstain", "--context", "4096"], { GAVEL_MODEL: model });
    for (const r of [same, sameEnv]) expect(r.code, r.err).toBe(0);
    expect(notes(same.err)).toEqual([]);
    expect(notes(sameEnv.err)).toEqual(said("route", "--context"));
    // the settings the server read from its own environment (status.settings): those set here to other
    // values are named with both; one set to its default (the server's) is not
    const s = await connect({ bank });
    try {
      const settings = (await s.request<{ settings: Record<string, string> }>("status")).settings;
      expect(settings).toMatchObject({ GAVEL_LIBRARY_CUT: "on", GAVEL_PASTE_WEIGHT: "on", GAVEL_GLANCE_VOTE_SHARE: "projections", GAVEL_LIVE_ROW_WEIGHTS: "decay", GAVEL_LIVE_VOTE_SHARE: "off", GAVEL_KEY_TYPE: "f32" });
    } finally {
      s.close();
    }
    const set = await gavel(["route", TASKS[0], "--json", "--no-abstain"], { GAVEL_LIBRARY_CUT: "off", GAVEL_PASTE_WEIGHT: "on", GAVEL_GLANCE_VOTE_SHARE: "0.01" });
    expect(set.code, set.err).toBe(0);
    expect(notes(set.err)).toEqual(said("route", "GAVEL_LIBRARY_CUT (off here, on in the server), GAVEL_GLANCE_VOTE_SHARE (0.01 here, projections in the server)"));
    expect(strip(JSON.parse(set.out) as RouteResult)).toEqual(strip(a));
    const defaults = await gavel(["route", TASKS[0], "--json", "--no-abstain"], { GAVEL_LIBRARY_CUT: "on", GAVEL_KEY_TYPE: "f32" });
    expect(defaults.code, defaults.err).toBe(0);
    expect(notes(defaults.err)).toEqual([]);
  }, 120_000);

  it("`gavel uninstall` goes through the running server instead of failing with BANK_LOCKED", async () => {
    const c = await connect({ bank });
    try {
      await c.request("install", { source: syntheticSkills(join(dir, "solo"), "solo", 1) });
      expect((await c.request<{ name: string }[]>("list")).map((s) => s.name)).toContain("solo-0");
      const r = await runNode([cli, "uninstall", "solo-0", "--bank", bank], { env, timeoutMs: 60_000 });
      expect(r.err).not.toMatch(/BANK_LOCKED/);
      expect(r.code).toBe(0);
      expect(r.out).toContain("removed solo-0 (through the running gavel serve)");
      expect((await c.request<{ name: string }[]>("list")).map((s) => s.name)).not.toContain("solo-0");
      // --json: one JSON object on stdout, the exit code kept (it printed text)
      const again = await runNode([cli, "uninstall", "solo-0", "--bank", bank, "--json"], { env, timeoutMs: 60_000 });
      expect(again.code).toBe(1);
      expect(JSON.parse(again.out)).toEqual({ skill: "solo-0", removed: false, server: true });
    } finally {
      c.close();
    }
  }, 60_000);

  it("refuses a task over the per-request budget with CONTEXT_OVERFLOW, counting it off the JS thread", async () => {
    const c = await connect({ bank });
    try {
      const long = (TASKS.join(" ") + " ").repeat(4000); // ~1.2 MB of text, far over 16,384 tokens
      const order: string[] = [];
      const big = c.request("route", { task: long }).then(
        () => order.push("big ok"),
        (e: { code: string; message: string }) => order.push(`big ${e.code}: ${e.message}`),
      );
      await c.request("ping").then(() => order.push("ping"));
      await big;
      expect(order[0]).toBe("ping");
      expect(order[1]).toMatch(/^big CONTEXT_OVERFLOW: the task is (more than )?\d+ tokens, over this server's budget of 16384 tokens/);
      // within the budget it is routed as before
      expect(strip(await c.request<RouteResult>("route", { task: TASKS[0] })).skill).toBe(local.route[0].skill);
    } finally {
      c.close();
    }
  }, 120_000);

  it("refuses a missing bank (FILE_NOT_FOUND, nothing created) unless --create", async () => {
    const missing = join(dir, "no-such-bank");
    const r = await runNode([cli, "serve", "--bank", missing, "--context", "2048"], { env, timeoutMs: 60_000 });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/FILE_NOT_FOUND/);
    expect(existsSync(missing)).toBe(false);
  }, 60_000);

  it("refuses a second server on the same bank, before loading a model", async () => {
    // a missing --model: refused for the bank, not for the model (which is never read)
    const second = await runNode([cli, "serve", "--bank", bank, "--context", "2048", "--model", join(dir, "no-such-model.gguf")], { env, timeoutMs: 60_000 });
    expect(second.code).toBe(1);
    expect(second.err).toMatch(/already listening.*BANK_LOCKED/);
    expect(await isRunning(bank)).toBe(true);
  }, 60_000);

  it("shuts down on SIGTERM: exit 0, socket removed", async () => {
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    expect(existsSync(socket)).toBe(false);
    expect(existsSync(join(bank, "lock"))).toBe(false);
    expect(await isRunning(bank)).toBe(false);
  }, 60_000);

  it("`gavel route` without a server opens the bank itself, as before", async () => {
    const r = await runNode([cli, "route", TASKS[0], "--bank", bank, "--context", "2048", "--json"], { env, timeoutMs: 120_000 });
    expect(r.code).toBe(0);
    expect((JSON.parse(r.out) as RouteResult).skill).toBe(local.route[0].skill);
  }, 120_000);

  it("serves localhost HTTP with a bearer token in a 0600 file", async () => {
    const http = await startServe(["--bank", bank, "--port", "0"], { env });
    try {
      const file = join(bank, "serve.http.json");
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const { url, token } = JSON.parse((await import("node:fs")).readFileSync(file, "utf8")) as { url: string; token: string };
      const post = (body: object, auth = token) => fetch(`${url}/v1`, { method: "POST", headers: { authorization: `Bearer ${auth}` }, body: JSON.stringify(body) });
      expect((await post({ v: 1, id: 1, op: "ping" }, "wrong")).status).toBe(401);
      const res = await (await post({ v: 1, id: 2, op: "route", task: TASKS[0] })).json();
      expect(res).toMatchObject({ v: 1, id: 2, ok: true, result: { skill: local.route[0].skill } });
      const c = await connect({ bank }); // the client finds it through the endpoint file
      expect(c.endpoint.kind).toBe("http");
      expect((await c.request<RouteResult>("glance", { task: TASKS[0] })).skill).toBe(local.glance[0].skill);
      c.close();
    } finally {
      http.child.kill("SIGTERM");
      expect(await http.exited).toBe(0);
    }
    expect(existsSync(join(bank, "serve.http.json"))).toBe(false);
  }, 120_000);
});
