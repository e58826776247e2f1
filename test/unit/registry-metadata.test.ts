// The MCP registry's metadata: server.json (its schema's required fields and limits) and package.json's
// mcpName, which the registry checks against server.json's name when it verifies the npm package.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../helpers/paths.js";

const read = (f: string) => JSON.parse(readFileSync(join(repoRoot, f), "utf8")) as Record<string, any>;

describe("server.json and mcpName", () => {
  const server = read("server.json");
  const pkg = read("package.json");

  it("names the server as package.json's mcpName does, in a registry namespace", () => {
    expect(server.name).toBe(pkg.mcpName);
    expect(server.name).toMatch(/^[a-zA-Z0-9.-]+\/[a-zA-Z0-9._-]+$/);
    expect(server.$schema).toMatch(/^https:\/\/static\.modelcontextprotocol\.io\/schemas\/\d{4}-\d{2}-\d{2}\/server\.schema\.json$/);
    expect(typeof server.description).toBe("string");
    expect(server.description.length).toBeGreaterThan(0);
    expect(server.description.length).toBeLessThanOrEqual(100);
  });

  it("points at this npm package and version, run as `gavel mcp` over stdio", () => {
    expect(server.version).toBe(pkg.version);
    expect(server.packages).toHaveLength(1);
    const p = server.packages[0];
    expect(p).toMatchObject({ registryType: "npm", identifier: pkg.name, version: pkg.version, transport: { type: "stdio" }, runtimeHint: "npx" });
    // npx runs a package's one bin: gavel-router has exactly one, `gavel`, whose first argument is the command
    expect(Object.keys(pkg.bin)).toEqual(["gavel"]);
    expect(p.packageArguments).toEqual([expect.objectContaining({ type: "positional", value: "mcp" })]);
    for (const v of p.environmentVariables ?? []) expect(v.name).toMatch(/^GAVEL_[A-Z_]+$/);
  });
});
