import { info } from "./info.js";
import { install } from "./install.js";
import { projections } from "./projections.js";
import { glance, list, route, uninstall } from "./route.js";
import type { Command } from "./types.js";

/** Every subcommand of the runtime, by the name it is called with (the lab's come from ../lab.ts). */
export const commands: Record<string, Command> = { info, install, route, glance, list, uninstall, projections };
import { demo } from "./demo.js"; commands.demo = demo; // one line, so it never collides with edits to the list above
import { serve } from "./serve.js"; commands.serve = serve; // one line, so it never collides with edits to the list above
import { hook } from "./hook.js"; commands.hook = hook; // one line, so it never collides with edits to the list above
import { mcp } from "./mcp.js"; commands.mcp = mcp; // one line, so it never collides with edits to the list above
import { check } from "./check.js"; commands.check = check; // one line, so it never collides with edits to the list above
import { sync } from "./sync.js"; commands.sync = sync; // one line, so it never collides with edits to the list above
