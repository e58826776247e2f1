import type { Command } from "gavel-router/internal";
import { calibrateCommand } from "./calibrate.js";
import { evalCommand } from "./eval.js";
import { layer } from "./layer.js";
import { train } from "./train.js";
import { trainGate } from "./train-gate.js";

/**
 * The lab's `gavel` subcommands, by the name they are called with. The runtime's CLI (src/cli/gavel.ts)
 * loads this table through `gavel-router/lab` when one of them is called (src/cli/lab.ts).
 */
export const labCommands: Record<string, Command> = { layer, train, eval: evalCommand, calibrate: calibrateCommand, "train-gate": trainGate };
