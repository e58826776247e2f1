/**
 * The lexical tokenizer: the words that BM25 (bm25.ts, live-index.ts), the name features, the reference
 * idf and the bank's lexicon read of a text.
 *
 * @module
 */
/**
 * The scripts written without spaces between words that the tokenizer reads as Lucene's CJKAnalyzer
 * does: Han, Hiragana, Katakana (with its prolonged sound mark ー, which Unicode files under Common)
 * and Hangul.
 */
const CJK = "\\p{sc=Han}\\p{sc=Hiragana}\\p{sc=Katakana}\\p{sc=Hangul}\\u30fc";

/**
 * A token: either a run of the CJK scripts' letters (each with its combining marks), or a word of other
 * letters, their combining marks and digits (a mark inside a word does not split it). The general
 * categories split code points into letters, marks, numbers, punctuation, symbols, separators and
 * others, so "not P, S, Z or C" is a letter, mark or number; a CJK script's symbols (㋐, ㉠) are
 * neither and split, as any symbol does.
 */
const TOKEN = new RegExp(`(?:(?=[\\p{L}\\p{N}])[${CJK}]\\p{M}*)+|[^\\p{P}\\p{S}\\p{Z}\\p{C}${CJK}]+`, "gu");
/** A word of a text without CJK or width forms: what {@link TOKEN} matches there, found faster. */
const WORD = /[\p{L}\p{M}\p{N}]+/gu;
/** Whether a text holds a CJK script's code point or a width form (the slower path). */
const SPECIAL = new RegExp(`[${CJK}\\uff01-\\uff5e\\uff61-\\uff9f]`, "u");
/** A token of {@link TOKEN} that opens with a CJK script's code point is a CJK run. */
const CJK_START = new RegExp(`^[${CJK}]`, "u");
/** Full-width ASCII and half-width Katakana, which NFKC folds to ASCII and full-width Katakana. */
const WIDTH = /[\uff01-\uff5e\uff61-\uff9f]+/gu;
/** A run that is not one UTF-16 unit a character: a mark, or a code point past the BMP. */
const NOT_UNITS = /[\p{M}\u{10000}-\u{10ffff}]/u;
const CHAR_MARKS = /\P{M}\p{M}*/gu;

/**
 * Version of {@link bm25Tokens} and of bm25DocTokens (postings.ts): an index kept on disk (the bank's
 * lexicon) records it and is rebuilt when it changes. Bump it with any change to either.
 * 2: combining marks stay in their word, and the text is NFC-normalised first.
 * 3: Han, Hiragana, Katakana and Hangul become overlapping character bigrams and split from the
 * words written against them; full-width ASCII and half-width Katakana are folded.
 */
export const TOKENIZER_VERSION = 3;

/** The overlapping bigrams of a CJK run (one character, with its marks, stays a unigram). */
function pushBigrams(run: string, out: string[]): void {
  if (!NOT_UNITS.test(run)) {
    if (run.length === 1) out.push(run);
    for (let i = 2; i <= run.length; i++) out.push(run.slice(i - 2, i));
    return;
  }
  const chars = run.match(CHAR_MARKS) ?? [];
  if (chars.length === 1) out.push(chars[0]);
  for (let i = 1; i < chars.length; i++) out.push(chars[i - 1] + chars[i]);
}

/**
 * The lexical tokens of a text: lower-cased words of the text in NFC, with CJK text cut as Lucene's
 * CJKAnalyzer (StandardTokenizer and CJKBigramFilter) cuts it.
 *
 * A word is a run of letters (with their combining marks) and digits outside the CJK scripts.
 * Underscores, dots and dashes split, so `audit_logs` and `audit-logs.js` share `audit` and `logs`
 * with prose; no stemming and no stop list, since the idf already discounts words every skill uses.
 * Marks keep scripts that write vowels with them (Devanagari, Thai, Arabic's vowel signs) in whole
 * words, and NFC makes a decomposed "café" the precomposed one.
 *
 * Han, Hiragana, Katakana and Hangul, which do not space their words, give each run of their letters
 * as its overlapping two-character bigrams ("部署应用" → 部署, 署应, 应用), so a query shares the
 * bigrams of any word it shares; a run of one character stays itself. A script change splits: Latin
 * letters or digits written against CJK text are words of their own ("用Docker部署" → 用, docker, 部署).
 * Full-width ASCII (Ｄｏｃｋｅｒ) and half-width Katakana (ﾃｽﾄ) are read as ASCII and full-width
 * Katakana, as NFKC reads them.
 */
export function bm25Tokens(text: string): string[] {
  const nfc = text.normalize("NFC");
  if (!SPECIAL.test(nfc)) return nfc.toLowerCase().match(WORD) ?? [];
  const tokens = nfc.replace(WIDTH, (w) => w.normalize("NFKC")).toLowerCase().match(TOKEN) ?? [];
  const out: string[] = [];
  for (const tok of tokens) {
    // every CJK script's code point lies at U+1100 or above
    if (tok.charCodeAt(0) < 0x1100 || !CJK_START.test(tok)) out.push(tok);
    else pushBigrams(tok, out);
  }
  return out;
}
