/**
 * Skill banks on disk: the ε-cover keys of every installed skill, crash-safe, bound to the model and
 * projections that produced them.
 */
export { BankStore } from "./store.js";
export type { BankKeys } from "./keys-file.js";
export {
  BANK_FORMAT_VERSION,
  bankHeaderFor,
  type BankHeader,
  type BankEntry,
  type BankEntryInput,
  type RenderCut,
  type BankStats,
  type BankOpenOptions,
  type BankManifest,
} from "./types.js";
