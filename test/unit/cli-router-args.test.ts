// The shared router flags are checked before a command reaches a running server, which ignores the
// model's flags: a bad value fails the same way whether a server or the command answers.
import { describe, expect, it } from "vitest";
import { checkRouterArgs } from "../../src/cli/commands/common.js";

describe("checkRouterArgs", () => {
  it("refuses bad numbers and truncate values by flag name, and passes good ones and absent flags", () => {
    expect(() => checkRouterArgs({})).not.toThrow();
    expect(() => checkRouterArgs({ context: "2048", threads: "2", "gpu-layers": "0", "skill-budget": "512", "key-budget": "1536", truncate: "start" })).not.toThrow();
    const bad: [Record<string, string>, RegExp][] = [
      [{ context: "abc" }, /--context/],
      [{ context: "8" }, /--context/],
      [{ threads: "two" }, /--threads/],
      [{ "gpu-layers": "1.5" }, /--gpu-layers/],
      [{ "skill-budget": "" }, /--skill-budget/],
      [{ "key-budget": "-3x" }, /--key-budget/],
      [{ truncate: "middle" }, /--truncate must be "start" or "end", got "middle"/],
    ];
    for (const [values, message] of bad) {
      expect(() => checkRouterArgs(values), JSON.stringify(values)).toThrow(message);
      expect(() => checkRouterArgs(values)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    }
  });
});
