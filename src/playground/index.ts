/**
 * `tidegate/playground`: the interactive backpressure playground, an Express router that runs
 * scenarios against the embedded simulator and streams their telemetry. See {@link playgroundRouter}.
 */
export { playgroundRouter } from './router';
export type { PlaygroundOptions, PlaygroundRouter } from './router';
export { scenarioSchema, PLAYGROUND_LIMITS } from './scenario';
export type { Scenario, ScenarioInput } from './scenario';
export { planCapacity } from './planner';
export type { CapacityInput, CapacityPlan } from './planner';
export type { RunSample, RunNote, RunState, StageSample } from './run';
