/**
 * Why the winner won: the task tokens whose glance vote went to it, each with its best similarity
 * m_i(winner) and the winner's token whose key it matched.
 *
 * @module
 */
import type { Model } from "../model/Model.js";
import type { BankEntry } from "../bank/index.js";
import type { Glanced } from "./glance.js";
import type { Vote } from "./types.js";

/**
 * The task tokens whose top-k held the skill in glance column `column`, strongest m first.
 * A token votes for the skill when fewer than k columns beat it (ties to the lower column) and its
 * vote weight is not 0.
 */
export function explainVotes(model: Model, entry: BankEntry, column: number, { q, res, k }: Glanced): Vote[] {
  const n = res.handles.length;
  const votes: Vote[] = [];
  for (let i = 0; i < q.tokens.length; i++) {
    if (q.weights[i] === 0) continue; // a row that does not vote (a live chat's system prompt)
    const row = res.m.subarray(i * n, (i + 1) * n);
    const mine = row[column];
    let ahead = 0;
    for (let s = 0; s < n && ahead < k; s++) if (row[s] > mine || (row[s] === mine && s < column)) ahead++;
    if (ahead >= k) continue;
    const j = res.argmax[i * n + column];
    votes.push({
      position: i,
      token: model.tokenPiece(q.tokens[i]),
      m: mine,
      matched: j >= 0 ? model.tokenPiece(entry.keyTokens[j]) : "",
    });
  }
  return votes.sort((a, b) => b.m - a.m);
}
