// The resolve hook of hide-packages.mjs: a hidden package (or a subpath of it) fails with Node's own
// code and message for a package that is not installed.
let hidden = [];

export function initialize(data) {
  hidden = data?.hidden ?? [];
}

export async function resolve(specifier, context, next) {
  const pkg = hidden.find((p) => specifier === p || specifier.startsWith(`${p}/`));
  if (pkg !== undefined) {
    const err = new Error(`Cannot find package '${pkg}' imported from ${context.parentURL}`);
    err.code = "ERR_MODULE_NOT_FOUND";
    throw err;
  }
  return next(specifier, context);
}
