// The resolve hook of fake-packages.mjs: a faked package (or a subpath of it) resolves as if imported
// from a file in the fakes' folder, so Node finds its node_modules/<package> there.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

let faked = [];
let from = "";

export function initialize(data) {
  faked = data?.faked ?? [];
  from = pathToFileURL(join(data?.root ?? "", "index.js")).href;
}

export async function resolve(specifier, context, next) {
  if (faked.some((p) => specifier === p || specifier.startsWith(`${p}/`))) return next(specifier, { ...context, parentURL: from });
  return next(specifier, context);
}
