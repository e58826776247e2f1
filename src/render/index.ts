/** Appendix G renders through the model's own chat template, and generic chat rendering. */
export {
  ChatTemplate,
  CHATML_FALLBACK_TEMPLATE,
  renderChat,
  type ChatMessage,
  type ChatTemplateOptions,
  type RenderChatOptions,
} from "./template.js";
export {
  renderSkill,
  renderTask,
  renderVerdict,
  renderVerdictTail,
  toUtf8Span,
  SKILL_INTRO,
  TASK_LEAD,
  VERDICT_QUESTION,
  type RenderableSkill,
  type SkillRender,
  type SkillSpans,
  type TaskRender,
  type TextSpan,
  type VerdictRender,
  type VerdictTailRender,
} from "./gavel.js";
