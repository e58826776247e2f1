// Issue 35, security: bank files are the owner's only (files 0600, folders 0700), and a bank another
// user cannot read or write is one typed PERMISSION_DENIED line (an uninstall by another user was a
// raw EACCES stack); a server's fallback socket lives in a private per-user folder, never under a
// predictable name in the shared temp folder (another local user could squat it).
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BankStore, bankHeaderFor, type BankHeader } from "../../src/bank/index.js";
import { TextStore } from "../../src/bank/texts.js";
import { Projections } from "../../src/projections/projections.js";
import { defaultSocketPath } from "../../src/serve/protocol.js";
import { ensurePrivateDir, privateTempDir } from "../../src/util/private-dir.js";
import type { ModelFingerprint } from "../../src/model/fingerprint.js";
import { othersCanReach, repoRoot, viteNodeCli } from "../helpers/paths.js";
import { run } from "../helpers/run.js";

const SEED = 11;
const DIM = 4;
const fp: ModelFingerprint = { architecture: "llama", nLayer: 5, nEmbd: 64, nVocab: 512, vocabHash: "ef".repeat(32) };
const isRoot = process.getuid?.() === 0;
const NOBODY = 65534;
let header: BankHeader;
let root: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "gavel-sec-paths-"));
  chmodSync(root, 0o755); // other users may reach what is inside; the bank's own modes decide
  header = bankHeaderFor(await Projections.random(fp, { seed: SEED, dim: DIM }));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

async function committedBank(name: string): Promise<string> {
  const dir = join(root, name, ".gavel", "bank");
  const store = await BankStore.open(dir, header, { create: true });
  try {
    await new TextStore(dir).put("ab".repeat(32), { name: "s", description: "d", body: "b" });
    await store.put({ id: "s", name: "s", description: "d", contentHash: "ab".repeat(32), source: "/x/SKILL.md", disableModelInvocation: false, keyTokens: [1], renderTokens: 3 }, new Float32Array(DIM).fill(1));
    await store.commit();
    await store.compact();
  } finally {
    await store.close();
  }
  return dir;
}

describe("bank files are the owner's only", () => {
  it("files 0600 and folders 0700 whatever the umask allows", async () => {
    const old = process.umask(0o002);
    try {
      const dir = await committedBank("modes");
      expect((await stat(dir)).mode & 0o777).toBe(0o700);
      expect((await stat(join(dir, "texts"))).mode & 0o777).toBe(0o700);
      const files = [...(await readdir(dir)).map((n) => join(dir, n)), ...(await readdir(join(dir, "texts"))).map((n) => join(dir, "texts", n))];
      let seen = 0;
      for (const f of files) {
        const st = await stat(f);
        if (!st.isFile()) continue;
        seen++;
        expect(st.mode & 0o777, f).toBe(0o600);
      }
      expect(seen).toBeGreaterThanOrEqual(3); // manifest, keys, a text (and the lexicon when written)
    } finally {
      process.umask(old);
    }
  });

  it.runIf(isRoot && othersCanReach(repoRoot))("another user's open, snapshot and check of the bank: PERMISSION_DENIED, one line, no raw EACCES", async () => {
    const dir = await committedBank("theirs");
    chmodSync(dirname(dir), 0o755);
    chmodSync(dirname(dirname(dir)), 0o755);
    const child = join(repoRoot, "test", "helpers", "permission-child.ts");
    const r = await runAs(NOBODY, [viteNodeCli, child, dir, String(SEED), String(DIM)]);
    expect(r.code, r.err).toBe(0);
    const lines = r.out.trim().split("\n").map((l) => JSON.parse(l) as { what: string; code: string; message: string });
    expect(lines.map((l) => l.what)).toEqual(["open", "snapshot", "check"]);
    for (const l of lines) {
      expect(l.code, l.what).toBe("PERMISSION_DENIED");
      expect(l.message).toMatch(/permission denied .* bank .*EACCES.*run as the bank's owner/);
      expect(l.message).not.toMatch(/\n/);
    }
  }, 120_000);
});

/** Runs node with `args` as user `uid` (the test runs as root). */
function runAs(uid: number, args: string[]) {
  return run("setpriv", [`--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", process.execPath, ...args], { cwd: root, timeoutMs: 100_000 });
}

describe("a fallback socket lives in a private per-user folder", () => {
  const longBank = () => join(root, "d".repeat(120), "bank");

  it("no XDG_RUNTIME_DIR: <tmpdir>/gavel-<uid>/<hash>.sock, the folder created 0700", () => {
    const base = mkdtempSync(join(tmpdir(), "gavel-sec-sock-"));
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = base;
    try {
      const p = defaultSocketPath(longBank(), "");
      expect(p).toMatch(new RegExp(`^${base}/gavel-${process.getuid?.() ?? ".+"}/[0-9a-f]{16}\\.sock$`));
      const st = lstatSync(dirname(p));
      expect(st.isDirectory()).toBe(true);
      expect(st.mode & 0o777).toBe(0o700);
      // the same folder again, and XDG_RUNTIME_DIR (the user's own by its specification) as before
      expect(defaultSocketPath(longBank(), "")).toBe(p);
      expect(defaultSocketPath(longBank(), "/run/u")).toMatch(/^\/run\/u\/gavel-[0-9a-f]{16}\.sock$/);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
      rmSync(base, { recursive: true, force: true });
    }
  });

  it("a squatted, loose, linked or non-directory folder is refused with PERMISSION_DENIED", () => {
    const base = mkdtempSync(join(tmpdir(), "gavel-sec-sock-"));
    try {
      const loose = join(base, "loose");
      mkdirSync(loose, { mode: 0o755 });
      chmodSync(loose, 0o755);
      expect(() => ensurePrivateDir(loose)).toThrow(expect.objectContaining({ code: "PERMISSION_DENIED", message: expect.stringMatching(/mode 0755.*must be 0700.*XDG_RUNTIME_DIR.*--socket/) }));
      const link = join(base, "link");
      mkdirSync(join(base, "real"), { mode: 0o700 });
      symlinkSync(join(base, "real"), link);
      expect(() => ensurePrivateDir(link)).toThrow(expect.objectContaining({ code: "PERMISSION_DENIED", message: expect.stringMatching(/symbolic link/) }));
      const file = join(base, "file");
      writeFileSync(file, "");
      expect(() => ensurePrivateDir(file)).toThrow(expect.objectContaining({ code: "PERMISSION_DENIED", message: expect.stringMatching(/not a directory/) }));
      if (isRoot) {
        const theirs = join(base, "theirs");
        mkdirSync(theirs, { mode: 0o700 });
        chownSync(theirs, NOBODY, NOBODY);
        expect(() => ensurePrivateDir(theirs)).toThrow(expect.objectContaining({ code: "PERMISSION_DENIED", message: expect.stringMatching(/belongs to another user \(uid 65534\)/) }));
        // the temp folder's own gavel-<uid> squatted by another user: the socket path is refused, not shared
        const squat = join(base, `gavel-${process.getuid!()}`);
        mkdirSync(squat, { mode: 0o777 });
        chownSync(squat, NOBODY, NOBODY);
        expect(() => privateTempDir(base)).toThrow(expect.objectContaining({ code: "PERMISSION_DENIED" }));
      }
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});
