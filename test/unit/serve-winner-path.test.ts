// The resident router's route answer names the winner's SKILL.md for the host to read (the Claude
// Code hook tells the agent to read it): only while the file there still reads as a skill. A SKILL.md
// swapped after install for a link to another file, a folder or a FIFO answers `path: null` (the host
// then asks get-skill for the installed text), and so does `list`'s ref for what is not a regular file.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Handlers } from "../../src/serve/handlers.js";
import type { Router } from "../../src/route/index.js";

const root = mkdtempSync(join(tmpdir(), "gavel-winner-path-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const SKILL = "---\nname: dockerfile\ndescription: Write Dockerfiles.\n---\n\nStart FROM a slim image.\n";
let n = 0;

/** A folder skill on disk and Handlers over a router stand-in whose every route picks it. */
function setup() {
  const folder = join(root, `skills-${n++}`, "dockerfile");
  mkdirSync(folder, { recursive: true });
  const file = join(folder, "SKILL.md");
  writeFileSync(file, SKILL);
  const skill = { id: "dockerfile", name: "dockerfile", description: "Write Dockerfiles.", source: file, keys: 3, renderTokens: 20 };
  const router = {
    bankDir: join(root, "bank"),
    list: () => [skill],
    installed: (id: string) => (id === skill.id ? skill : undefined),
    route: async () => ({ skill: "dockerfile", name: "dockerfile", abstained: false, shortlist: [], verdict: "skipped", load: { id: "dockerfile", name: "dockerfile", path: file, dir: folder, contentHash: "h" } }),
  } as unknown as Router;
  const handlers = new Handlers(router, { pid: 1, bank: "b", model: "m", listen: "l", startedAt: 0, inFlight: () => 0, maxTaskTokens: 0 });
  const route = () => handlers.route({ task: "write a Dockerfile" }, false, new AbortController().signal);
  return { file, folder, handlers, route, skill };
}

describe("the route's winner path", () => {
  it("names the SKILL.md while it reads as a skill", async () => {
    const { file, folder, route } = setup();
    const r = await route();
    expect(r.winner).toMatchObject({ id: "dockerfile", path: file, dir: folder });
    expect(r.load).toMatchObject({ path: file });
  });

  const swaps: [string, (p: string) => void][] = [
    ["a link to a file that is not a skill", (p) => (writeFileSync(`${p}.txt`, "root:x:0:0:root:/root:/bin/bash\n"), symlinkSync(`${p}.txt`, p))],
    ["a folder", (p) => mkdirSync(p)],
    ["a FIFO", (p) => execFileSync("mkfifo", [p])],
  ];
  for (const [what, swap] of swaps) {
    it(`is null once the SKILL.md is swapped for ${what}`, async () => {
      const { file, handlers, route, skill } = setup();
      unlinkSync(file);
      swap(file);
      const r = await route();
      expect(r.skill).toBe("dockerfile");
      expect(r.winner).toMatchObject({ id: "dockerfile", path: null, dir: null });
      expect(r.load).toMatchObject({ path: null, dir: null });
      if (what !== "a link to a file that is not a skill") expect(handlers.ref(skill as never).path).toBeNull();
    });
  }
});
