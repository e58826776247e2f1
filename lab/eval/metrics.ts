/**
 * The benchmark's metrics: raw Hit@1 (the committed skill is a gold) and R@k (a gold among the top
 * k), with the rule that a library entry identical in name and description to a gold counts as it.
 */

/** What {@link acceptedIds} reads of a library entry. */
export interface LibraryEntry {
  id: string;
  name: string;
  description: string;
}

/** An id, or anything carrying one in `skill` (a glance hit, a candidate) or `id`. */
export type Ranked = string | { skill: string } | { id: string };

function idOf(r: Ranked): string {
  if (typeof r === "string") return r;
  return "skill" in r ? r.skill : r.id;
}

/**
 * The ids that count as a hit for a task whose golds are `goldIds`: each gold present in `library`,
 * and every library entry whose name AND description are identical to a present gold's (public
 * libraries hold verbatim copies of the same skill under other ids, and routing to a copy loads the
 * same instructions). Empty when no gold is in the library: such a task cannot be scored and is
 * skipped by {@link evaluate}.
 *
 * For many tasks over one large library, pass a prebuilt `libraryIndex(library)` instead of the array.
 */
export function acceptedIds(goldIds: readonly string[], library: readonly LibraryEntry[] | LibraryIndex): Set<string> {
  const index = library instanceof LibraryIndex ? library : new LibraryIndex(library);
  const out = new Set<string>();
  for (const g of goldIds) {
    const gold = index.byId.get(g);
    if (!gold) continue;
    out.add(g);
    for (const id of index.byText.get(textKey(gold)) ?? []) out.add(id);
  }
  return out;
}

/** name and description, length-delimited so that no split of one string collides with another. */
function textKey(e: LibraryEntry): string {
  return JSON.stringify([e.name, e.description]);
}

/** A library indexed by id and by (name, description), for {@link acceptedIds} over many tasks. */
export class LibraryIndex {
  readonly byId = new Map<string, LibraryEntry>();
  readonly byText = new Map<string, string[]>();
  constructor(library: readonly LibraryEntry[]) {
    for (const e of library) {
      this.byId.set(e.id, e);
      const k = textKey(e);
      const ids = this.byText.get(k);
      if (ids) ids.push(e.id);
      else this.byText.set(k, [e.id]);
    }
  }
}

/** Builds a {@link LibraryIndex}. */
export function libraryIndex(library: readonly LibraryEntry[]): LibraryIndex {
  return new LibraryIndex(library);
}

/**
 * 1 when the first of `ranked` is accepted, else 0 (also for an empty list: nothing was loaded).
 * The ranking's order is final: ties were broken by whoever ranked (the router by glance order,
 * BM25 by library order), exactly as the committed skill is the first one.
 */
export function hitAt1(ranked: readonly Ranked[], accepted: ReadonlySet<string>): number {
  return ranked.length > 0 && accepted.has(idOf(ranked[0])) ? 1 : 0;
}

/** 1 when any of the first `k` of `ranked` is accepted, else 0. */
export function recallAt(ranked: readonly Ranked[], accepted: ReadonlySet<string>, k: number): number {
  const n = Math.min(k, ranked.length);
  for (let i = 0; i < n; i++) if (accepted.has(idOf(ranked[i]))) return 1;
  return 0;
}
