// docs/api.md is generated from the sources' doc comments (scripts/gen/api-doc.mjs): it must be the
// generator's output for the code as it is, so an export added, removed or re-documented without
// regenerating the page fails here. Run `node scripts/gen/api-doc.mjs` to update it.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { GAVEL_ERROR_CODES } from "../../src/errors.js";
// @ts-expect-error plain .mjs script without types
import { API_DOC, renderApiDoc } from "../../scripts/gen/api-doc.mjs";

describe("docs/api.md", () => {
  const text: string = renderApiDoc();

  it("is what scripts/gen/api-doc.mjs writes for the current sources", () => {
    expect(readFileSync(API_DOC, "utf8")).toBe(text);
  });

  it("lists every entry, the Router's methods (rank and live included), the serve client and discovery", () => {
    for (const entry of ["gavel-router", "gavel-router/ai-sdk", "gavel-router/langchain", "gavel-router/mastra", "gavel-router/lab"]) expect(text).toContain(`## \`${entry}\``);
    for (const m of ["static open()", "install()", "route()", "rank()", "glance()", "live()", "close()"]) expect(text).toContain(`| \`${m}\` |`);
    for (const name of ["connect", "isRunning", "routeViaServerIfRunning", "discoverSkills", "trainProjections", "evaluate", "calibrate", "scanLayers", "labCommands"]) expect(text).toMatch(new RegExp(`\\| \`${name}\` \\| (function|const) \\|`));
    expect(text).not.toMatch(/\| {2}\|/); // no export or member without a description
  });

  it("lists every error code with its meaning, from src/errors.ts's doc comments", () => {
    const section = text.slice(text.indexOf("\n## Error codes\n"));
    expect(section).toContain("| code | what it means |");
    for (const code of GAVEL_ERROR_CODES) expect(section).toMatch(new RegExp(`\\| \`${code}\` \\| \\S[^|\\n]*`));
    expect(section).toContain("| `INVALID_ARGUMENT` | An argument has the wrong type or value. |");
    expect(section).toContain("| `NO_SPACE` | The disk (or the user's quota) is full: a bank could not be written (ENOSPC / EDQUOT); what was committed before stands. |");
  });
});
