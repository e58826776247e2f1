/**
 * `gavel check`: a read-only integrity check of a bank directory, as SQLite's `integrity_check` is
 * of a database. It reads the manifest, every committed key block (finite values, and the sha256
 * each entry records), every text (parsed, and verified against the content hash it is stored
 * under), and the lexicon (replayed up to the manifest's COMMIT, as an open would, and each skill's
 * term counts compared with a fresh tokenization of its text). It never writes, takes no lock and
 * truncates nothing: it reads the last committed state, so it may run beside an install. When a
 * commit lands while it reads and it found anything (a writer's tidy step removes the texts and the
 * keys file the manifest it read named), it checks again on the newer manifest, up to
 * SNAPSHOT_ATTEMPTS times, as a snapshot read starts again.
 *
 * Findings come in three kinds:
 * - problems: damage an open would not repair, which loses or changes data (a manifest that does not
 *   parse, a short keys file, a key block that fails its checksum or holds NaN, a text that is
 *   missing or not the one its hash names, a lexicon whose committed terms differ from the texts);
 * - repairs: what the next writable open repairs by itself, losing nothing committed (an uncommitted
 *   tail of key rows or lexicon records, leftover temp files, a lexicon that is missing, damaged or
 *   out of step and will be rebuilt from the texts), and texts no entry names;
 * - unverified: what cannot be checked (entries written before key checksums were recorded, content
 *   hashes that are not sha256).
 *
 * @module
 */
import { readdir, stat, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { GavelError, clip } from "../errors.js";
import { openRegularFile, quoteForMessage, RegularFileError } from "../gguf/regular-file.js";
import { bm25DocTokens } from "../lexical/postings.js";
import type { RenderableSkill } from "../render/index.js";
import { keysChecksum, readAll } from "./keys-file.js";
import { BankLexicon } from "./lexicon.js";
import { LEXICON_TMP_RE } from "./lexicon-log.js";
import { KEYS_FILE_RE, MANIFEST, MANIFEST_TMP_RE, readManifest, refuseBankWithoutManifest } from "./manifest.js";
import { asPermissionError, permissionCause } from "./modes.js";
import { manifestIdentity, SNAPSHOT_ATTEMPTS } from "./opening.js";
import { isVerifiableHash, TextStore } from "./texts.js";
import { BANK_FORMAT_VERSION, READABLE_BANK_FORMATS, type BankEntry, type BankManifest } from "./types.js";

/** What {@link checkBank} found. */
export interface BankCheckReport {
  dir: string;
  /** No problems (repairs and unverified items may still be listed). */
  ok: boolean;
  problems: string[];
  repairs: string[];
  unverified: string[];
  generation?: number;
  skills: number;
  /** Committed rows of the keys file, and those no entry holds (removed or replaced skills). */
  rows: number;
  deadRows: number;
  /** Skills whose key block matched its checksum / has no checksum. */
  keysVerified: number;
  keysUnverified: number;
  /** Texts read and verified against their content hash. */
  textsVerified: number;
  /** Skills the lexicon indexes, when it would be used as is. */
  lexiconSkills?: number;
}

/**
 * Checks the bank in `dir` without changing it; see the module comment.
 *
 * @throws GavelError FILE_NOT_FOUND when `dir` holds no bank at all (no manifest and no bank files)
 */
export async function checkBank(dir: string): Promise<BankCheckReport> {
  for (let attempt = 1; ; attempt++) {
    const before = await manifestIdentity(dir);
    const report = await checkOnce(dir);
    // A commit landed meanwhile: its tidy step may have removed texts or a keys file the manifest read
    // named (an uninstall, a compaction). Findings are checked again against the newer manifest.
    const settled = report.problems.length === 0 && report.repairs.length === 0;
    if (settled || attempt >= SNAPSHOT_ATTEMPTS || (await manifestIdentity(dir)) === before) return report;
  }
}

async function checkOnce(dir: string): Promise<BankCheckReport> {
  const report: BankCheckReport = { dir, ok: true, problems: [], repairs: [], unverified: [], skills: 0, rows: 0, deadRows: 0, keysVerified: 0, keysUnverified: 0, textsVerified: 0 };
  const finish = () => ((report.ok = report.problems.length === 0), report);
  const st = await stat(dir).catch(() => undefined);
  if (!st?.isDirectory()) throw new GavelError(`no bank at ${clip(dir)} (${st ? "not a directory" : "the directory does not exist"})`, "FILE_NOT_FOUND");
  let m: BankManifest | undefined;
  try {
    m = await readManifest(dir);
    if (m === undefined) await refuseBankWithoutManifest(dir);
  } catch (err) {
    // Another user's bank is not damaged: one typed line, not a problem report.
    // (worded for the check, whatever read first typed it)
    const denied = permissionCause(err);
    if (denied) throw asPermissionError(denied, dir, "checking");
    if (!(err instanceof GavelError)) throw err;
    report.problems.push(err.message);
    return finish();
  }
  if (m === undefined) throw new GavelError(`no bank at ${clip(dir)} (no ${MANIFEST})`, "FILE_NOT_FOUND");
  report.generation = m.generation;
  if (!READABLE_BANK_FORMATS.includes(m.formatVersion)) {
    report.problems.push(`${join(dir, MANIFEST)}: bank format ${m.formatVersion}, this gavel-router reads formats ${READABLE_BANK_FORMATS.join(" and ")}; nothing else was checked`);
    return finish();
  }
  if (m.formatVersion < BANK_FORMAT_VERSION) {
    report.unverified.push(`${MANIFEST}: bank format ${m.formatVersion} has no manifestSha256 seal, so its fields (descriptions, sources) cannot be verified; any install, uninstall or sync rewrites it sealed (format ${BANK_FORMAT_VERSION})`);
  }
  report.skills = m.entries.length;
  report.rows = m.rows;
  report.deadRows = m.rows - m.entries.reduce((a, e) => a + e.nKeys, 0);
  const keysWhole = await checkKeys(dir, m, report);
  await checkLeftovers(dir, m, keysWhole, report);
  const texts = await checkTexts(dir, m.entries, report);
  await checkLexicon(dir, m, texts, report);
  return finish();
}

/**
 * Temp files of interrupted commits, keys files the manifest does not name (removed by the next open
 * only when the named one is whole, `keysWhole`), texts no entry names.
 */
async function checkLeftovers(dir: string, m: BankManifest, keysWhole: boolean, report: BankCheckReport): Promise<void> {
  for (const name of await readdir(dir)) {
    if (MANIFEST_TMP_RE.test(name) || LEXICON_TMP_RE.test(name)) report.repairs.push(`${name}: a temp file of an interrupted commit (removed at the next open)`);
    else if (KEYS_FILE_RE.test(name) && name !== m.keysFile) {
      if (keysWhole) report.repairs.push(`${name}: a keys file the manifest does not name (an interrupted compaction; removed at the next open)`);
      else report.unverified.push(`${name}: a keys file the manifest does not name, kept while ${m.keysFile} is missing or damaged (it may hold the keys of an earlier commit; keep it)`);
    }
  }
  const live = new Set(m.entries.map((e) => `${e.contentHash}.json`));
  const names = await readdir(join(dir, "texts")).catch(() => [] as string[]);
  const orphans = names.filter((n) => !live.has(n));
  if (orphans.length > 0) report.repairs.push(`texts/: ${orphans.length} file(s) no entry names (${orphans.slice(0, 3).join(", ")}${orphans.length > 3 ? ", …" : ""}; removed at the next uninstall)`);
}

/**
 * The keys file: its size against the manifest, and every entry's block (finite, checksum). False when
 * it is not whole: it cannot be opened (a missing file of a bank without rows is fine), or a keys
 * problem was reported (the next open then keeps the keys files the manifest does not name).
 */
async function checkKeys(dir: string, m: BankManifest, report: BankCheckReport): Promise<boolean> {
  const path = join(dir, m.keysFile);
  const rowBytes = m.header.dim * 4;
  const committed = m.rows * rowBytes;
  let opened: { fh: FileHandle; size: number };
  try {
    opened = await openRegularFile(path);
  } catch (err) {
    if (err instanceof RegularFileError && err.reason === "missing" && m.rows === 0) return true;
    report.problems.push(`${path}: ${(err as Error).message}; the manifest references ${m.rows} key rows`);
    return false;
  }
  const { fh, size } = opened;
  const problemsBefore = report.problems.length;
  try {
    if (size < committed) report.problems.push(`${path} holds ${size} bytes but the manifest references ${committed} (${m.rows} rows of ${m.header.dim} float32)`);
    else if (size > committed) report.repairs.push(`${m.keysFile}: ${size - committed} bytes of uncommitted rows past the ${m.rows} committed (dropped at the next open)`);
    for (const e of m.entries) {
      const what = `skill ${quoteForMessage(e.id)} (rows ${e.offset}–${e.offset + e.nKeys - 1} of ${m.keysFile})`;
      if ((e.offset + e.nKeys) * rowBytes > size) {
        report.problems.push(`${what}: its rows lie past the end of the keys file`);
        continue;
      }
      const keys = new Float32Array(e.nKeys * m.header.dim);
      await readAll(fh, new Uint8Array(keys.buffer), e.offset * rowBytes, path);
      const bad = keys.findIndex((v) => !Number.isFinite(v));
      if (e.keysSha256 === undefined) {
        report.keysUnverified++;
        if (bad >= 0) report.problems.push(`${what}: key value ${bad} is ${keys[bad]}`);
      } else if (keysChecksum(keys) !== e.keysSha256) {
        report.problems.push(`${what}: its keys do not match their checksum in the manifest (damaged); reinstall the skill`);
      } else if (bad >= 0) {
        report.problems.push(`${what}: key value ${bad} is ${keys[bad]}, although it matches its checksum (written so)`);
      } else report.keysVerified++;
    }
    if (report.keysUnverified > 0) {
      report.unverified.push(`${report.keysUnverified} skill(s) have no key checksum (installed by an earlier version; reinstall them to record one)`);
    }
  } finally {
    await fh.close();
  }
  return report.problems.length === problemsBefore;
}

/** Every entry's text, read and verified as a route reads it; returns the texts that are good. */
async function checkTexts(dir: string, entries: readonly BankEntry[], report: BankCheckReport): Promise<Map<string, RenderableSkill>> {
  const store = new TextStore(dir);
  const good = new Map<string, RenderableSkill>();
  const failed = new Map<string, string>();
  let unverifiable = 0;
  for (const e of entries) {
    if (good.has(e.contentHash) || failed.has(e.contentHash)) continue;
    try {
      good.set(e.contentHash, await store.get(e.contentHash));
      if (isVerifiableHash(e.contentHash)) report.textsVerified++;
      else unverifiable++;
    } catch (err) {
      failed.set(e.contentHash, (err as Error).message);
    }
  }
  for (const e of entries) {
    const why = failed.get(e.contentHash);
    if (why !== undefined) {
      report.problems.push(`skill ${quoteForMessage(e.id)}: ${why}`);
      continue;
    }
    const t = good.get(e.contentHash)!;
    if (e.renderCut && (e.renderCut.descriptionChars > t.description.length || e.renderCut.bodyChars > t.body.length)) {
      report.problems.push(`skill ${quoteForMessage(e.id)}: its renderCut (${e.renderCut.descriptionChars}, ${e.renderCut.bodyChars}) is longer than its text`);
    }
  }
  if (unverifiable > 0) report.unverified.push(`${unverifiable} text(s) stored under a content hash that is not sha256 (read, not verified)`);
  return good;
}

/** The lexicon as an open would read it, and each indexed skill's terms against its text. */
async function checkLexicon(dir: string, m: BankManifest, texts: Map<string, RenderableSkill>, report: BankCheckReport): Promise<void> {
  const seen = await BankLexicon.inspect(dir, { generation: m.generation, entries: () => [...m.entries] });
  if (seen.problem !== undefined) {
    report.repairs.push(`lexicon.bin will be rebuilt from texts/ at the next open: ${seen.problem}`);
    return;
  }
  if (seen.tail > 0) report.repairs.push(`lexicon.bin: ${seen.tail} bytes of an interrupted commit past its COMMIT (dropped at the next open)`);
  report.lexiconSkills = seen.index.size;
  const lost = new Set(seen.lost);
  const vocab = seen.index.vocabulary;
  for (const e of m.entries) {
    if (e.disableModelInvocation) continue;
    const text = texts.get(e.contentHash);
    if (text === undefined) continue; // reported with the texts
    if (lost.has(e.id)) {
      report.problems.push(`lexicon.bin records skill ${quoteForMessage(e.id)} as lost, but its text is there: BM25 never scores it (delete lexicon.bin to have it rebuilt)`);
      continue;
    }
    const doc = seen.index.docTerms(e.id);
    const want = new Map<string, number>();
    for (const tok of bm25DocTokens(text)) want.set(tok, (want.get(tok) ?? 0) + 1);
    let same = doc !== undefined && doc.terms.length === want.size;
    for (let j = 0; same && j < doc!.terms.length; j++) same = want.get(vocab.term(doc!.terms[j])) === doc!.tfs[j];
    if (!same) report.problems.push(`lexicon.bin: the terms of skill ${quoteForMessage(e.id)} are not those of its text, so BM25 scores it wrongly (delete lexicon.bin to have it rebuilt)`);
  }
}

/** The report as `gavel check` prints it. */
export function formatBankCheck(r: BankCheckReport): string {
  const lines = [
    `bank ${r.dir}: generation ${r.generation ?? "?"}, ${r.skills} skills, ${r.rows} key rows (${r.deadRows} dead)`,
    `keys: ${r.keysVerified} skills verified by checksum, ${r.keysUnverified} without one`,
    `texts: ${r.textsVerified} verified against their content hash`,
    `lexicon: ${r.lexiconSkills === undefined ? "not used as is (see below)" : `${r.lexiconSkills} skills, replayed to the manifest's commit`}`,
  ];
  const list = (title: string, items: string[]) => {
    if (items.length > 0) lines.push(`${title} (${items.length}):`, ...items.map((s) => `  - ${s}`));
  };
  list("problems", r.problems);
  list("repaired by the next open", r.repairs);
  list("unverified", r.unverified);
  lines.push(r.ok ? "ok" : `${r.problems.length} problem(s)`);
  return lines.join("\n");
}
