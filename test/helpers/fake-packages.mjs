// `node --import ./test/helpers/fake-packages.mjs …` with GAVEL_FAKE_PACKAGES=langchain,ai and
// GAVEL_FAKE_PACKAGES_ROOT=<folder holding node_modules/langchain, node_modules/ai>: those packages
// (and their subpaths) resolve from that folder instead of the installed ones, for import() and
// import.meta.resolve (a resolve hook) and for require() and require.resolve (Module._resolveFilename,
// which Node 20's hooks do not see), to test what a user with another release of a framework sees.
import Module, { register } from "node:module";

const faked = (process.env.GAVEL_FAKE_PACKAGES ?? "").split(",").filter((p) => p !== "");
const root = process.env.GAVEL_FAKE_PACKAGES_ROOT ?? "";
const fakes = (specifier) => faked.some((p) => specifier === p || specifier.startsWith(`${p}/`));

register("./fake-packages-hooks.mjs", import.meta.url, { data: { faked, root } });

const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, parent, isMain, options) {
  if (fakes(request)) return resolveFilename.call(this, request, parent, isMain, { ...options, paths: [root] });
  return resolveFilename.call(this, request, parent, isMain, options);
};
