// The part of a long task the lexical readers take (src/route/context.ts lexicalRead): the whole text
// up to max(65,536, 16 × the glance's budget) characters, else that many from the kept side, cut at
// white space and never inside a surrogate pair. Checked on fresh random texts against a plain
// statement of the rule.
import { describe, expect, it } from "vitest";
import { LEXICAL_MIN_CHARS, lexicalRead } from "../../src/route/context.js";

/** A random text of `n` UTF-16 units: words of letters, some astral characters, spaces and newlines; with `runs`, long runs without white space. */
function randomText(n: number, seed: number, runs = false): string {
  let x = seed >>> 0 || 1;
  const rnd = () => ((x = (Math.imul(x, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  const parts: string[] = [];
  let len = 0;
  while (len < n) {
    const r = rnd();
    const piece = r < 0.05 ? "😀" : r < 0.1 ? "\n" : r < 0.3 ? " " : runs && r < 0.32 ? "x".repeat(100 + Math.floor(rnd() * 200)) : String.fromCharCode(97 + Math.floor(rnd() * 26));
    parts.push(piece);
    len += piece.length;
  }
  return parts.join("");
}

const isWs = (c: string | undefined) => c !== undefined && /\s/.test(c);
const high = (c: number) => c >= 0xd800 && c <= 0xdbff;
const low = (c: number) => c >= 0xdc00 && c <= 0xdfff;

describe("lexicalRead", () => {
  it("returns a text within the bound as it is", () => {
    for (const n of [0, 1, 1000, LEXICAL_MIN_CHARS]) {
      const t = randomText(n, n + 7).slice(0, n);
      expect(lexicalRead(t, "end", 256)).toBe(t);
      expect(lexicalRead(t, "start", 256)).toBe(t);
    }
    // a glance that reads more tokens raises the bound to 16 characters a token
    const t = randomText(100_000, 3);
    expect(lexicalRead(t, "end", 8192)).toBe(t);
  });

  it("keeps the kept side of a longer text, at most the bound, cut at white space within 64 characters, never splitting a surrogate pair", () => {
    for (let seed = 1; seed <= 40; seed++) {
      const budget = seed % 3 === 0 ? 6000 : 512;
      const max = Math.max(LEXICAL_MIN_CHARS, 16 * budget);
      const text = randomText(max + 1 + ((seed * 7919) % 300_000), seed * 2654435761, seed % 4 === 0);
      for (const keep of ["start", "end"] as const) {
        const r = lexicalRead(text, keep, budget);
        expect(r.length).toBeLessThanOrEqual(max);
        expect(r.length).toBeGreaterThanOrEqual(max - 65);
        if (keep === "end") {
          expect(text.endsWith(r)).toBe(true);
          const at = text.length - r.length; // where the read starts
          const window = text.slice(text.length - max, text.length - max + 64);
          // at the window's first white space when it has one, else at its start (a pair left whole)
          if (/\s/.test(window)) expect(isWs(text[at])).toBe(true), expect(text.slice(text.length - max, at)).not.toMatch(/\s/);
          else expect(at - (text.length - max)).toBeLessThanOrEqual(1);
          expect(low(text.charCodeAt(at)) && high(text.charCodeAt(at - 1))).toBe(false);
        } else {
          expect(text.startsWith(r)).toBe(true);
          const end = r.length;
          const window = text.slice(max - 64, max + 1);
          if (/\s/.test(window)) expect(isWs(text[end])).toBe(true), expect(text.slice(end + 1, max + 1)).not.toMatch(/\s/);
          else expect(max - end).toBeLessThanOrEqual(1);
          expect(high(text.charCodeAt(end - 1)) && low(text.charCodeAt(end))).toBe(false);
        }
      }
    }
  });
});
