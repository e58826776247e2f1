// Random skills and a bank opened as the Library opens it (store, texts, lexicon; no keys in memory),
// for the lexicon's tests and their crash children (so no vitest import here).
import { createHash } from "node:crypto";
import { BankStore, type BankHeader } from "../../src/bank/index.js";
import { BankLexicon, type LexiconOpenOptions } from "../../src/bank/lexicon.js";
import { TextStore } from "../../src/bank/texts.js";

/** A skill as the bank sees it. */
export interface TestSkill {
  id: string;
  name: string;
  description: string;
  body: string;
  contentHash: string;
  disableModelInvocation: boolean;
}

const COMMON = "the a of to and pdf sql docker table query file report extract write build test deploy log api user data".split(" ");

/** A random word: common (so df > 1 and idf varies) or fresh (a new term, often in one skill only). */
function word(r: () => number): string {
  if (r() < 0.7) return COMMON[Math.floor(r() * COMMON.length)];
  const letters = "abcdefghijklmnopqrstuvwxyzé";
  let w = "";
  for (let i = 0, n = 2 + Math.floor(r() * 6); i < n; i++) w += letters[Math.floor(r() * letters.length)];
  return r() < 0.2 ? `${w}_${Math.floor(r() * 100)}` : r() < 0.1 ? w.toUpperCase() : w;
}

export function words(r: () => number, n: number): string {
  return Array.from({ length: n }, () => word(r)).join(r() < 0.5 ? " " : "-");
}

/** A random skill; `id` fixed, content random (an empty body now and then). */
export function randomSkill(r: () => number, id: string, routable = r() > 0.15): TestSkill {
  const name = words(r, 1 + Math.floor(r() * 2));
  const description = words(r, 3 + Math.floor(r() * 12));
  const body = r() < 0.1 ? "" : words(r, Math.floor(r() * 80));
  const contentHash = createHash("sha256").update(JSON.stringify([name, description, body])).digest("hex");
  return { id, name, description, body, contentHash, disableModelInvocation: !routable };
}

/** A bank as Library opens it, without keys in memory: install = text, keys row, lexicon. */
export class LexiconBank {
  private constructor(
    readonly store: BankStore,
    readonly texts: TextStore,
    readonly lexicon: BankLexicon,
  ) {}

  static async open(dir: string, header: BankHeader, options: LexiconOpenOptions = {}): Promise<LexiconBank> {
    const store = await BankStore.open(dir, header, { create: true });
    const texts = new TextStore(dir);
    return new LexiconBank(store, texts, await BankLexicon.open(store, texts, options));
  }

  /** Stages a skill as Library.save does. */
  async save(s: TestSkill): Promise<void> {
    await this.texts.put(s.contentHash, s);
    const entry = { id: s.id, name: s.name, description: s.description, contentHash: s.contentHash, source: "test", disableModelInvocation: s.disableModelInvocation };
    await this.store.put({ ...entry, keyTokens: [1], renderTokens: 1 }, new Float32Array(this.store.dim).fill(0.5));
    this.lexicon.put(s, s);
  }

  /** Stages a removal as Library.remove does. */
  async remove(id: string): Promise<void> {
    await this.store.remove(id);
    this.lexicon.remove(id);
  }

  async commit(): Promise<void> {
    await this.texts.syncDir();
    await this.store.commit();
  }

  close(): Promise<void> {
    return this.store.close();
  }

  /** The routable skills' texts in the bank's order, read back from texts/ (a lost text left out). */
  async routableDocs(): Promise<{ id: string; name: string; description: string; body: string }[]> {
    const out = [];
    for (const e of this.store.entries()) {
      if (e.disableModelInvocation) continue;
      const t = await this.texts.get(e.contentHash).catch(() => undefined);
      if (t) out.push({ id: e.id, ...t });
    }
    return out;
  }
}
