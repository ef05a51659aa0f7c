import { waitFor } from '../../harness/net';
import { clientEvents, cutAt, paced, post, useRelayHarness, type RelayHarness, type Step } from '../../harness/relay-harness';

// The Responses adapter's `needsDecode` (its `event:` walk on small frames, its needles on large
// ones) against the event relay on the same upstream bytes: the client's events, the logged
// outcome and the logged usage must match. Every case starts with text, so the byte relay
// consults `needsDecode` on the frames that follow.

/** One Responses event block: `event: <type>` and its JSON (with `type` and `sequence_number`). */
function ev(type: string, seq: number, extra: Record<string, unknown> = {}): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq, ...extra })}\n\n`;
}
const delta = (seq: number, text: string): string => ev('response.output_text.delta', seq, { item_id: 'msg_1', output_index: 0, content_index: 0, delta: text });
const response = (status: string, usage: Record<string, number> | null): Record<string, unknown> => ({ id: 'resp_1', object: 'response', created_at: 1, status, model: 'm', output: [], usage });
const USAGE = { input_tokens: 4, output_tokens: 6, total_tokens: 10 };
const completedJson = (seq: number): string => JSON.stringify({ type: 'response.completed', sequence_number: seq, response: response('completed', USAGE) });

const HEAD = ev('response.created', 0, { response: response('in_progress', null) }) + delta(1, 'a');
/** Enough deltas that a frame holding them is searched with needles rather than walked. */
const MANY = Array.from({ length: 40 }, (_, i) => delta(2 + i, `t${i}`)).join('');
const AFTER = delta(90, 'NOT-RELAYED');

interface Case {
  name: string;
  steps: Step[];
  /** What both relays must log (beyond "the same"). */
  expected: Record<string, unknown>;
}

const completed = { outcome: 'completed', inputTokens: 4, outputTokens: 6 };

const CASES: Case[] = [
  { name: 'event: response.completed ends the stream with its usage', steps: paced([HEAD, delta(2, 'b'), ev('response.completed', 3, { response: response('completed', USAGE) }), AFTER]), expected: completed },
  { name: 'event: response.incomplete ends the stream with its usage', steps: paced([HEAD, ev('response.incomplete', 2, { response: response('incomplete', USAGE) }), AFTER]), expected: completed },
  { name: 'event:response.completed (no space after the colon)', steps: paced([HEAD, `event:response.completed\ndata: ${completedJson(2)}\n\n`, AFTER]), expected: completed },
  { name: 'CRLF line ends', steps: paced([HEAD, `event: response.completed\r\ndata: ${completedJson(2)}\r\n\r\n`, AFTER]), expected: completed },
  { name: 'an event: line cut across reads', steps: paced(cutAt(`${HEAD}event: response.completed\ndata: ${completedJson(2)}\n\n`, HEAD.length + 3, HEAD.length + 15, HEAD.length + 21)), expected: completed },
  { name: 'a data-only terminal block (typed by its JSON)', steps: paced([HEAD, `data: ${completedJson(2)}\n\n`, AFTER]), expected: completed },
  { name: 'event: message, typed by its JSON', steps: paced([HEAD, `event: message\ndata: ${completedJson(2)}\n\n`, AFTER]), expected: completed },
  { name: 'an event line without a colon (empty name: typed by its JSON)', steps: paced([HEAD, `event\ndata: ${completedJson(2)}\n\n`, AFTER]), expected: completed },
  { name: 'a data-only terminal type spelt with a JSON escape', steps: paced([HEAD, `data: ${completedJson(2).replace('response.completed', 'response.c\\u006fmpleted')}\n\n`, AFTER]), expected: completed },
  { name: 'the last of two event: lines names the terminal event', steps: paced([HEAD, `event: response.output_text.delta\nevent: response.completed\ndata: ${completedJson(2)}\n\n`, AFTER]), expected: completed },
  {
    name: 'the last of two event: lines names a delta (not terminal): the stream goes on',
    steps: paced([HEAD, `event: response.completed\nevent: response.output_text.delta\ndata: ${completedJson(2)}\n\n`, delta(3, 'c'), ev('response.completed', 4, { response: response('completed', USAGE) })]),
    expected: completed,
  },
  { name: 'a comment and an id before the event: line', steps: paced([HEAD, `: note\nid: 7\nevent: response.completed\ndata: ${completedJson(2)}\n\n`, AFTER]), expected: completed },
  { name: 'a large frame ending with response.completed (needle search)', steps: paced([HEAD, MANY + ev('response.completed', 50, { response: response('completed', USAGE) }), AFTER]), expected: completed },
  { name: 'a large frame with a data-only terminal block (needle search)', steps: paced([HEAD, MANY + `data: ${completedJson(50)}\n\n`, AFTER]), expected: completed },
  { name: 'a large frame with an escaped terminal type (needle search)', steps: paced([HEAD, MANY + `data: ${completedJson(50).replace('response.completed', 'response.\\u0063ompleted')}\n\n`, AFTER]), expected: completed },
  { name: 'event: error whose data names no error key', steps: paced([HEAD, 'event: error\ndata: {"message":"boom"}\n\n', AFTER]), expected: { outcome: 'upstream_error' } },
  { name: 'event: error whose data names no error key, in a large frame', steps: paced([HEAD, `${MANY}event: error\ndata: {"message":"boom"}\n\n${AFTER}`]), expected: { outcome: 'upstream_error' } },
  { name: 'a data-only error event', steps: paced([HEAD, 'data: {"type":"error","code":"x","message":"boom","param":null}\n\n', AFTER]), expected: { outcome: 'upstream_error' } },
  {
    name: 'event: response.failed',
    steps: paced([HEAD, ev('response.failed', 2, { response: { ...response('failed', null), error: { code: 'server_error', message: 'boom' } } }), AFTER]),
    expected: { outcome: 'upstream_error' },
  },
  { name: 'EOF without a terminal event is a truncation', steps: paced([HEAD, delta(2, 'b'), MANY]), expected: { outcome: 'upstream_reset' } },
];

function bothRelays(upstreamUrl: string): unknown[] {
  return ['bytes', 'events'].map((relay) => ({ path: `/responses-${relay}`, provider: 'openai', api: 'responses', url: `${upstreamUrl}/u`, forwardHeaders: ['content-type', 'x-script'], policy: { relay } }));
}

/** Runs `script` through the byte relay, then the event relay; their log lines and client bodies. */
async function throughBothRelays(h: RelayHarness, script: string) {
  const before = h.logs.streams().length;
  const bytes = await post(`${h.gw.url}/responses-bytes`, { 'x-script': script }, { stream: true, model: 'm', input: 'hi' });
  await waitFor(() => h.logs.streams().length >= before + 1, 5000);
  const events = await post(`${h.gw.url}/responses-events`, { 'x-script': script }, { stream: true, model: 'm', input: 'hi' });
  await waitFor(() => h.logs.streams().length >= before + 2, 5000);
  const [b, e] = h.logs.streams().slice(before);
  return { b, e, bytes, events };
}

describe('Responses needsDecode vs the event relay (terminal events, errors, irregular event lines)', () => {
  const h = useRelayHarness(bothRelays);

  it.each(CASES.map((c, i) => [c.name, i] as const))('%s', async (_name, i) => {
    const c = CASES[i] as Case;
    const script = `resp-${i}`;
    h.up.scripts.set(script, () => c.steps);
    const { b, e, bytes, events } = await throughBothRelays(h, script);
    const pick = (l: Record<string, unknown> | undefined): Record<string, unknown> => ({ outcome: l?.outcome, inputTokens: l?.inputTokens, outputTokens: l?.outputTokens });
    expect(pick(e)).toMatchObject(c.expected);
    expect(pick(b)).toEqual(pick(e));
    const seen = clientEvents(bytes.body);
    expect(seen).toEqual(clientEvents(events.body));
    expect(seen.some((x) => x.data.includes('NOT-RELAYED'))).toBe(false);
  });
});

describe("an upstream error's sequence_number on the Responses route", () => {
  const h = useRelayHarness(bothRelays);
  const failed = ev('response.failed', 7, { response: { ...response('failed', null), error: { code: 'server_error', message: 'boom' } } });

  it.each([
    ['event: error', ev('error', 7, { code: 'server_error', message: 'boom', param: null })],
    ['event: response.failed', failed],
  ])('%s is replaced by error and response.failed numbered on from the last event relayed', async (name, errorEvent) => {
    const script = `resp-seq-${name}`;
    h.up.scripts.set(script, () => paced([HEAD, errorEvent, AFTER]));
    const { bytes, events } = await throughBothRelays(h, script);
    for (const body of [bytes.body, events.body]) {
      const numbered = clientEvents(body).map((x) => [x.event, (JSON.parse(x.data) as { sequence_number: number }).sequence_number]);
      expect(numbered).toEqual([
        ['response.created', 0],
        ['response.output_text.delta', 1],
        ['error', 2],
        ['response.failed', 3],
      ]);
    }
  });
});
