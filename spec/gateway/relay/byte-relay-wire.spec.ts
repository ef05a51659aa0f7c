import { hasAsciiEscape } from '../../../src/providers/wire';
import { waitFor } from '../../harness/net';
import { clientEvents, cutAt, oaChunk, paced, post, rng, useRelayHarness, type RelayHarness, type Step } from '../../harness/relay-harness';

// The byte relay's `needsDecode` scans (openai/anthropic, `hasAsciiEscape`)
// against the event relay on the same upstream bytes: the client's events, the logged outcome and
// the logged usage must match.

const ROLE = oaChunk(null);
const DONE = 'data: [DONE]\n\n';

const ANTHROPIC_HEAD =
  'event: message_start\ndata: {"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":9,"output_tokens":1}}}\n\n' +
  'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n';
const aDelta = (t: string): string => `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: t } })}\n\n`;

interface Case {
  name: string;
  provider: 'openai' | 'anthropic';
  steps: Step[];
  /** What both relays must log (beyond "the same"). */
  expected: Record<string, unknown>;
}

const usageTail = (usageJson: string): string => `data: {"id":"c1","choices":[],${usageJson}}\n\n`;

const CASES: Case[] = [
  {
    name: 'openai "\\u0075sage" (lowercase hex) is usage',
    provider: 'openai',
    steps: paced([ROLE + oaChunk('a'), usageTail('"\\u0075sage":{"prompt_tokens":3,"completion_tokens":2}'), DONE]),
    expected: { outcome: 'completed', inputTokens: 3, outputTokens: 2 },
  },
  {
    name: 'openai "us\\u0061ge" with an uppercase-hex escape of a letter ("\\u006F" style) is usage',
    provider: 'openai',
    steps: paced([ROLE + oaChunk('a'), usageTail('"us\\u0061ge":{"pr\\u006Fmpt_tokens":3,"completion_tokens":2}'), DONE]),
    expected: { outcome: 'completed', inputTokens: 3, outputTokens: 2 },
  },
  {
    name: 'openai "\\u0075sage" cut across reads at every byte of the escape',
    provider: 'openai',
    steps: paced(cutAt(ROLE + usageTail('"\\u0075sage":{"prompt_tokens":5,"completion_tokens":6}') + DONE, ROLE.length + 24, ROLE.length + 25, ROLE.length + 26, ROLE.length + 27, ROLE.length + 28)),
    expected: { outcome: 'completed', inputTokens: 5, outputTokens: 6 },
  },
  {
    name: 'openai escaped-backslash "\\\\u0075sage" is not usage (a harmless false positive on the byte relay)',
    provider: 'openai',
    steps: [ROLE + oaChunk('a') + usageTail('"\\\\u0075sage":{"prompt_tokens":3,"completion_tokens":2}') + DONE],
    expected: { outcome: 'completed', inputTokens: undefined, outputTokens: undefined },
  },
  {
    name: 'openai "\\u0065rror" mid-stream error ends the stream as an upstream error',
    provider: 'openai',
    steps: paced([ROLE + oaChunk('a'), 'data: {"\\u0065rror":{"message":"escboom","type":"server_error","code":null}}\n\n', oaChunk('b'), DONE]),
    expected: { outcome: 'upstream_error' },
  },
  {
    // Multi-line data: the event's data is `{"usage":\n{...}}`, valid JSON (RFC 8259 whitespace
    // includes LF), so the event relay logs the usage. The byte relay's `hasUsageObject` must skip
    // the line break and `data: ` prefix after the colon too, or the frame is relayed unseen and
    // the usage is lost.
    name: 'openai usage whose object starts on the next data line (multi-line data) is usage',
    provider: 'openai',
    steps: paced([ROLE + oaChunk('a'), 'data: {"id":"c1","choices":[],"usage":\ndata: {"prompt_tokens":7,"completion_tokens":8}}\n\n', DONE]),
    expected: { outcome: 'completed', inputTokens: 7, outputTokens: 8 },
  },
  {
    name: 'openai usage key followed by a line break before the colon (multi-line data) is usage',
    provider: 'openai',
    steps: paced([ROLE + oaChunk('a'), 'data: {"id":"c1","choices":[],"usage"\ndata: :{"prompt_tokens":7,"completion_tokens":8}}\n\n', DONE]),
    expected: { outcome: 'completed', inputTokens: 7, outputTokens: 8 },
  },
  {
    name: 'anthropic data-only "m\\u0065ssage_stop" ends the stream at its terminator',
    provider: 'anthropic',
    steps: paced([ANTHROPIC_HEAD + aDelta('a'), 'data: {"type":"m\\u0065ssage_stop"}\n\n', aDelta('NOT-RELAYED')]),
    expected: { outcome: 'completed', inputTokens: 9 },
  },
  {
    name: 'anthropic data-only message_delta with "\\u0075sage" spelt by escapes',
    provider: 'anthropic',
    steps: paced([ANTHROPIC_HEAD + aDelta('a'), 'data: {"type":"m\\u0065ssage_delta","delta":{"stop_reason":"end_turn"},"\\u0075sage":{"output_tokens":12}}\n\n', 'data: {"type":"message_stop"}\n\n']),
    expected: { outcome: 'completed', inputTokens: 9, outputTokens: 12 },
  },
];

/** An OpenAI and an Anthropic route per relay (`/openai-bytes`, `/openai-events`, ...) on the scripted upstream. */
function bothRelays(upstreamUrl: string): unknown[] {
  const routes: unknown[] = [];
  for (const relay of ['bytes', 'events']) {
    const policy = { relay };
    const forwardHeaders = ['content-type', 'x-script'];
    routes.push({ path: `/openai-${relay}`, provider: 'openai', url: `${upstreamUrl}/u`, forwardHeaders, policy });
    routes.push({ path: `/anthropic-${relay}`, provider: 'anthropic', url: `${upstreamUrl}/u`, forwardHeaders, policy });
  }
  return routes;
}

/** Runs `script` through the byte relay, then the event relay; their log lines and client bodies. */
async function throughBothRelays(h: RelayHarness, provider: string, script: string) {
  const before = h.logs.streams().length;
  const bytes = await post(`${h.gw.url}/${provider}-bytes`, { 'x-script': script });
  await waitFor(() => h.logs.streams().length >= before + 1, 5000);
  const events = await post(`${h.gw.url}/${provider}-events`, { 'x-script': script });
  await waitFor(() => h.logs.streams().length >= before + 2, 5000);
  const [b, e] = h.logs.streams().slice(before);
  return { b, e, bytes, events };
}

describe('needsDecode scans vs the event relay (usage, errors, terminators spelt with escapes or line breaks)', () => {
  const h = useRelayHarness(bothRelays);

  it.each(CASES.map((c, i) => [c.name, i] as const))('%s', async (_name, i) => {
    const c = CASES[i] as Case;
    const script = `r9-${i}`;
    h.up.scripts.set(script, () => c.steps);
    const { b, e, bytes, events } = await throughBothRelays(h, c.provider, script);
    const pick = (l: Record<string, unknown> | undefined): Record<string, unknown> => ({ outcome: l?.outcome, inputTokens: l?.inputTokens, outputTokens: l?.outputTokens });
    expect(pick(e)).toMatchObject(c.expected);
    expect(pick(b)).toEqual(pick(e));
    expect(clientEvents(bytes.body)).toEqual(clientEvents(events.body));
  });
});

describe('hasAsciiEscape', () => {
  it('counts \\u0020-\\u007f with either hex case, not control or CJK escapes', () => {
    expect(hasAsciiEscape(Buffer.from('"\\u0075"'))).toBe(true);
    expect(hasAsciiEscape(Buffer.from('"\\u007A"'))).toBe(true);
    expect(hasAsciiEscape(Buffer.from('"\\u007a"'))).toBe(true);
    expect(hasAsciiEscape(Buffer.from('"\\u0055"'))).toBe(true);
    expect(hasAsciiEscape(Buffer.from('"\\u001b\\u4f60\\u00e9"'))).toBe(false);
    expect(hasAsciiEscape(Buffer.from('"\\u00'))).toBe(false);
  });
});

/** `s` with each ASCII letter of `word` escaped as `\u00XX` at random (random hex case). */
function escapeSome(json: string, word: string, rand: () => number): string {
  const spelt = [...word].map((ch) => {
    if (rand() < 0.4) return ch;
    const hex = ch.charCodeAt(0).toString(16).padStart(4, '0');
    return `\\u${rand() < 0.5 ? hex : hex.toUpperCase()}`;
  });
  return json.split(`"${word}"`).join(`"${spelt.join('')}"`);
}

describe('random escapes of usage/error keys and random reads, byte relay vs event relay', () => {
  const h = useRelayHarness(bothRelays);

  it('30 seeded streams: same client events, outcome and usage on both relays', async () => {
    const rand = rng(909);
    for (let n = 0; n < 30; n++) {
      const withError = rand() < 0.3;
      const usage = `data: ${escapeSome(JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: n + 1, completion_tokens: 2 * n + 1, total_tokens: 3 * n + 2 } }), 'usage', rand)}\n\n`;
      const error = `data: ${escapeSome(JSON.stringify({ error: { message: `e${n}`, type: 'server_error', code: null } }), 'error', rand)}\n\n`;
      const text = ROLE + oaChunk('a') + oaChunk(`b${n}`) + (withError ? error + oaChunk('NOT') : usage) + DONE;
      // Reads cut at random offsets, always one cut right before and after the usage/error frame.
      const at = text.indexOf(withError ? error : usage);
      const cuts = [at, at + (withError ? error : usage).length, ...Array.from({ length: 3 }, () => Math.floor(rand() * text.length))].sort((x, y) => x - y);
      const script = `fuzz-${n}`;
      h.up.scripts.set(script, () => paced(cutAt(text, ...cuts), 2));
      const { b, e, bytes, events } = await throughBothRelays(h, 'openai', script);
      const pick = (l: Record<string, unknown> | undefined): Record<string, unknown> => ({ n, outcome: l?.outcome, inputTokens: l?.inputTokens, outputTokens: l?.outputTokens });
      expect(pick(e)).toEqual(withError ? { n, outcome: 'upstream_error', inputTokens: undefined, outputTokens: undefined } : { n, outcome: 'completed', inputTokens: n + 1, outputTokens: 2 * n + 1 });
      expect(pick(b)).toEqual(pick(e));
      expect(clientEvents(bytes.body)).toEqual(clientEvents(events.body));
    }
  });
});
