// A full disk while a bank is written: the error is typed (NO_SPACE, not a raw ENOSPC), and what
// `list()` showed is what the bank keeps: `close()` commits the staged skills once space is freed
// (before, it dropped a skill `list()` still showed). Needs a small tmpfs, so root and mount(8);
// skipped elsewhere, saying so.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GavelError, Model, Projections, Router } from "../../src/index.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";

const mnt = mkdtempSync(join(tmpdir(), "gavel-nospace-"));
const mounted = (() => {
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=384k", "tmpfs", mnt], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
let model: Model;
let projections: Projections;

beforeAll(async () => {
  if (!mounted) return;
  model = await Model.load(TINY_LLAMA_PATH, { contextSize: 512, threads: 1 });
  projections = await Projections.random(model, { seed: 5, dim: 16 });
});
afterAll(async () => {
  await model?.dispose();
  if (mounted) execFileSync("umount", [mnt]);
  rmSync(mnt, { recursive: true, force: true });
});

describe.skipIf(!mounted)("a full disk while installing (needs root and mount: a 384 KiB tmpfs)", () => {
  it("NO_SPACE, typed; after space is freed, close() keeps what list() showed", async () => {
    const dir = join(mnt, "bank");
    const filler = join(mnt, "filler");
    const r = await Router.open(model, { projections, bankDir: dir, skillBudget: 128 });
    writeFileSync(filler, Buffer.alloc(200 * 1024));
    let error: unknown;
    let failed = 0;
    for (let i = 0; i < 400 && error === undefined && failed === 0; i++) {
      const body = `# s${i}\n${"Steps to format the data files. ".repeat(20)}`;
      try {
        failed = (await r.install([{ name: `s${i}`, description: `Skill ${i}: format data files.`, body }], { commitEvery: 1 })).failed.length;
      } catch (err) {
        error = err;
      }
    }
    expect(error !== undefined || failed > 0, "the disk filled up").toBe(true);
    if (error !== undefined) {
      expect(error).toBeInstanceOf(GavelError);
      expect((error as GavelError).code).toBe("NO_SPACE");
    }
    const listed = r.list().map((s) => s.id).sort();
    rmSync(filler);
    await r.close();
    const again = await Router.open(model, { projections, bankDir: dir, skillBudget: 128, create: false });
    try {
      expect(again.list().map((s) => s.id).sort()).toEqual(listed);
      for (const id of listed) await again.get(id);
    } finally {
      await again.close();
    }
  });
});
