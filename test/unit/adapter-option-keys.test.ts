// Every adapter entry point checks its options when it is built, by key as well as by value: a key its
// options type does not have is INVALID_ARGUMENT naming the nearest known key (or, for an option of a
// nested tool's options given at the top level, where it goes), and no router is INVALID_ARGUMENT too.
// Over a stand-in router: nothing here routes.
import { describe, expect, it } from "vitest";
import * as aiSdk from "../../src/adapters/ai-sdk.js";
import * as langchain from "../../src/adapters/langchain.js";
import * as mastra from "../../src/adapters/mastra.js";

const router = { route: async () => ({}), get: async () => ({}), glance: async () => [], list: () => [] } as never;

/** `build` throws INVALID_ARGUMENT with a message matching `message`. */
function refused(build: () => unknown, message: RegExp): void {
  expect(build).toThrow(expect.objectContaining({ name: "GavelError", code: "INVALID_ARGUMENT", message: expect.stringMatching(message) }));
}

describe("adapter options are checked by key", () => {
  it("the search tools refuse an unknown key, with the nearest known one", () => {
    refused(() => aiSdk.gavelSearchSkillsTool(router, { kk: 3 } as never), /^unknown option "kk" in gavelSearchSkillsTool options \(did you mean k\?\); the options are k, description, libraryCut$/);
    refused(() => langchain.gavelSearchSkillsTool(router, { kk: 3 } as never), /^unknown option "kk" in gavelSearchSkillsTool options \(did you mean k\?\); the options are name, k, description, libraryCut$/);
    refused(() => mastra.gavelSkillTools(router, { kk: 3 } as never), /^unknown option "kk" in gavelSkillTools options \(did you mean k\?\); the options are k, libraryCut, maxChars$/);
    refused(() => aiSdk.gavelSearchSkillsTool(router, { librarycut: false } as never), /did you mean libraryCut\?/);
    refused(() => aiSdk.gavelSearchSkillsTool(router, null as never), /^gavelSearchSkillsTool options must be an object$/);
    refused(() => mastra.gavelSkillTools(router, { libraryCut: 1 } as never), /^libraryCut must be a boolean/);
    expect(() => mastra.gavelSkillTools(router, { k: 3, libraryCut: false, maxChars: 100 })).not.toThrow();
    expect(() => langchain.gavelSearchSkillsTool(router, { name: "find", k: 3, description: "d", libraryCut: true })).not.toThrow();
  });

  it("the load tools refuse an unknown key", () => {
    refused(() => aiSdk.gavelLoadSkillTool(router, { maxchars: 10 } as never), /^unknown option "maxchars" in gavelLoadSkillTool options \(did you mean maxChars\?\); the options are maxChars, description$/);
    refused(() => langchain.gavelLoadSkillTool(router, { nmae: "x" } as never), /^unknown option "nmae" in gavelLoadSkillTool options \(did you mean name\?\); the options are name, maxChars, description$/);
    refused(() => langchain.gavelLoadSkillTool(router, null as never), /^gavelLoadSkillTool options must be an object$/);
    expect(() => aiSdk.gavelLoadSkillTool(router, { maxChars: 10, description: "d" })).not.toThrow();
  });

  it("ai-sdk's gavelSkillTools says where a tool's own option goes", () => {
    refused(() => aiSdk.gavelSkillTools(router, { k: 3 } as never), /^unknown option "k" in gavelSkillTools options \(did you mean \{ search: \{ k \} \}\?\); the options are search, loadSkill$/);
    refused(() => aiSdk.gavelSkillTools(router, { description: "d" } as never), /did you mean \{ search: \{ description \} \} or \{ loadSkill: \{ description \} \}\?/);
    refused(() => aiSdk.gavelSkillTools(router, { serch: {} } as never), /^unknown option "serch" in gavelSkillTools options \(did you mean search\?\)/);
    refused(() => aiSdk.gavelSkillTools(router, { search: { kk: 3 } } as never), /^unknown option "kk" in gavelSearchSkillsTool options/);
    refused(() => aiSdk.gavelSkillTools(router, { loadSkill: { kk: 3 } } as never), /^unknown option "kk" in gavelLoadSkillTool options/);
    refused(() => aiSdk.gavelSkills(router, { loadSkill: { maxchars: 3 } } as never), /did you mean maxChars\?/);
    refused(() => aiSdk.gavelSkills(router, null as never), /^gavelSkills options must be an object$/);
    expect(() => aiSdk.gavelSkillTools(router, { search: { k: 3 }, loadSkill: { maxChars: 100 } })).not.toThrow();
  });

  it("the LangChain retriever refuses an unknown key, and takes BaseRetriever's own", () => {
    refused(() => new langchain.GavelSkillRetriever(router, { kk: 3 } as never), /^unknown option "kk" in GavelSkillRetriever options \(did you mean k\?\); the options are k, abstain, verdict, maxChars, callbacks, tags, metadata, verbose$/);
    refused(() => new langchain.GavelSkillRetriever(router, { abstian: false } as never), /did you mean abstain\?/);
    refused(() => new langchain.GavelSkillRetriever(router, { verdict: "no" } as never), /^verdict must be a boolean/);
    refused(() => new langchain.GavelSkillRetriever(router, { k: 0 }), /^k must be a positive integer, got 0$/);
    refused(() => new langchain.GavelSkillRetriever(router, null as never), /^GavelSkillRetriever options must be an object$/);
    refused(() => new langchain.GavelSkillRetriever({} as never), /^GavelSkillRetriever needs a Router/);
    const r = new langchain.GavelSkillRetriever(router, { k: 2, abstain: false, verdict: false, maxChars: 100, tags: ["skills"], metadata: { a: 1 }, verbose: false });
    expect(r.tags).toEqual(["skills"]);
  });

  it("the routed ways refuse an unknown key and no router as well", () => {
    refused(() => aiSdk.gavelPrepareStep(router, { sytem: "x" } as never), /did you mean system\?/);
    refused(() => mastra.gavelSkillProcessor(router, { idd: "x" } as never), /did you mean id\?/);
    refused(() => mastra.gavelSkillProcessor(router, null as never), /^gavel adapter options must be an object$/);
    for (const build of [() => aiSdk.gavelPrepareStep({} as never), () => aiSdk.gavelPrepareStep(null as never), () => mastra.gavelSkillProcessor({} as never), () => langchain.gavelSkillMiddleware({} as never)]) {
      refused(build, /^a gavel adapter needs a Router \(or an object with route\(\) and get\(\)\)$/);
    }
  });
});
