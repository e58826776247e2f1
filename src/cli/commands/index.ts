import { info } from "./info.js";
import type { Command } from "./types.js";

export const commands: Record<string, Command> = { info };
