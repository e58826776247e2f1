// `node --import hide-packages.mjs adapter-peers-child.mjs <esm|cjs> <dist/adapters/x.js|.cjs>`: loads an
// adapter's built entry (import() or require()) and calls each of its functions with a stand-in router,
// printing one JSON object: whether the import succeeded and, per function, "ok" or the error's name,
// code and message (see test/e2e/adapters-peer-missing.test.ts).
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [format, given] = process.argv.slice(2);
const file = resolve(given);
const router = { route: async () => ({}), get: async () => ({}), glance: async () => [], list: () => [] };
const calls = {
  gavelPrepareStep: (m) => m.gavelPrepareStep(router),
  gavelLoadSkillTool: (m) => m.gavelLoadSkillTool(router),
  gavelSearchSkillsTool: (m) => m.gavelSearchSkillsTool(router),
  gavelSkills: (m) => m.gavelSkills(router),
  gavelSkillTools: (m) => m.gavelSkillTools(router),
  gavelSkillMiddleware: (m) => m.gavelSkillMiddleware(router),
  GavelSkillRetriever: (m) => new m.GavelSkillRetriever(router),
  gavelSkillProcessor: (m) => m.gavelSkillProcessor(router),
};
const described = (err) => ({ name: err?.name, code: err?.code, message: err?.message });

let mod;
try {
  mod = format === "cjs" ? createRequire(import.meta.url)(file) : await import(pathToFileURL(file).href);
} catch (err) {
  process.stdout.write(JSON.stringify({ imported: described(err) }));
  process.exit(0);
}
const out = { imported: "ok", calls: {} };
for (const [name, call] of Object.entries(calls)) {
  if (typeof mod[name] !== "function") continue;
  try {
    call(mod);
    out.calls[name] = "ok";
  } catch (err) {
    out.calls[name] = described(err);
  }
}
process.stdout.write(JSON.stringify(out));
