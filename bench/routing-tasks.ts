/**
 * The tasks the hostile and long-task benches route over the example skills: the 12 of
 * examples/demo-tasks.json (10 in-domain, 2 off-domain) and 12 more below, one each for example skills
 * the demo tasks do not cover.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** One task for each example skill the demo tasks leave out (written for this bench). */
export const EXTRA: { task: string; expected: string }[] = [
  { task: "Write a shell script that renames every .jpeg file in a folder to .jpg and stops on the first error.", expected: "bash-scripting" },
  { task: "The sidebar and the main column overlap on narrow screens; lay them out side by side with flexbox.", expected: "css-layout" },
  { task: "go build says a module requires a newer version of golang.org/x/net; sort out go.mod and go.sum.", expected: "go-modules" },
  { task: "Write the Deployment and Service manifests to run our API with three replicas and a readiness probe.", expected: "kubernetes-manifests" },
  { task: "Design the REST API spec for a bookings service: paths, request bodies and error responses.", expected: "openapi-design" },
  { task: "Our batch job got twice as slow after the last release; profile it and find the hot function.", expected: "performance-profiling" },
  { task: "Add a non-null column to the users table without locking it for minutes in production.", expected: "postgres-migrations" },
  { task: "Publish our library to PyPI with a pyproject.toml and build a wheel.", expected: "python-packaging" },
  { task: "Split this 600-line React component into smaller ones and move its state into a custom hook.", expected: "react-components" },
  { task: "Write a README for the project: what it does, how to install it and a quick start example.", expected: "readme-writing" },
  { task: "Match dates like 2024-03-07 or 07/03/2024 in log lines and capture day, month and year.", expected: "regex-patterns" },
  { task: "Set up a cargo workspace with two crates that share a dependency version.", expected: "rust-cargo" },
];

/** The 24 tasks: demo tasks first (expected null: off-domain, no skill serves it). */
export function routingTasks(root: string): { task: string; expected: string | null }[] {
  const demo = JSON.parse(readFileSync(join(root, "examples", "demo-tasks.json"), "utf8")) as { task: string; expected: string | null }[];
  return [...demo, ...EXTRA];
}

/**
 * Neutral service log lines (no example skill's domain words beyond what any service log has): the
 * filler the long-task and pasted-task benches wrap a request in.
 */
export function logs(lines: number): string {
  const msgs = ["request handled", "cache refreshed", "worker heartbeat", "session renewed", "queue drained", "config reloaded", "metrics flushed", "connection reused"];
  const out: string[] = [];
  for (let i = 0; i < lines; i++) {
    const s = String(i % 60).padStart(2, "0");
    out.push(`2026-11-26T03:${String(Math.floor(i / 60) % 60).padStart(2, "0")}:${s}Z INFO svc-${i % 7} ${msgs[i % msgs.length]} id=${(i * 7919) % 100000} took=${(i * 37) % 900}ms`);
  }
  return out.join("\n");
}
