// `node --import ./test/helpers/hide-mcp-sdk.mjs …`: the process runs as if @modelcontextprotocol/sdk
// were not installed (its imports fail as Node fails a missing package), to test what a user without
// the optional peer dependency sees.
import { register } from "node:module";

register("./hide-mcp-sdk-hooks.mjs", import.meta.url);
