// The gateway processes the specs spawn start without warm-up: each would otherwise relay 2,000
// streams (3-4 s of CPU) before it listens, and a spec that starts a gateway to test something
// else would wait on it. The warm-up has its own specs (spec/gateway/warmup.spec.ts, and
// spec/gateway/cli.spec.ts for the command's default), which unset this. Run the suite with
// TIDEGATE_WARMUP_STREAMS set to test every spawned gateway warmed.
process.env.TIDEGATE_WARMUP_STREAMS ??= '0';
