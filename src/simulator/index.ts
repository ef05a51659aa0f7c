/**
 * The embedded simulated upstream: an OpenAI / Anthropic compatible streaming server that
 * replays recorded transcripts at a realistic token rate, with fault injection for tests.
 * See {@link createSimulator}; standalone entry: `node dist/simulator/cli.js --port 9090`.
 */
export { createSimulator } from './server';
export type {
  Simulator,
  SimulatorEvents,
  SimulatorOptions,
  SimulatorStats,
  SimRequestOutcome,
  SimRequestRecord,
} from './server';
export { parseFault } from './faults';
export type { SimFault } from './faults';
export {
  BUILTIN_TRANSCRIPTS,
  MAX_SYNTHETIC_TOKENS,
  ZH_EMOJI_TOKENS,
  findTranscript,
  syntheticTranscript,
  transcriptText,
} from './transcripts';
export type { Transcript } from './transcripts';
