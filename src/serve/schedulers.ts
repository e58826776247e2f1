/**
 * The resident router's batching of concurrent requests' work (docs/SERVE.md, "Concurrency"), set
 * up and taken down together: forward passes and projections (StatesScheduler), the verdicts' score
 * calls (ScoreScheduler), the glances over the bank (GlanceScheduler).
 *
 * @module
 */
import type { Model } from "../model/Model.js";
import type { Router } from "../route/index.js";
import type { ServeLimits } from "./limits.js";
import { ScoreScheduler, StatesScheduler } from "./states-scheduler.js";
import { GLANCE_BATCH_CELLS, GlanceScheduler } from "./glance-scheduler.js";

/** The schedulers of one server, attached to its model and router. */
export interface Schedulers {
  states: StatesScheduler | null;
  scores: ScoreScheduler | null;
  glances: GlanceScheduler;
  /** Glance calls go direct again (before the router closes). */
  detachGlances(): void;
  /** Model calls go direct again (after the router closed, before the model is disposed). */
  detachModel(): void;
}

export function attachSchedulers(model: Model, router: Router, limits: ServeLimits): Schedulers {
  // the glance passes of concurrent requests decoded together (an addon without the verb: one by one)
  const states = model.batchesStates ? new StatesScheduler(model, { maxBatchTokens: limits.maxBatchTokens, maxBatchTasks: limits.maxBatchTasks }).attach() : null;
  // the verdicts' score calls of concurrent routes merged into one call (its waves pack them)
  const scores = typeof model.routeScores === "function" ? new ScoreScheduler(model, { maxBatchRequests: limits.maxBatchTasks }).attach() : null;
  // the glances of concurrent requests over the bank in one native call (the same g each)
  const glances = new GlanceScheduler(router, { maxBatchCells: GLANCE_BATCH_CELLS, maxBatchTasks: limits.maxBatchTasks }).attach();
  return {
    states,
    scores,
    glances,
    detachGlances: () => glances.detach(),
    detachModel: () => {
      states?.detach();
      scores?.detach();
    },
  };
}
