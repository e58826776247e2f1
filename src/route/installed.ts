// What a router says of each installed skill: Router.list's rows, and `gavel list`'s, which reads them
// from the bank's manifest without a model.
import type { BankEntry } from "../bank/types.js";
import type { InstalledSkill } from "./types.js";

/** What `Router.list` (and `gavel list`) say of an installed skill. */
export function installedSkill(e: BankEntry): InstalledSkill {
  return {
    id: e.id,
    name: e.name,
    description: e.description,
    source: e.source,
    keys: e.nKeys,
    renderTokens: e.renderTokens,
    disableModelInvocation: e.disableModelInvocation,
    ...(e.warnings !== undefined && e.warnings.length > 0 ? { warnings: [...e.warnings] } : {}),
  };
}
