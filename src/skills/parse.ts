import { createHash } from "node:crypto";
import { isMap, isScalar, visit, type Document } from "yaml";
import { GavelError, clip, clipLocation, clipMessage, invalidArgument } from "../errors.js";
import { checkInt, describeValue, optionsObject, stringOption } from "../util/validate.js";
import { DEFAULT_MAX_BODY_BYTES, type ParseSkillOptions, type Skill } from "./types.js";
import { lookalikeWarnings } from "./confusables.js";
import { numberSources, parseFrontMatterYaml, type CommentCut } from "./front-matter-yaml.js";
import { charCount, describeType, readFlag, readWhenToUse, truncate, withWhenToUse } from "./host-fields.js";

/** The spec's name rule: 1–64 of a-z, 0-9, '-', no leading/trailing hyphen, no "--". */
const SPEC_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const SPEC_NAME_MAX = 64;
const SPEC_DESCRIPTION_MAX = 1024;
const SPEC_COMPATIBILITY_MAX = 500;
const SPEC_BODY_LINES = 500;

/**
 * Phrases that try to make a router or agent pick a skill regardless of the task, or that address the
 * model directly (SKILL-FORMAT.md counts them in real libraries). Some skills merely discuss prompt
 * injection, so this is a warning for the user, never a refusal.
 */
const STEERING = [
  /\bignore\s+(?:all\s+)?(?:the\s+)?(?:previous|prior|above)\s+instructions\b/i,
  /\balways\s+use\s+this\s+skill\b/i,
  /\buse\s+this\s+skill\s+(?:whenever|for\s+any|for\s+every|for\s+all)\b/i,
];

/**
 * Bounds of the front matter, checked before (bytes) and right after (keys) the YAML parse and before
 * anything is built from it: skill files are untrusted, and YAML's cost is not linear in everything
 * (the library's own unique-key check is quadratic: 60K keys took 158 s). Hosts' front matter is a
 * dozen keys in a few hundred bytes.
 */
export const MAX_FRONT_MATTER_BYTES = 64 * 1024;
/** Most keys in the front matter, nested maps included (see {@link MAX_FRONT_MATTER_BYTES}). */
export const MAX_FRONT_MATTER_KEYS = 1000;
/**
 * Cap on what the router reads as a skill's description (the description with `when_to_use`), in
 * UTF-8 bytes, for every source (a SKILL.md's front matter is already within it; a JSONL row or an
 * array entry is not). The spec allows 1,024 characters and hosts list about 1,536; the cap is far
 * above both, and bounds the encoder's search for a cut when the description alone overflows the budget.
 */
export const MAX_DESCRIPTION_BYTES = 64 * 1024;

const PARSE_KEYS: Readonly<Record<keyof ParseSkillOptions, true>> = { folderName: true, maxBodyBytes: true };

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Builds the per-skill error: `where` (a path, or `path:line`) as {@link clipLocation} quotes it, then the message. */
export function skillError(where: string, message: string, cause?: unknown): GavelError {
  return new GavelError(`${clipLocation(where)}: ${message}`, "SKILL_INVALID", cause === undefined ? undefined : { cause });
}

/**
 * Decodes a file's bytes as UTF-8, refusing what is not text: NUL bytes (binary files; no text format
 * a host reads contains them) and invalid UTF-8 (would reach the tokenizer as U+FFFD noise).
 */
export function decodeSkillText(bytes: Uint8Array, where: string): string {
  if (bytes.indexOf(0) !== -1) throw skillError(where, "binary file (contains NUL bytes)");
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch (cause) {
    throw skillError(where, "not valid UTF-8 text", cause);
  }
}

/**
 * Checks text that arrived already decoded (JSONL fields, caller input, a string given to
 * {@link parseSkillMarkdown}). Strict: NUL characters or unpaired surrogates make it an error (the file
 * readers' "binary" rule). Lenient (JSONL rows, arrays): they are dropped / replaced by U+FFFD with a
 * warning, because real libraries carry the odd stray NUL inside otherwise fine text (one row of
 * skills-mit.jsonl.gz has "R\u0000/mes" in a table), and native tokenizers must never see a NUL.
 */
export function sanitizeText(text: string, where: string, field: string, warnings: string[] | null): string {
  let t = text;
  if (t.includes("\0")) {
    if (warnings === null) throw skillError(where, `${field} contains NUL characters (binary data?)`);
    t = t.replaceAll("\0", "");
    warnings.push(`${clipLocation(where)}: ${field} contained NUL characters; they were removed`);
  }
  if (LONE_SURROGATE.test(t)) {
    if (warnings === null) throw skillError(where, `${field} contains unpaired UTF-16 surrogates`);
    t = t.replace(new RegExp(LONE_SURROGATE.source, "g"), "\uFFFD");
    warnings.push(`${clipLocation(where)}: ${field} contained unpaired UTF-16 surrogates; replaced by U+FFFD`);
  }
  return t;
}

/** CRLF/CR → LF and no BOM: line positions and hashes must not depend on the platform that wrote the file. */
export function normalizeNewlines(text: string): string {
  const t = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  return t.includes("\r") ? t.replace(/\r\n?/g, "\n") : t;
}

/**
 * The body as the renders use it: blank lines after the front matter and trailing whitespace dropped
 * (the appendix G render puts exactly one blank line on each side of `{body}`), but leading indentation
 * of the first line kept (it may be a code block).
 */
export function normalizeBody(body: string): string {
  return normalizeNewlines(body).replace(/^(?:[ \t]*\n)+/, "").trimEnd();
}

/** sha256 of the three texts, length-delimited via JSON so field boundaries count. */
export function skillContentHash(name: string, description: string, body: string): string {
  return createHash("sha256").update(JSON.stringify([name, description, body]), "utf8").digest("hex");
}

/** Raw fields gathered by a reader, before validation. */
export interface RawSkillFields {
  id?: unknown;
  name: unknown;
  description: unknown;
  body: unknown;
  meta: Record<string, unknown>;
  source: string;
  /** Location of each front-matter key for warnings (`path:line`); defaults to `source`. */
  keyWhere?: (key: string) => string;
  /** Folder name for folder skills (default name, and the spec's name = folder rule). */
  folderName?: string;
  /** Drop NULs / repair surrogates with a warning instead of refusing (see {@link sanitizeText}). */
  lenientText?: boolean;
  /** Explicit flag (caller input); otherwise read from meta. */
  disableModelInvocation?: unknown;
  maxBodyBytes?: number;
  /** Why the description is missing, where the reader knows (a YAML comment emptied it): its location and reason. */
  descriptionMissing?: { where: string; why: string };
  /** The source text of a `name` or `description` YAML read as a number (`007`, `1.10`): read as written. */
  scalarText?: { name?: string; description?: string };
}

/**
 * Validates and normalises one skill's fields; shared by the SKILL.md, JSONL and in-memory readers so
 * they accept and warn alike. Throws a `SKILL_INVALID` {@link GavelError} for what cannot be used.
 */
export function buildSkill(raw: RawSkillFields): Skill {
  const where = raw.source;
  const warnings: string[] = [];
  const at = raw.keyWhere ?? (() => where);
  const f: FieldContext = {
    where,
    at,
    warnings,
    warn: (key, text) => warnings.push(`${clipLocation(key === null ? where : at(key))}: ${text}`),
    clean: (text, field) => sanitizeText(text, where, field, raw.lenientText ? warnings : null),
  };
  const name = readName(raw, f);
  const stated = readDescription(raw.description, f, raw.descriptionMissing, raw.scalarText?.description);
  const body = readBody(raw, f);
  const id = readId(raw.id, where, name);
  specWarnings(raw, { name, description: stated, body }, f);
  const whenToUseAt = clipLocation(f.at("when_to_use"));
  const whenToUse = readWhenToUse(raw.meta["when_to_use"], whenToUseAt, f.warnings, (t) => f.clean(normalizeNewlines(t), "when_to_use"));
  const description = withWhenToUse(stated, whenToUse, whenToUseAt, f.warnings);
  if (description !== stated) checkDescriptionSize(description, f.at("when_to_use"), "description and when_to_use are");
  steeringWarnings(description, body, f);
  const disableModelInvocation = readFlag(
    raw.disableModelInvocation !== undefined ? raw.disableModelInvocation : raw.meta["disable-model-invocation"],
    clipLocation(f.at("disable-model-invocation")),
    warnings,
  );
  return {
    id,
    name,
    description,
    body,
    meta: raw.meta,
    contentHash: skillContentHash(name, description, body),
    source: where,
    warnings,
    disableModelInvocation,
  };
}

/** What the field readers of {@link buildSkill} share: where the skill is, its warnings, the text check. */
interface FieldContext {
  where: string;
  /** Location of a front-matter key, for errors (skillError clips it). */
  at: (key: string) => string;
  warnings: string[];
  /** Adds a warning at a front-matter key's location (the skill's, for null), clipped as {@link clipLocation} clips it. */
  warn: (key: string | null, text: string) => void;
  /** {@link sanitizeText}, strict or lenient as the reader asked. */
  clean: (text: string, field: string) => string;
}

/** name: hosts such as Claude Code default it to the folder name, so only a skill with neither fails. */
function readName(raw: RawSkillFields, f: FieldContext): string {
  let name: string;
  if (raw.name === undefined || raw.name === null || (typeof raw.name === "string" && raw.name.trim() === "")) {
    if (raw.folderName === undefined) throw skillError(f.where, "missing name");
    name = raw.folderName.normalize("NFC");
    f.warn(null, `no name in the front matter; using the folder name "${clip(name)}"`);
  } else if (typeof raw.name === "string") {
    name = f.clean(normalizeNewlines(raw.name), "name").trim();
  } else if (typeof raw.name === "number" || typeof raw.name === "boolean") {
    // YAML turns `name: 2048` into a number; the intent is plainly the text, as written (`007`).
    name = raw.scalarText?.name ?? String(raw.name);
    f.warn("name", `name is a ${typeof raw.name}, read as the string "${name}"`);
  } else {
    throw skillError(f.at("name"), `name must be a string, got ${describeType(raw.name)}`);
  }
  if (name.includes("\n")) throw skillError(f.at("name"), "name spans several lines");
  // Names are compared in NFC: "café" typed (NFC) and "café" from a macOS folder (NFD) are one name.
  const nfc = name.normalize("NFC");
  if (nfc !== name) f.warn("name", `name "${truncate(nfc)}" was not in Unicode NFC form; it is read in NFC (names are compared in NFC)`);
  return nfc;
}

/**
 * description: the glance and verdict read it. A number or boolean is read as its text, as Claude Code
 * reads it (`description: 42`); a list or map has no single right reading.
 */
function readDescription(value: unknown, f: FieldContext, missing?: { where: string; why: string }, written?: string): string {
  if (value === undefined || value === null) {
    throw missing ? skillError(missing.where, `missing description: ${missing.why}`) : skillError(f.where, "missing description");
  }
  if (typeof value === "number" || typeof value === "boolean") {
    const text = written ?? String(value);
    f.warn("description", `description is a ${typeof value}, read as the string "${clip(text)}"`);
    value = text;
  }
  if (typeof value !== "string") {
    throw skillError(f.at("description"), `description must be a string, got ${describeType(value)}`);
  }
  checkDescriptionSize(value, f.at("description"), "description is");
  const description = f.clean(normalizeNewlines(value), "description").trim();
  if (description === "") throw skillError(f.at("description"), "empty description");
  return description;
}

/** Refuses a description above {@link MAX_DESCRIPTION_BYTES} (a JSONL row's or an array entry's: a SKILL.md's is within its front matter). */
function checkDescriptionSize(text: string, where: string, what: string): void {
  if (text.length <= MAX_DESCRIPTION_BYTES / 3) return; // 3 bytes at most per UTF-16 unit
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > MAX_DESCRIPTION_BYTES) throw skillError(where, `${what} ${bytes} bytes, above the cap of ${MAX_DESCRIPTION_BYTES}`);
}

/** The body, normalised (may be empty), refused above the byte cap. */
function readBody(raw: RawSkillFields, f: FieldContext): string {
  let body = "";
  if (raw.body !== undefined && raw.body !== null) {
    if (typeof raw.body !== "string") throw skillError(f.where, `body must be a string, got ${describeType(raw.body)}`);
    body = normalizeBody(f.clean(raw.body, "body"));
  }
  const maxBody = raw.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const bodyBytes = Buffer.byteLength(body, "utf8");
  if (bodyBytes > maxBody) throw skillError(f.where, `body is ${bodyBytes} bytes, above the cap of ${maxBody}`);
  return body;
}

/** The id: given (a string or number), else the name. */
function readId(value: unknown, where: string, name: string): string {
  if (value === undefined || value === null || value === "") return name;
  if (typeof value === "string" || typeof value === "number") return String(value);
  throw skillError(where, `id must be a string, got ${describeType(value)}`);
}

/** Spec rules hosts do not all enforce: warn, keep the skill. */
function specWarnings(raw: RawSkillFields, skill: { name: string; description: string; body: string }, f: FieldContext): void {
  const { name, description, body } = skill;
  const { warn } = f;
  // the spec's lengths are in characters (code points): an emoji is one, not two UTF-16 units
  if (charCount(name) > SPEC_NAME_MAX || !SPEC_NAME.test(name)) {
    warn(
      "name",
      `name "${truncate(name)}" breaks the spec's rule (1–${SPEC_NAME_MAX} of a-z, 0-9, '-'; no leading, trailing or double hyphen)`,
    );
  }
  f.warnings.push(...lookalikeWarnings(name, clipLocation(f.at("name")), truncate(name)));
  if (raw.folderName !== undefined && raw.name !== undefined && raw.name !== null && name !== raw.folderName.normalize("NFC")) {
    warn("name", `name "${truncate(name)}" differs from its folder's name "${clip(raw.folderName)}"`);
  }
  const descriptionChars = charCount(description);
  if (descriptionChars > SPEC_DESCRIPTION_MAX) {
    warn("description", `description has ${descriptionChars} characters, above the spec's ${SPEC_DESCRIPTION_MAX}`);
  }
  const compatibility = raw.meta["compatibility"];
  const compatibilityChars = typeof compatibility === "string" ? charCount(compatibility) : 0;
  if (compatibilityChars > SPEC_COMPATIBILITY_MAX) {
    warn("compatibility", `compatibility has ${compatibilityChars} characters, above the spec's ${SPEC_COMPATIBILITY_MAX}`);
  }
  const metadata = raw.meta["metadata"];
  if (metadata !== undefined && !isStringMap(metadata)) {
    warn("metadata", "metadata should be a map of strings");
  }
  const lines = body === "" ? 0 : body.split("\n").length;
  if (lines > SPEC_BODY_LINES) warn(null, `body has ${lines} lines, above the spec's recommended ${SPEC_BODY_LINES}`);
}

/** Steering phrases in what the router reads (the description with `when_to_use`, the body): warn, keep the skill. */
function steeringWarnings(description: string, body: string, f: FieldContext): void {
  for (const re of STEERING) {
    const m = re.exec(description) ?? re.exec(body);
    if (m) f.warn(null, `contains "${clip(m[0])}", which may try to steer routing (skill text is untrusted)`);
  }
}

/**
 * Parses one SKILL.md: YAML front matter between `---` lines, then the Markdown body.
 *
 * @param text   the file's text, or its bytes (then NUL bytes and invalid UTF-8 are refused).
 * @param where  location used in `source`, warnings and errors (usually the file's path).
 * @param opts   `folderName` supplies the default name and the spec's name = folder check.
 * @returns the skill, with spec violations as warnings.
 * @throws GavelError `SKILL_INVALID` when the file cannot be used: empty, binary, no or unterminated
 *   front matter, malformed YAML (that quoting a broken top-level value, as Claude Code does, does not
 *   repair; a repair is a warning), front matter not a map, a missing description (or a list or map), missing name
 *   (and no folder name), body above the cap.
 */
export function parseSkillMarkdown(text: string | Uint8Array, where: string, opts: ParseSkillOptions = {}): Skill {
  if (typeof text !== "string" && !(text instanceof Uint8Array)) throw invalidArgument(`parseSkillMarkdown: text must be a string or a Uint8Array, got ${describeValue(text)}`);
  if (typeof where !== "string") throw invalidArgument(`parseSkillMarkdown: where must be a string, got ${describeValue(where)}`);
  const o = optionsObject(opts, "parseSkillMarkdown options", PARSE_KEYS) as ParseSkillOptions;
  opts = {
    folderName: stringOption(o.folderName, "parseSkillMarkdown: folderName"),
    maxBodyBytes: o.maxBodyBytes === Infinity ? Infinity : o.maxBodyBytes === undefined ? DEFAULT_MAX_BODY_BYTES : checkInt(o.maxBodyBytes, "parseSkillMarkdown: maxBodyBytes", 0, Number.MAX_SAFE_INTEGER),
  };
  let src = typeof text === "string" ? text : decodeSkillText(text, where);
  if (typeof text === "string") sanitizeText(src, where, "file", null);
  src = normalizeNewlines(src);
  if (src.trim() === "") throw skillError(where, "empty file");

  const fm = splitFrontMatter(src);
  if (fm === null) throw skillError(where, "no YAML front matter (a SKILL.md starts with a '---' line)");
  if (fm === "unterminated") throw skillError(where, "front matter is not closed by a '---' line");

  const fmBytes = Buffer.byteLength(fm.yaml, "utf8");
  if (fmBytes > MAX_FRONT_MATTER_BYTES) {
    throw skillError(`${where}:${fm.yamlFirstLine}`, `front matter is ${fmBytes} bytes, above the cap of ${MAX_FRONT_MATTER_BYTES}`);
  }
  // YAML 1.2 core schema keeps yes/no/dates as text. Unique keys are checked by checkKeys (linear),
  // not by the library's uniqueKeys (quadratic in the keys of a map). A value that breaks the YAML (an
  // unquoted ": ") is read as Claude Code reads it, quoted, with a warning (front-matter-yaml.ts).
  const { doc, lineCounter, repaired, commentCuts } = parseFrontMatterYaml(fm.yaml);
  const lineOf = (offset: number) => fm.yamlFirstLine + lineCounter.linePos(offset).line - 1;
  if (doc.errors.length > 0) {
    const e = doc.errors[0];
    throw skillError(`${where}:${lineOf(e.pos[0])}`, `malformed YAML front matter: ${firstLine(e.message)}`, e);
  }
  checkKeys(doc, where, lineOf);
  let data: unknown;
  try {
    // maxAliasCount bounds alias expansion ("billion laughs"): skill files are untrusted.
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (cause) {
    throw skillError(where, `front matter cannot be read: ${clipMessage(cause)}`, cause);
  }
  if (data === null || data === undefined) data = {};
  if (typeof data !== "object" || Array.isArray(data) || data instanceof Map) {
    throw skillError(`${where}:${fm.yamlFirstLine}`, "front matter must be a map of keys to values");
  }

  // Line of each top-level key, so warnings point into the file.
  const keyLines = new Map<string, number>();
  if (isMap(doc.contents)) {
    for (const item of doc.contents.items) {
      if (isScalar(item.key) && item.key.range) keyLines.set(String(item.key.value), lineOf(item.key.range[0]));
    }
  }
  const { name, description, ...meta } = data as Record<string, unknown>;
  const cutAt = (cut: CommentCut) => `${where}:${fm.yamlFirstLine + cut.line}`;
  const emptied = commentCuts.find((c) => c.key === "description" && c.kept === "");
  const skill = buildSkill({
    name,
    description,
    body: fm.body,
    meta,
    source: where,
    keyWhere: (key) => (keyLines.has(key) ? `${where}:${keyLines.get(key)}` : where),
    folderName: opts.folderName,
    maxBodyBytes: opts.maxBodyBytes,
    descriptionMissing: emptied && description === null ? { where: cutAt(emptied), why: commentCutWhy(emptied) } : undefined,
    scalarText: numberSources(doc),
  });
  skill.warnings.unshift(
    ...repaired.map(
      (r) =>
        `${clip(where)}:${fm.yamlFirstLine + r.line}: the value of ${JSON.stringify(truncate(r.key))} is not valid YAML (an unquoted \": \", a leading \"*\" or another YAML indicator); ` +
        "it is read as text, as Claude Code reads it, but strict readers such as Codex skip this skill: put the value in quotes",
    ),
    ...commentCuts.map((c) => `${clipLocation(cutAt(c))}: ${c.key} is ${c.kept === "" ? "empty" : JSON.stringify(truncate(c.kept))}: ${commentCutWhy(c)}`),
  );
  return skill;
}

/** Why a comment cut a value (front-matter-yaml.ts), and what keeps the text. */
function commentCutWhy(cut: CommentCut): string {
  return `the rest of its line, ${JSON.stringify(truncate(cut.comment))}, is a YAML comment (a "#" after a space or tab starts one, as hosts read it); put the value in quotes to keep it`;
}

/**
 * At most {@link MAX_FRONT_MATTER_KEYS} keys in all maps together, and no map with a key twice (a
 * repeated `description:` has no single meaning): one pass, a set per map.
 */
function checkKeys(doc: Document, where: string, lineOf: (offset: number) => number): void {
  let keys = 0;
  visit(doc, {
    Map(_, map) {
      keys += map.items.length;
      if (keys > MAX_FRONT_MATTER_KEYS) {
        const at = map.range ? `${where}:${lineOf(map.range[0])}` : where;
        throw skillError(at, `front matter has more than ${MAX_FRONT_MATTER_KEYS} keys`);
      }
      const seen = new Set<string>();
      for (const item of map.items) {
        if (!isScalar(item.key)) continue;
        const id = `${typeof item.key.value}:${String(item.key.value)}`;
        if (seen.has(id)) {
          const at = item.key.range ? `${where}:${lineOf(item.key.range[0])}` : where;
          throw skillError(at, `malformed YAML front matter: map keys must be unique (${JSON.stringify(truncate(String(item.key.value)))} is repeated)`);
        }
        seen.add(id);
      }
    },
  });
}

/**
 * Splits `---\n<yaml>\n---\n<body>`. The closing fence may also be YAML's `...`; trailing spaces on
 * fences are tolerated, as hosts do. Returns null when the file does not open with a fence.
 */
function splitFrontMatter(src: string): { yaml: string; yamlFirstLine: number; body: string } | null | "unterminated" {
  const open = /^---[ \t]*(?:\n|$)/.exec(src);
  if (!open) return null;
  const rest = src.slice(open[0].length);
  const close = /^(?:---|\.\.\.)[ \t]*$/m.exec(rest);
  if (!close) return "unterminated";
  const yaml = rest.slice(0, close.index);
  let after = close.index + close[0].length;
  if (rest[after] === "\n") after += 1;
  return { yaml, yamlFirstLine: 2, body: rest.slice(after) };
}

function isStringMap(v: unknown): boolean {
  return typeof v === "object" && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === "string");
}

function firstLine(s: string): string {
  return s.split("\n")[0];
}
