// `gavel serve --watch`, run as a user runs it (node dist/cli/gavel.js): edits of installed skills'
// SKILL.md files reach the bank without `gavel sync`; a burst of edits is one sync; a SKILL.md replaced
// by a FIFO is refused without wedging the server. Polled with generous deadlines (a loaded machine).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, renameSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type ServeClient } from "../../src/serve/client.js";
import { run } from "../helpers/run.js";
import { startServe, until, type ServeChild } from "../helpers/serve-process.js";


const skillText = (name: string, description: string) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n# ${name}\n\n` + `Check the ${name} service's logs, then restart it when its health probe fails.\n`.repeat(10);

describe("gavel serve --watch", () => {
  let dir: string;
  let skills: string;
  let bank: string;
  let server: ServeChild;
  let c: ServeClient;
  const description = async (skill: string) => (await c.request<{ id: string; description: string }[]>("list")).find((s) => s.id === skill)?.description;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "gavel-serve-watch-"));
    skills = join(dir, "skills");
    bank = join(dir, "bank");
    for (const n of ["alpha", "beta"]) {
      mkdirSync(join(skills, n), { recursive: true });
      writeFileSync(join(skills, n, "SKILL.md"), skillText(n, `Operate the ${n} service. Use when ${n} is down.`));
    }
    const env = { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "" };
    server = await startServe(["--bank", bank, "--create", "--watch", "--watch-debounce-ms", "1500"], { env });
    c = await connect({ bank });
    const rep = await c.request<{ installed: string[] }>("install", { source: skills });
    expect(rep.installed.sort()).toEqual(["alpha", "beta"]);
  }, 300_000);

  afterAll(() => {
    c?.close();
    server?.child.kill("SIGKILL");
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("re-installs an edited SKILL.md, a burst of edits as one sync", async () => {
    expect(server.err()).toContain("watching 0 folders");
    const file = join(skills, "alpha", "SKILL.md");
    // five saves 100 ms apart (well within the 1.5 s debounce): the last one is what the bank must
    // end with, in one sync (without the debounce the first saves would each be installed)
    for (let i = 1; i <= 5; i++) {
      writeFileSync(file, skillText("alpha", `Operate the alpha service, edit ${i}. Use when alpha is down.`));
      await new Promise((r) => setTimeout(r, 100));
    }
    await until(async () => ((await description("alpha")) === "Operate the alpha service, edit 5. Use when alpha is down." ? true : undefined));
    const doc = await c.request<{ description: string; body: string }>("get-skill", { skill: "alpha" });
    expect(doc.description).toContain("edit 5");
    await until(async () => (server.err().includes("watch: updated alpha") ? true : undefined));
    await new Promise((r) => setTimeout(r, 4000)); // a second sync of the same burst would have shown by now
    expect(server.err().match(/watch: updated alpha/g)).toHaveLength(1);
    expect(await description("beta")).toBe("Operate the beta service. Use when beta is down.");
  }, 300_000);

  it("refuses a SKILL.md replaced by a FIFO or a huge file without wedging, then takes the regular file back", async () => {
    const file = join(skills, "beta", "SKILL.md");
    // swapped in by a rename, as an editor saves: the SKILL.md is never missing meanwhile
    const fifo = join(dir, "fifo");
    const made = await run("mkfifo", [fifo]);
    expect(made.code, made.err).toBe(0);
    renameSync(fifo, file);
    await until(async () => (/watch: kept beta as installed: .*FIFO/.test(server.err()) ? true : undefined));
    // still installed as it was, and the server answers
    expect(await description("beta")).toBe("Operate the beta service. Use when beta is down.");
    expect(await c.request("ping", {}, { timeoutMs: 30_000 })).toEqual({ pong: true, v: 1 });
    // a huge file (sparse: 17 MiB of holes, over the 16 MiB cap) is refused from its size, not read
    const huge = join(dir, "huge.md");
    writeFileSync(huge, skillText("beta", "A huge beta."));
    truncateSync(huge, 17 * 1024 * 1024);
    renameSync(huge, file);
    await until(async () => (/watch: kept beta as installed: .*above the cap/.test(server.err()) ? true : undefined));
    expect(await description("beta")).toBe("Operate the beta service. Use when beta is down.");
    expect(await c.request("ping", {}, { timeoutMs: 30_000 })).toEqual({ pong: true, v: 1 });
    writeFileSync(join(dir, "beta.md"), skillText("beta", "Operate the beta service again. Use when beta is down."));
    renameSync(join(dir, "beta.md"), file);
    await until(async () => ((await description("beta")) === "Operate the beta service again. Use when beta is down." ? true : undefined));
  }, 300_000);

  it("installs a new skill folder beside the watched ones and uninstalls a deleted one", async () => {
    mkdirSync(join(skills, "gamma"));
    writeFileSync(join(skills, "gamma", "SKILL.md"), skillText("gamma", "Operate the gamma service. Use when gamma is down."));
    await until(async () => ((await description("gamma")) !== undefined ? true : undefined));
    rmSync(join(skills, "alpha"), { recursive: true });
    await until(async () => ((await c.request<{ id: string }[]>("list")).some((s) => s.id === "alpha") ? undefined : true));
    expect((await c.request<{ id: string }[]>("list")).map((s) => s.id).sort()).toEqual(["beta", "gamma"]);
  }, 300_000);

  it("stops watching on SIGTERM", async () => {
    c.close();
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
  }, 120_000);
});

describe("gavel serve --watch with a small --skill-budget", () => {
  let dir: string;
  let server: ServeChild | undefined;
  let c: ServeClient | undefined;

  afterAll(() => {
    c?.close();
    server?.child.kill("SIGKILL");
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("a watched skill whose name alone overflows the budget fails in a line naming --skill-budget, not the library's option", async () => {
    dir = mkdtempSync(join(tmpdir(), "gavel-serve-watch-budget-"));
    const skills = join(dir, "skills");
    const bank = join(dir, "bank");
    mkdirSync(join(skills, "ok"), { recursive: true });
    writeFileSync(join(skills, "ok", "SKILL.md"), "---\nname: ok\ndescription: does one thing\n---\nThe body.\n");
    server = await startServe(["--bank", bank, "--create", "--watch", "--watch-debounce-ms", "200", "--skill-budget", "40"], { env: { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "" } });
    c = await connect({ bank });
    expect((await c.request<{ installed: string[] }>("install", { source: skills })).installed).toEqual(["ok"]);
    // a new folder beside the installed one (which fits 40 tokens, its body cut): the watcher installs
    // it, and its render cannot fit
    const name = "a-skill-name-so-long-that-its-tokens-alone-fill-a-budget-of-forty";
    mkdirSync(join(skills, "long"));
    writeFileSync(join(skills, "long", "SKILL.md"), `---\nname: ${name}\ndescription: does one thing\n---\nThe body.\n`);
    const line = await until(async () => server!.err().split("\n").find((l) => l.startsWith("gavel serve: watch: failed: ")));
    expect(line).toContain(`skill "${name}"`);
    expect(line).toMatch(/overflow the skill budget of 40 tokens .*; the skill budget is --skill-budget: raise --skill-budget$/);
    expect(line).not.toMatch(/skillBudget/);
  }, 300_000);
});
