// The resolve hook of hide-mcp-sdk.mjs: @modelcontextprotocol/* fails with Node's own code and message.
export async function resolve(specifier, context, next) {
  if (specifier.startsWith("@modelcontextprotocol/")) {
    const err = new Error(`Cannot find package '${specifier.split("/").slice(0, 2).join("/")}' imported from ${context.parentURL}`);
    err.code = "ERR_MODULE_NOT_FOUND";
    throw err;
  }
  return next(specifier, context);
}
