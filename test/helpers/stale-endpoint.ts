// The `serve.http.json` a `gavel serve --port` leaves when it is killed (kill -9: the file is removed
// only at a clean shutdown): its URL names a port nothing listens on, its pid a process that is gone.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

/** A localhost port that was free a moment ago and is closed now (connections to it are refused). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The pid of a process that has exited (a child run to its end). */
export async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((resolve) => child.on("close", resolve));
  return child.pid!;
}

/**
 * Writes `<bank>/serve.http.json` as a killed server leaves it (mode 0600): a closed port and, unless
 * `pid` is given, the pid of a process that is gone. Its path and contents.
 */
export async function writeStaleEndpoint(bank: string, pid?: number): Promise<{ file: string; text: string; url: string }> {
  const url = `http://127.0.0.1:${await closedPort()}`;
  const text = JSON.stringify({ v: 1, url, token: "5".repeat(64), pid: pid ?? (await deadPid()) }) + "\n";
  const file = join(bank, "serve.http.json");
  writeFileSync(file, text, { mode: 0o600 });
  return { file, text, url };
}
