/**
 * Claiming a resident router's socket path: a live server there is BANK_LOCKED, a stale socket is
 * removed, any other file is refused.
 *
 * @module
 */
import { lstat, rm } from "node:fs/promises";
import { connect as netConnect } from "node:net";
import { GavelError, clip } from "../errors.js";

/**
 * Checks that nothing serves `socket` now: a socket that accepts a connection is a live server
 * (BANK_LOCKED); one that refuses it (ECONNREFUSED) is stale and is removed; one whose connection
 * fails otherwise (EAGAIN: a live server's queue of connections is full) is refused too (BANK_LOCKED),
 * never removed; any other file there is refused.
 */
export async function claimSocketPath(socket: string): Promise<void> {
  const st = await lstat(socket).catch(() => null);
  if (!st) return;
  if (!st.isSocket()) throw new GavelError(`${clip(socket)} exists and is not a socket; remove it or pass another --socket`, "INVALID_ARGUMENT");
  const failed = await new Promise<string | null>((resolve) => {
    const s = netConnect(socket);
    const timer = setTimeout(() => (s.destroy(), resolve(null)), 2000); // accepts but never answers: treat as live
    s.once("connect", () => (clearTimeout(timer), s.destroy(), resolve(null)));
    s.once("error", (err: NodeJS.ErrnoException) => (clearTimeout(timer), resolve(err.code ?? "an error")));
  });
  if (failed === "ECONNREFUSED" || failed === "ENOENT") return void (await rm(socket, { force: true }));
  const why = failed === null ? "" : ` (a connection to it failed with ${failed}, not refused: a live server that takes no connection now)`;
  throw new GavelError(`a gavel server is already listening on ${clip(socket)}${why}; stop it first (or pass another --socket)`, "BANK_LOCKED");
}
