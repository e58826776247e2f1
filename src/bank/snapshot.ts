/**
 * A bank's last committed snapshot, as a reader without the lock opens it ({@link Library.openSnapshot}).
 *
 * @module
 */
import { GavelError, clip } from "../errors.js";
import { BankLexicon } from "./lexicon.js";
import { BankStore, SNAPSHOT_ATTEMPTS } from "./store.js";
import type { TextStore } from "./texts.js";
import type { BankEntry, BankHeader } from "./types.js";

/**
 * A committed snapshot's store and lexicon, read again from the newer manifest when a writer changed
 * the lexicon or pruned a text between the two reads.
 */
export async function openSnapshotParts(dir: string, header: BankHeader, texts: TextStore): Promise<{ store: BankStore; lexicon: BankLexicon }> {
  for (let attempt = 1; ; attempt++) {
    const store = await BankStore.openSnapshot(dir, header);
    try {
      const lexicon = await BankLexicon.openSnapshot(store, texts);
      if (lexicon !== undefined) return { store, lexicon };
      if (attempt >= SNAPSHOT_ATTEMPTS) throw new GavelError(`bank ${clip(dir)} changed ${attempt} times while it was read; try again`, "CORRUPT_FILE");
    } catch (err) {
      await store.close();
      throw err;
    }
    await store.close();
  }
}

/**
 * Whether an entry of a newer snapshot has the keys held now: its entry in `prev` (the snapshot held)
 * has the same count and checksum, and `held(id)` (its keys are in memory). A refresh keeps those keys.
 */
export function sameKeys(prev: readonly BankEntry[], held: (id: string) => boolean): (e: BankEntry) => boolean {
  const before = new Map(prev.map((e) => [e.id, e]));
  return (e) => {
    const p = before.get(e.id);
    return p !== undefined && held(e.id) && p.nKeys === e.nKeys && p.keysSha256 !== undefined && p.keysSha256 === e.keysSha256;
  };
}
