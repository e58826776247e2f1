// Writes docs/configuration.md (scripts/gen/config-table.ts). Usage: npm run gen:config
import { writeFileSync } from "node:fs";
import { CONFIG_PAGE, renderConfigTable } from "./config-table.js";

writeFileSync(CONFIG_PAGE, renderConfigTable());
console.log(`wrote ${CONFIG_PAGE}`);
