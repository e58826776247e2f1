/**
 * Files of `gavel eval` and `gavel calibrate`: libraries from several sources, and per-query records
 * as JSONL.
 */
import { appendFile, writeFile } from "node:fs/promises";
import { invalidArgument, readJsonl } from "gavel-router/internal";
import { loadSkills, type Skill, type SkillFailure } from "gavel-router";
import type { PerQueryRecord } from "./evaluate.js";

/** What {@link loadLibrary} returns. */
export interface LoadedLibrary {
  skills: Skill[];
  failed: SkillFailure[];
  /** Ids met again in a later source; the first source's skill is kept. */
  duplicates: string[];
}

/**
 * Loads and concatenates library sources (folders, JSONL, JSONL.gz; see loadSkills), e.g. a
 * benchmark's gold skills and the public library they are mixed into. An id already loaded from an
 * earlier source is kept from there and reported in `duplicates`.
 */
export async function loadLibrary(sources: readonly string[], options: { signal?: AbortSignal } = {}): Promise<LoadedLibrary> {
  if (sources.length === 0) throw invalidArgument("no library: pass --library <dir|library.jsonl[.gz]> (repeatable)");
  const out: LoadedLibrary = { skills: [], failed: [], duplicates: [] };
  const seen = new Set<string>();
  for (const source of sources) {
    const { skills, failed } = await loadSkills(source, { signal: options.signal });
    out.failed.push(...failed);
    for (const s of skills) {
      if (seen.has(s.id)) out.duplicates.push(s.id);
      else {
        seen.add(s.id);
        out.skills.push(s);
      }
    }
  }
  return out;
}

/**
 * Refuses a gzip name for records being written: they are appended a line at a time, as plain JSONL
 * (gzip the file afterwards; {@link readPerQuery} reads either).
 */
export function checkPerQueryOutput(path: string): void {
  if (path.endsWith(".gz")) throw invalidArgument(`${path}: per-query records are written as plain JSONL, a line per task; gzip the file afterwards (it is read either way)`);
}

/** Writes per-query records, one JSON object a line (a few KB each: written in one go). */
export async function writePerQuery(path: string, records: readonly PerQueryRecord[]): Promise<void> {
  checkPerQueryOutput(path);
  await writeFile(path, records.map((r) => JSON.stringify(r) + "\n").join(""));
}

/** Appends one per-query record to a file that {@link readPerQuery} reads (a line, written whole). */
export async function appendPerQuery(path: string, record: PerQueryRecord): Promise<void> {
  checkPerQueryOutput(path);
  await appendFile(path, JSON.stringify(record) + "\n");
}

/**
 * Reads per-query records written by {@link writePerQuery} (`gavel eval --per-query`). With
 * `tornTail`, a last line that a stopped run left unfinished (no newline after it, not JSON) is
 * dropped instead of refused: what resuming a run needs.
 */
export async function readPerQuery(path: string, options: { tornTail?: boolean } = {}): Promise<PerQueryRecord[]> {
  // Gzipped records (e.g. the ones docs/BENCHMARKS.md keeps under bench/results) are read as they are.
  const rows = await readJsonl(path, { what: "per-query records", tornTail: options.tornTail });
  return rows.map(({ value, line }) => {
    const r = value as PerQueryRecord;
    if (typeof r !== "object" || r === null || typeof r.id !== "string" || !Array.isArray(r.accepted)) {
      throw invalidArgument(`${path}:${line}: not a per-query record (needs id and accepted)`);
    }
    return r;
  });
}
