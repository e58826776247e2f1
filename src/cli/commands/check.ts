import { checkBank, formatBankCheck } from "../../bank/check.js";
import type { Command } from "./types.js";
import { bankDir } from "../../config.js";
import { UsageError } from "../usage-error.js";
import { parseFlags } from "../ui/flags.js";
import { nonEmptyArgs } from "../ui/options.js";

/** `gavel check`'s options. */
const CHECK_OPTIONS = { bank: { type: "string", short: "b" }, json: { type: "boolean" } } as const;

/** `gavel check`: a bank's integrity check (read-only), as SQLite's `PRAGMA integrity_check`. */
export const check: Command = {
  summary: "verify a bank's manifest, keys, texts and lexicon (read-only)",
  help: `usage: gavel check [--bank DIR] [--json]

Reads the bank and verifies it without changing a byte (no lock is taken, so it may run beside an
install; it checks the last committed state):
  - the manifest parses and its entries fit the keys file;
  - every skill's key block is finite and matches the sha256 its entry records (skills installed by
    an earlier version have none and are listed as unverified);
  - every skill's text is there and matches the content hash it is stored under;
  - the lexicon replays to the manifest's commit, and each skill's terms are those of its text.
Prints a report; exits 0 when no problem was found (things the next open repairs by itself, such as
an interrupted commit's leftovers or a lexicon to rebuild, are listed but are not problems), 1 with the
list of problems otherwise.

  --bank, -b DIR   the bank directory                 [$GAVEL_BANK, default .gavel/bank]
  --json           print the report as JSON`,
  options: CHECK_OPTIONS,
  async run(args) {
    const { values, positionals } = parseFlags("check", { args, allowPositionals: true, options: CHECK_OPTIONS });
    if (positionals.length > 0) {
      throw new UsageError("gavel check takes no positional argument", this.help);
    }
    nonEmptyArgs(values, ["bank"]);
    const report = await checkBank(bankDir(values.bank));
    console.log(values.json ? JSON.stringify(report, null, 2) : formatBankCheck(report));
    return report.ok ? 0 : 1;
  },
};
