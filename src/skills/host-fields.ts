// Front-matter keys as agent hosts read them beyond the spec (Claude Code's disable-model-invocation
// and when_to_use), and the small text helpers the skill readers share.
import type { Skill } from "./types.js";

/** Claude Code cuts a skill's description and `when_to_use` together at this many characters in its listing. */
export const HOST_LISTING_MAX = 1536;

/** Spellings of true and false that YAML 1.1 hosts read as booleans (any case), and 1 / 0. */
const FLAG_TRUE = new Set(["true", "yes", "on", "1"]);
const FLAG_FALSE = new Set(["false", "no", "off", "0"]);

/**
 * `disable-model-invocation` as hosts read it. YAML 1.2 (our parser) reads `yes`, `on` as text and
 * `1` as a number, but hosts with YAML 1.1 parsers read them as true, and an author who wrote
 * `disable-model-invocation: yes` meant to guard the skill: reading it as false would auto-route a
 * guarded skill. So yes/on/1/true (any case) are true, no/off/0/false are false, each with a warning
 * when it was not a YAML boolean; anything else is false (not guarded) with a warning.
 */
export function readFlag(v: unknown, where: string, warnings: string[]): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v === "boolean") return v;
  if (typeof v === "string" || typeof v === "number") {
    const t = String(v).trim().toLowerCase();
    const shown = typeof v === "string" ? `the string ${JSON.stringify(truncate(v))}` : `the number ${v}`;
    if (FLAG_TRUE.has(t) || FLAG_FALSE.has(t)) {
      const value = FLAG_TRUE.has(t);
      warnings.push(`${where}: disable-model-invocation is ${shown}, read as the boolean ${value} (write true or false)`);
      return value;
    }
  }
  // Unknown value: erring towards "disabled" would hide a skill; towards "enabled" would auto-invoke one the
  // author meant to guard. Hosts treat non-true as false, so do we, but say so.
  warnings.push(`${where}: disable-model-invocation should be true or false, got ${describeType(v)}; read as false`);
  return false;
}

/**
 * `when_to_use` (Claude Code): trigger phrases or example requests that the host lists after the
 * description. Text, or a number or boolean read as its text; anything else is ignored with a warning.
 */
export function readWhenToUse(value: unknown, where: string, warnings: string[], clean: (text: string) => string): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "number" || typeof value === "boolean") {
    warnings.push(`${where}: when_to_use is a ${typeof value}, read as the string "${String(value)}"`);
    value = String(value);
  }
  if (typeof value !== "string") {
    warnings.push(`${where}: when_to_use should be text, got ${describeType(value)}; not read`);
    return "";
  }
  return clean(value).trim();
}

/**
 * The description as the host's model reads it: Claude Code lists `when_to_use` after the description
 * (the two together cut at {@link HOST_LISTING_MAX} characters in its listing); the router reads both,
 * whole. A description that already ends with the text (a skill loaded again from a {@link Skill}) is kept.
 */
export function withWhenToUse(description: string, whenToUse: string, where: string, warnings: string[]): string {
  if (whenToUse === "" || description.endsWith(whenToUse)) return description;
  const listed = `${description}\n${whenToUse}`;
  const chars = charCount(listed);
  if (chars > HOST_LISTING_MAX) {
    warnings.push(
      `${where}: description and when_to_use have ${chars} characters together; Claude Code lists only the first ${HOST_LISTING_MAX} (the router reads them whole)`,
    );
  }
  return listed;
}

export function describeType(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "a map";
  return `a ${typeof v}`;
}

/** Characters as the spec (and Codex) count them: code points, not UTF-16 units. */
export function charCount(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

export function truncate(s: string, n = 80): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}
