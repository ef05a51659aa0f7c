// Public exports of src/playground (re-exports only).
export { playgroundRouter } from './router';
export type { PlaygroundOptions, PlaygroundRouter } from './router';
export { scenarioSchema, PLAYGROUND_LIMITS } from './scenario';
export type { Scenario, ScenarioInput } from './scenario';
export { planCapacity } from './planner';
export type { CapacityInput, CapacityPlan } from './planner';
export type { RunSample, RunNote, RunState, StageSample } from './run';
