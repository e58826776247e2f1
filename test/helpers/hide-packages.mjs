// `node --import ./test/helpers/hide-packages.mjs …` with GAVEL_HIDE_PACKAGES=ai,zod: the process runs
// as if those packages were not installed, for import() (a resolve hook, as hide-mcp-sdk.mjs) and for
// require() (Module._resolveFilename, which Node 20's hooks do not see), each failing with Node's own
// code and message, to test what a user without a framework's optional peer dependency sees.
import Module, { register } from "node:module";

const hidden = (process.env.GAVEL_HIDE_PACKAGES ?? "").split(",").filter((p) => p !== "");
const hides = (specifier) => hidden.some((p) => specifier === p || specifier.startsWith(`${p}/`));

register("./hide-packages-hooks.mjs", import.meta.url, { data: { hidden } });

const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, parent, ...rest) {
  if (hides(request)) {
    const err = new Error(`Cannot find module '${request}'\nRequire stack:\n- ${parent?.filename ?? "<unknown>"}`);
    err.code = "MODULE_NOT_FOUND";
    throw err;
  }
  return resolveFilename.call(this, request, parent, ...rest);
};
