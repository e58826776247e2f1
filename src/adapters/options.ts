/**
 * How every adapter entry point checks its options: by key (the keys of its options type, with a hint
 * where a key belongs to a nested tool's options) and its text options by value, in one pass per
 * option set.
 *
 * @module
 */
import { invalidArgument, clip } from "../errors.js";
import { optionsObject, stringOption } from "../util/validate.js";

/**
 * An adapter's options checked: `optionsObject` with `known` (the keys of its options type), and
 * `nested` naming the keys of options that are objects themselves (`{ search: { k } }`), so that such
 * a key given at the top level says where it goes; then the text options by type: `description` and
 * `system` strings, `name` (a tool's) and `id` (a processor's) non-empty strings. The one place an
 * adapter's option set is checked so; the caller checks its other values.
 *
 * @throws GavelError `INVALID_ARGUMENT` naming the unknown key and the nearest known one (or where it
 *   goes), or the text option of the wrong kind
 */
export function adapterOptions(value: unknown, what: string, known: Readonly<Record<string, true>>, nested: Readonly<Record<string, Readonly<Record<string, true>>>> = {}): Record<string, unknown> {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    for (const key of Object.keys(value)) {
      if (Object.prototype.hasOwnProperty.call(known, key)) continue;
      const homes = Object.keys(nested).filter((home) => Object.prototype.hasOwnProperty.call(nested[home], key));
      if (homes.length === 0) continue; // optionsObject names it
      const where = homes.map((home) => `{ ${home}: { ${key} } }`).join(" or ");
      throw invalidArgument(`unknown option ${JSON.stringify(clip(key))} in ${what} (did you mean ${where}?); the options are ${Object.keys(known).join(", ")}`);
    }
  }
  const o = optionsObject(value, what, known);
  for (const k of ["description", "system"]) stringOption(o[k], k);
  for (const k of ["name", "id"]) stringOption(o[k], k, true);
  return o;
}
