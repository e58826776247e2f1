/**
 * Look-alike skill names (docs/RELIABILITY.md, "Names: NFC and look-alikes"): a name that mixes scripts (a
 * Cyrillic "а" in "react"), that hides invisible characters, or that reads as another skill's name
 * can pass for that skill in `gavel list` and in a host's menu. Names are compared in Unicode NFC
 * (parse.ts normalises them); these checks flag the rest as spec warnings, which install and list
 * show. The skeleton is a simplified form of Unicode TR39's: NFKC, lower case, invisible characters
 * dropped, and the common Cyrillic and Greek look-alikes of Latin letters (and 0/1 for o/l) mapped
 * to them.
 *
 * @module
 */
import { clip } from "../errors.js";

/** Scripts told apart; letters of any other script count as "Other". */
const SCRIPTS = ["Latin", "Cyrillic", "Greek", "Armenian", "Georgian", "Cherokee", "Han", "Hiragana", "Katakana", "Hangul", "Arabic", "Hebrew", "Devanagari", "Thai"] as const;
const SCRIPT_RE = SCRIPTS.map((s) => [s, new RegExp(`\\p{Script=${s}}`, "u")] as const);
/** Scripts written together: Japanese (Han + kana) and Korean (Han + Hangul) are one writing each. */
const TOGETHER = [new Set(["Han", "Hiragana", "Katakana"]), new Set(["Han", "Hangul"])];
const LETTER = /\p{L}/u;
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\u{E0000}-\u{E007F}]/gu;

/** Cyrillic and Greek letters (lower case) that look like Latin ones, and digits like letters. */
const LOOKALIKE: Record<string, string> = {
  а: "a", в: "b", е: "e", ё: "e", з: "3", і: "i", ї: "i", ј: "j", к: "k", м: "m", н: "h", о: "o", п: "n", р: "p", с: "c", т: "t", у: "y", х: "x", ѕ: "s", ԁ: "d", ԛ: "q", ԝ: "w", һ: "h", ӏ: "l", ɡ: "g",
  α: "a", β: "b", γ: "y", ε: "e", η: "n", ι: "i", κ: "k", ν: "v", ο: "o", ρ: "p", τ: "t", υ: "u", χ: "x", ω: "w",
  "0": "o", "1": "l",
};

/** The scripts of a name's letters, in order of first use. */
export function scriptsOf(name: string): string[] {
  const seen = new Set<string>();
  for (const ch of name) {
    if (!LETTER.test(ch)) continue;
    seen.add(SCRIPT_RE.find(([, re]) => re.test(ch))?.[0] ?? "Other");
  }
  return [...seen];
}

/** Whether letters of these scripts side by side are one writing system (Japanese, Korean, or one script). */
function oneWriting(scripts: readonly string[]): boolean {
  return scripts.length <= 1 || TOGETHER.some((t) => scripts.every((s) => t.has(s)));
}

/** `U+200B, U+2060` for the invisible characters of a name. */
function invisibleOf(name: string): string[] {
  return [...new Set(name.match(INVISIBLE) ?? [])].map((c) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`);
}

/**
 * Warnings about a name (already in NFC) that could pass for another: mixed scripts, invisible
 * characters. `at` is where the name is (for the message); `shown` the name as messages quote it.
 */
export function lookalikeWarnings(name: string, at: string, shown: string): string[] {
  const out: string[] = [];
  const scripts = scriptsOf(name);
  if (!oneWriting(scripts)) {
    const odd = [...name].filter((ch) => LETTER.test(ch) && !SCRIPT_RE.find(([s]) => s === scripts[0])![1].test(ch));
    const list = [...new Set(odd)].map((c) => `"${c}" U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`).join(", ");
    out.push(`${at}: name "${shown}" mixes scripts (${scripts.join(", ")}: ${clip(list)}), so it may look like another name; a look-alike name can pass for another skill`);
  }
  const hidden = invisibleOf(name);
  if (hidden.length > 0) out.push(`${at}: name "${shown}" holds invisible characters (${clip(hidden.join(", "))}), so it may look like another name`);
  return out;
}

/** The form in which two names that look alike are equal (see the module comment). */
export function nameSkeleton(name: string): string {
  let s = name.normalize("NFKC").toLowerCase().replace(INVISIBLE, "");
  s = [...s].map((ch) => LOOKALIKE[ch] ?? ch).join("");
  return s.replace(/[_\s]+/g, "-");
}
