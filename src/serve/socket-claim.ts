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
 * (BANK_LOCKED); one that refuses is stale and is removed; any other file there is refused.
 */
export async function claimSocketPath(socket: string): Promise<void> {
  const st = await lstat(socket).catch(() => null);
  if (!st) return;
  if (!st.isSocket()) throw new GavelError(`${clip(socket)} exists and is not a socket; remove it or pass another --socket`, "INVALID_ARGUMENT");
  const live = await new Promise<boolean>((resolve) => {
    const s = netConnect(socket);
    const timer = setTimeout(() => (s.destroy(), resolve(true)), 2000); // accepts but never answers: treat as live
    s.once("connect", () => (clearTimeout(timer), s.destroy(), resolve(true)));
    s.once("error", () => (clearTimeout(timer), resolve(false)));
  });
  if (live) throw new GavelError(`a gavel server is already listening on ${clip(socket)}; stop it first (or pass another --socket)`, "BANK_LOCKED");
  await rm(socket, { force: true });
}
