/**
 * Benchmark tasks: a JSONL file of `{id, text, gold_skill_ids, batch?}` (SWE-Skills-Bench's
 * tasks.jsonl), and the `--batches` filter that splits it into validation and test.
 */
import { invalidArgument, readJsonl } from "gavel-router/internal";

/** One routing task with its gold skills. */
export interface EvalTask {
  id: string;
  /** The written task, routed as is. */
  text: string;
  gold_skill_ids: string[];
  /** The benchmark's split label, e.g. `"batch6"` (or a number). */
  batch?: string | number;
  /** An off-domain prompt: no skill serves it (gold_skill_ids empty); eval keeps it for abstention. */
  off_domain?: boolean;
}

/**
 * Reads a tasks JSONL file. Blank lines are skipped; a malformed line is an error naming it, since
 * silently dropping a task would change the benchmark.
 */
export async function loadTasks(path: string): Promise<EvalTask[]> {
  const tasks: EvalTask[] = [];
  const seen = new Set<string>();
  for (const { value, line } of await readJsonl(path, { what: "tasks" })) {
    const r = value as Record<string, unknown>;
    const ok =
      typeof r === "object" && r !== null &&
      typeof r.id === "string" && typeof r.text === "string" &&
      Array.isArray(r.gold_skill_ids) && r.gold_skill_ids.every((g) => typeof g === "string") &&
      (r.batch === undefined || typeof r.batch === "string" || typeof r.batch === "number") &&
      (r.off_domain === undefined || typeof r.off_domain === "boolean");
    if (!ok) throw invalidArgument(`${path}:${line}: a task needs {id: string, text: string, gold_skill_ids: string[], batch?: string|number}`);
    if (seen.has(r.id as string)) throw invalidArgument(`${path}:${line}: duplicate task id ${r.id as string}`);
    seen.add(r.id as string);
    tasks.push({ id: r.id as string, text: r.text as string, gold_skill_ids: r.gold_skill_ids as string[], batch: r.batch as string | number | undefined, ...(r.off_domain === true ? { off_domain: true } : {}) });
  }
  return tasks;
}

/** Each task's text by id, over several tasks files read in turn (a later file's id wins). */
export async function loadTaskTexts(paths: readonly string[]): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  for (const f of paths) for (const t of await loadTasks(f)) texts.set(t.id, t.text);
  return texts;
}

/** The number of a batch label: `6`, `"6"` and `"batch6"` are all 6; undefined when it has none. */
export function batchNumber(batch: string | number | undefined): number | undefined {
  if (typeof batch === "number") return Number.isInteger(batch) ? batch : undefined;
  if (typeof batch !== "string") return undefined;
  const m = /(\d+)\s*$/.exec(batch);
  return m ? Number(m[1]) : undefined;
}

/**
 * The most batch numbers a selection may name. SWE-Skills-Bench numbers its batches 1–10; a wider
 * range is a typo, and would otherwise be spelled out number by number.
 */
export const MAX_BATCHES = 10_000;

/**
 * Parses a batch selection such as `"6-10"`, `"1,3,5-7"` or `"batch6"` into the set of batch numbers
 * (in the order the selection names them; {@link MAX_BATCHES} distinct numbers at most, ranges that
 * overlap counting the numbers they share once: SWE-Skills-Bench's are 1-10).
 */
export function parseBatches(spec: string): Set<number> {
  const ranges: [number, number][] = [];
  for (const raw of spec.split(",")) {
    const part = raw.trim().replace(/^batch/i, "");
    const m = /^(\d+)(?:\s*-\s*(?:batch)?(\d+))?$/i.exec(part);
    if (!m) throw invalidArgument(`--batches: cannot read "${raw.trim()}" (use e.g. 6-10 or 1,3,5-7)`);
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (!Number.isSafeInteger(hi)) throw invalidArgument(`--batches: ${raw.trim()} is past the largest batch number this reads (${Number.MAX_SAFE_INTEGER})`);
    if (hi < lo) throw invalidArgument(`--batches: empty range ${raw.trim()}`);
    ranges.push([lo, hi]);
  }
  if (distinctCount(ranges) > MAX_BATCHES) throw invalidArgument(`--batches ${spec.trim()} names more than ${MAX_BATCHES} batches (SWE-Skills-Bench's are 1-10)`);
  const out = new Set<number>();
  for (const [lo, hi] of ranges) for (let b = lo; b <= hi; b++) out.add(b);
  return out;
}

/** How many distinct integers the inclusive ranges cover (overlapping ones merged first). */
function distinctCount(ranges: readonly (readonly [number, number])[]): number {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  let count = 0;
  let end = -Infinity;
  for (const [lo, hi] of sorted) {
    if (hi <= end) continue;
    count += hi - Math.max(lo, end + 1) + 1;
    end = hi;
  }
  return count;
}

/**
 * Tasks whose batch is in `batches` (all when undefined; a task without a batch number is then
 * left out), then the first `limit`.
 */
export function selectTasks(tasks: readonly EvalTask[], options: { batches?: string | Set<number>; limit?: number } = {}): EvalTask[] {
  const batches = typeof options.batches === "string" ? parseBatches(options.batches) : options.batches;
  let out = batches ? tasks.filter((t) => {
    const b = batchNumber(t.batch);
    return b !== undefined && batches.has(b);
  }) : [...tasks];
  if (options.limit !== undefined) out = out.slice(0, options.limit);
  return out;
}
