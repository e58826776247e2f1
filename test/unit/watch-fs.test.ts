import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { folderIdentity, folderIdentityAsync, foldersIn, foldersInAsync, readAhead } from "../../src/serve/watch-fs.js";

const dir = mkdtempSync(join(tmpdir(), "gavel-watch-fs-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A root of random shape: folders, files, links to folders, to files and to nothing, `.git` and `node_modules`. */
function randomRoot(name: string): { root: string; folders: string[] } {
  const root = join(dir, name);
  mkdirSync(root);
  const folders: string[] = [];
  const elsewhere = join(dir, `${name}-elsewhere`);
  mkdirSync(elsewhere);
  writeFileSync(join(elsewhere, "file.txt"), "x");
  for (const skip of [".git", "node_modules"]) mkdirSync(join(root, skip));
  const n = 20 + Math.floor(Math.random() * 40);
  for (let i = 0; i < n; i++) {
    const entry = join(root, `e${i}-${Math.random().toString(36).slice(2, 8)}`);
    const kind = Math.floor(Math.random() * 5);
    if (kind === 0 || kind === 1) {
      mkdirSync(entry);
      folders.push(entry);
    } else if (kind === 2) writeFileSync(entry, "a file beside the skills");
    else if (kind === 3) {
      symlinkSync(i % 2 ? elsewhere : join(elsewhere, "file.txt"), entry);
      if (i % 2) folders.push(entry); // a link to a folder is one; a link to a file is not
    } else symlinkSync(join(dir, "nothing-here"), entry); // a dangling link
  }
  return { root, folders: folders.sort() };
}

describe("the watcher's file-system reads, on the thread and off it", () => {
  it("lists the same folders of a root both ways: folders and links to folders, never files, dangling links, .git or node_modules", async () => {
    for (let t = 0; t < 4; t++) {
      const { root, folders } = randomRoot(`root${t}`);
      expect(foldersIn(root).sort()).toEqual(folders);
      expect((await foldersInAsync(root)).sort()).toEqual(folders);
    }
    expect(foldersIn(join(dir, "missing"))).toEqual([]);
    expect(await foldersInAsync(join(dir, "missing"))).toEqual([]);
  });

  it("reads a folder's identity both ways; a file or a missing path has none; a folder replaced has another", async () => {
    const a = join(dir, "ident");
    mkdirSync(a);
    writeFileSync(join(dir, "ident-file"), "x");
    const first = folderIdentity(a);
    expect(first).toMatch(/^\d+:\d+$/);
    expect(await folderIdentityAsync(a)).toBe(first);
    for (const p of [join(dir, "ident-file"), join(dir, "ident-missing")]) {
      expect(folderIdentity(p)).toBeNull();
      expect(await folderIdentityAsync(p)).toBeNull();
    }
    mkdirSync(join(dir, "ident-new"));
    renameSync(a, join(dir, "ident-old")); // the old folder kept (its inode is not reused), a new one in its place
    renameSync(join(dir, "ident-new"), a);
    expect(folderIdentity(a)).not.toBe(first);
    expect(await folderIdentityAsync(a)).toBe(folderIdentity(a));
  });

  it("reads ahead every folder's identity and every root's folders, as the reads on the thread give them", async () => {
    const roots = [randomRoot("ahead0"), randomRoot("ahead1")];
    const dirs = [...roots.flatMap((r) => [r.root, ...r.folders]), join(dir, "gone"), join(dir, "ahead0-elsewhere", "file.txt")];
    const ahead = await readAhead(dirs, [...roots.map((r) => r.root), join(dir, "gone-root")]);
    expect([...ahead.identity.keys()].sort()).toEqual([...dirs].sort());
    for (const d of dirs) expect(ahead.identity.get(d)).toBe(folderIdentity(d));
    for (const r of roots) expect(ahead.folders.get(r.root)!.sort()).toEqual(r.folders);
    expect(ahead.folders.get(join(dir, "gone-root"))).toEqual([]);
    const none = await readAhead([], []);
    expect(none.identity.size + none.folders.size).toBe(0);
  });
});
