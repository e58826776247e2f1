// Skills for the readers-never-blocked tests (issue 17): each version of a skill has a description
// that names it ("<id> v<version>: …"), so a list of (id, description) pairs names one state of the
// bank exactly. No vitest import here: the writer child uses it too.
import type { SkillInput } from "../../src/index.js";

const TOPICS = [
  "extract tables from pdf reports",
  "write sql queries against the sales database",
  "build and deploy docker images",
  "summarise server logs and find errors",
  "test a rest api with example requests",
  "plot data from csv files",
  "translate user interface strings",
  "review pull requests for style",
  "parse json configuration files",
  "schedule backups of the database",
  "resize and convert images",
  "send email reports to users",
];

/** Version `version` of skill `id`: its text differs from every other version's. */
export function readerSkill(id: string, version: number, topic: number): SkillInput {
  const t = TOPICS[topic % TOPICS.length];
  return {
    id,
    name: id,
    description: `${id} v${version}: ${t}`,
    body: `# ${id}\n\nUse this skill to ${t}. Version ${version}. Steps: read the input, ${t}, check the result.`,
    disableModelInvocation: false,
  };
}

/** A bank state as a reader lists it: sorted "id|description" pairs, joined. */
export function stateOf(list: readonly { id: string; description: string }[]): string {
  return list.map((s) => `${s.id}|${s.description}`).sort().join("\n");
}

/** The tasks the readers route. */
export const READER_TASKS = ["Extract the tables from report.pdf", "Why does the server log show errors?", "Deploy the docker image to staging"];
