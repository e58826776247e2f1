/**
 * Skill names, descriptions and warnings come from untrusted files: printed raw, an escape sequence in
 * a name could clear the terminal, move the cursor or hide text, and a bidi override could reorder
 * what the reader sees. {@link safeText} makes such text inert for a terminal.
 */
import { clipLocation } from "../../errors.js";

/**
 * C0 controls (but tab), DEL, C1 controls, the Unicode bidi embeddings, overrides and isolates,
 * zero-width characters, the line and paragraph separators, and the BOM.
 */
const UNSAFE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

/**
 * `s` with every control, bidi and zero-width character (see `UNSAFE`) written as `\u{..}`, so that
 * printing it shows the characters instead of obeying them. Newlines are escaped too (`\u{a}`): use it
 * on one-line fields (names, descriptions, warnings), never on text meant to span lines.
 */
export function safeText(s: string): string {
  return s.replace(UNSAFE, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

/**
 * A skill failure as one line, safe for a terminal, with its location said once: an error about a
 * file usually starts with it already (`where: …`, or `where:3: …` for a line of it; a long path
 * {@link clipLocation}ped), so the message is printed as it is then, and after `where: ` otherwise.
 */
export function failureText(where: string, message: string): string {
  const shown = clipLocation(where);
  return safeText(message.startsWith(`${where}:`) || message.startsWith(`${shown}:`) ? message : `${shown}: ${message}`);
}
