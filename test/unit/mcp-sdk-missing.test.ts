// `gavel mcp`'s SDK loader names the package to install: one that is not installed, and one installed
// but broken (a file it names is missing, as zod 3.25.0 as published has no dist/: the SDK imported it
// and the message used to name the SDK as "not installed").
import { describe, expect, it } from "vitest";
import { loadMcpSdk } from "../../src/cli/mcp/server.js";
import { expectCode } from "../helpers/gavel-error.js";

/** An importer that fails every import as node does when a module cannot be found. */
const failing = (message: string, code = "ERR_MODULE_NOT_FOUND") => async () => {
  throw Object.assign(new Error(message), { code });
};

describe("loadMcpSdk", () => {
  it("names a package that is not installed", async () => {
    const err = loadMcpSdk(failing("Cannot find package 'zod' imported from /p/node_modules/gavel-router/dist/cli/gavel.js"));
    await expectCode(err, "DEPENDENCY_MISSING", /^gavel mcp needs zod, an optional peer dependency of gavel-router that is not installed: /);
    const sdk = loadMcpSdk(failing("Cannot find package '@modelcontextprotocol/sdk' imported from /p/x.js"));
    await expect(sdk).rejects.toMatchObject({ message: expect.stringMatching(/^gavel mcp needs @modelcontextprotocol\/sdk, .*not installed/) });
  });

  it("names an installed package whose own file is missing as broken, not as missing", async () => {
    const zod = loadMcpSdk(failing("Cannot find module '/p/node_modules/zod/dist/esm/index.js' imported from /p/node_modules/@modelcontextprotocol/sdk/dist/esm/types.js"));
    await expect(zod).rejects.toMatchObject({
      code: "DEPENDENCY_MISSING",
      message: expect.stringMatching(/^gavel mcp needs zod, an optional peer dependency of gavel-router; the installed one cannot be imported \(Cannot find module '\/p\/node_modules\/zod\/dist\/esm\/index\.js'\): install a release within gavel-router's peer range/),
    });
    const scoped = loadMcpSdk(failing("Cannot find module 'C:\\p\\node_modules\\@modelcontextprotocol\\sdk\\dist\\esm\\server\\mcp.js' imported from C:\\p\\a.js"));
    await expect(scoped).rejects.toMatchObject({ message: expect.stringMatching(/^gavel mcp needs @modelcontextprotocol\/sdk, .*cannot be imported/) });
  });

  it("passes any other failure through", async () => {
    await expect(loadMcpSdk(failing("boom", "EACCES"))).rejects.toThrow(/^boom$/);
  });
});
