// Paths compared as each platform's file system compares them (src/util/same-path.ts), the platform
// given explicitly so every case runs on any host: Windows folds case (drive letters too) and takes
// either separator, macOS folds case, Linux does not; "inside" is a real path step, never a name prefix.
import { describe, expect, it } from "vitest";
import { expandHome, isInside, pathInside, samePath } from "../../src/util/same-path.js";
import { hostOfFolder } from "../../src/route/skill-record.js";

describe("samePath", () => {
  it("Windows: drive letter and name case, and the separator, do not count", () => {
    expect(samePath("c:\\proj", "C:\\proj", "win32")).toBe(true);
    expect(samePath("C:\\Users\\Me\\.claude\\skills", "c:/users/me/.claude/skills/", "win32")).toBe(true);
    expect(samePath("C:\\proj", "D:\\proj", "win32")).toBe(false);
    expect(samePath("C:\\proj", "C:\\proj2", "win32")).toBe(false);
  });
  it("macOS folds case; Linux does not; both resolve . and ..", () => {
    expect(samePath("/Users/me/Proj", "/users/me/proj", "darwin")).toBe(true);
    expect(samePath("/home/me/Proj", "/home/me/proj", "linux")).toBe(false);
    expect(samePath("/home/me/proj/./a/..", "/home/me/proj", "linux")).toBe(true);
  });
});

describe("pathInside and isInside", () => {
  it("Windows: inside whatever the case of the drive letter; a sibling sharing a prefix or another drive is outside", () => {
    expect(pathInside("C:\\Users\\me", "c:\\users\\me\\.claude\\skills", "win32")).toBe(".claude\\skills");
    expect(isInside("c:\\proj", "C:\\proj\\.claude\\skills\\a", "win32")).toBe(true);
    expect(isInside("C:\\proj", "C:\\proj2\\x", "win32")).toBe(false);
    expect(isInside("C:\\proj", "D:\\proj\\x", "win32")).toBe(false);
    expect(isInside("C:\\proj", "C:\\proj", "win32")).toBe(false);
    expect(isInside("C:\\", "C:\\proj", "win32")).toBe(true);
  });
  it("POSIX: a real path step, case as the platform has it", () => {
    expect(pathInside("/home/me", "/home/me/.claude/skills", "linux")).toBe(".claude/skills");
    expect(isInside("/home/me", "/home/me2/x", "linux")).toBe(false);
    expect(isInside("/home/me", "/home/me/../other", "linux")).toBe(false);
    expect(isInside("/home/me", "/home/Me/x", "linux")).toBe(false);
    expect(isInside("/Users/me", "/users/ME/x", "darwin")).toBe(true);
    expect(isInside("/", "/etc", "linux")).toBe(true);
    expect(isInside("/home/me", "/home/me", "linux")).toBe(false);
  });
  it("the relative path keeps the case of the path given; the case is folded only to compare", () => {
    expect(pathInside("/Users/me", "/users/ME/Proj/Notes", "darwin")).toBe("Proj/Notes");
    expect(pathInside("C:\\Users\\me", "c:\\users\\me\\.Claude\\Skills", "win32")).toBe(".Claude\\Skills");
    expect(pathInside("C:\\Users\\me", "c:/users/ME/Dev/./X/../Repo", "win32")).toBe("Dev\\Repo");
    expect(pathInside("/home/me", "/home/me/Proj/Notes", "linux")).toBe("Proj/Notes");
  });
});

describe("expandHome", () => {
  it("takes ~/ everywhere and ~\\ on Windows only", () => {
    expect(expandHome("~/.claude/plugins/x", "/home/me", "linux")).toBe("/home/me/.claude/plugins/x");
    expect(expandHome("~", "/home/me", "linux")).toBe("/home/me");
    expect(expandHome("~\\x", "/home/me", "linux")).toBe("~\\x"); // a name on POSIX
    expect(expandHome("~\\.claude\\plugins\\x", "C:\\Users\\me", "win32")).toBe("C:\\Users\\me\\.claude\\plugins\\x");
    expect(expandHome("~/.claude/plugins/x", "C:\\Users\\me", "win32")).toBe("C:\\Users\\me\\.claude\\plugins\\x");
    expect(expandHome("~user/x", "/home/me", "linux")).toBe("~user/x");
    expect(expandHome("/opt/x", "/home/me", "linux")).toBe("/opt/x");
  });
});

describe("hostOfFolder", () => {
  it("knows a host's folder as the platform compares paths: case folded on macOS and Windows, not on Linux", () => {
    expect(hostOfFolder("/Users/me/Proj/.Claude/Skills", "darwin")).toBe("claude-code");
    expect(hostOfFolder("C:\\Proj\\.GITHUB\\skills", "win32")).toBe("github-copilot");
    expect(hostOfFolder("C:/Proj/.agents/skills", "win32")).toBe("agents");
    expect(hostOfFolder("/home/me/.Claude/Skills", "linux")).toBeNull();
    expect(hostOfFolder("/home/me/.codex/skills", "linux")).toBe("codex");
    expect(hostOfFolder("/home/me/x.codex/skills", "darwin")).toBeNull();
    expect(hostOfFolder("/home/me/skills", "darwin")).toBeNull();
  });
});
