import type { RunningGateway } from '../../../src/gateway/server';
import type { CaptureTransport } from '../helpers';
import { waitFor } from '../../harness/net';
import { clientEvents, cutAt, oaChunk, paced, post, scriptedUpstream, testGateway, type ClientEvent, type ScriptedUpstream, type Step } from '../../harness/relay-harness';

// relay: bytes must give a WHATWG client the same events (and the same end) as
// relay: events, whatever the upstream's chunking, line ends and layout of its end frames.

const CONTENT = ['Hel', 'lo', ' wor', 'ld'].map((t) => oaChunk(t)).join('');
const ROLE = oaChunk(null);
const USAGE = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 11, completion_tokens: 4, total_tokens: 15 } })}\n\n`;
const DONE = 'data: [DONE]\n\n';
const AFTER = oaChunk('NOT-RELAYED-AFTER-DONE');

const ANTHROPIC_HEAD =
  'event: message_start\ndata: {"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":9,"output_tokens":1}}}\n\n' +
  'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n';
const aDelta = (t: string): string => `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: t } })}\n\n`;
const ANTHROPIC_TAIL =
  'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n' +
  'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}\n\n' +
  'event: message_stop\ndata: {"type":"message_stop"}\n\n';

/** Every cut of `text` in [from, to): one script per offset, so a boundary falls at each byte of the end frame. */
function everyCut(text: string, from: number, to: number): Step[][] {
  const out: Step[][] = [];
  for (let at = from; at < to; at++) out.push(paced(cutAt(text, at)));
  return out;
}

interface Case {
  name: string;
  provider: 'openai' | 'anthropic' | 'pt' | 'ptend' | 'ptlines';
  steps: Step[];
  /** What the bytes relay's client must see beyond "same as relay: events". */
  check?: (events: ClientEvent[], body: string) => void;
}

const withCrlf = (s: string): string => s.replace(/\n/g, '\r\n');

const CASES: Case[] = [
  ...everyCut(ROLE + CONTENT + USAGE + DONE + AFTER, (ROLE + CONTENT + USAGE).length - 20, (ROLE + CONTENT + USAGE + DONE).length + 1).map(
    (steps, i): Case => ({ name: `openai [DONE]/usage cut at byte ${i}`, provider: 'openai', steps, check: (ev) => expect(ev.some((e) => e.data.includes('NOT-RELAYED'))).toBe(false) }),
  ),
  ...everyCut(withCrlf(ROLE + CONTENT + DONE), withCrlf(ROLE + CONTENT).length - 2, withCrlf(ROLE + CONTENT + DONE).length).map(
    (steps, i): Case => ({ name: `openai CRLF [DONE] cut at byte ${i}`, provider: 'openai', steps }),
  ),
  {
    name: 'openai error frame with spaces inside a frame between content events',
    provider: 'openai',
    steps: [ROLE + oaChunk('a') + 'data: {"error" : {"message":"boom","type":"server_error","code":"x1"}}\n\n' + oaChunk('b') + DONE],
    check: (ev) => {
      expect(ev.map((e) => e.data).join('|')).toContain('boom');
      expect(ev.some((e) => e.data.includes('"content":"b"'))).toBe(false);
    },
  },
  {
    name: 'openai error frame split across three reads after text',
    provider: 'openai',
    steps: paced([ROLE + oaChunk('a') + 'data: {"er', 'ror":{"message":"late boom","type":"server_error","code":null}', '}\n\n' + DONE]),
    check: (ev) => expect(ev.map((e) => e.data).join('|')).toContain('late boom'),
  },
  {
    name: 'openai "error" inside content text (escaped) is content',
    provider: 'openai',
    steps: [ROLE + oaChunk('a') + oaChunk('the "error": {"message":"x"} is text') + oaChunk('rror"') + DONE],
    check: (ev) => expect(ev[ev.length - 1]?.data).toBe('[DONE]'),
  },
  {
    name: 'openai comment and id before [DONE] in the same block',
    provider: 'openai',
    steps: paced([ROLE + oaChunk('a'), ': keep-alive\nid: 5\n', 'data: [DONE]\n\n', AFTER]),
    check: (ev) => expect(ev[ev.length - 1]).toEqual({ event: 'message', data: '[DONE]', lastEventId: '5' }),
  },
  {
    name: 'openai usage with spaces around the colon, after text',
    provider: 'openai',
    steps: [ROLE + oaChunk('a') + 'data: {"id":"c1","choices":[],"usage" :  {"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\n' + DONE],
  },
  {
    name: 'openai invalid UTF-8 and a 4-byte character split across reads',
    provider: 'openai',
    steps: paced([ROLE + oaChunk('a'), Buffer.concat([Buffer.from(oaChunk('x😀y').slice(0, 70)), Buffer.from('😀').subarray(0, 2)]), Buffer.concat([Buffer.from('😀').subarray(2), Buffer.from([0xff, 0xfe]), Buffer.from(oaChunk('x😀y').slice(70))]), DONE]),
  },
  {
    name: 'openai BOM split across the first two reads',
    provider: 'openai',
    steps: paced([Buffer.from([0xef]), Buffer.concat([Buffer.from([0xbb, 0xbf]), Buffer.from(ROLE + oaChunk('a') + DONE)])]),
    check: (ev) => expect(ev.length).toBe(3),
  },
  {
    name: 'openai EOF without [DONE] is a truncation on both relays',
    provider: 'openai',
    steps: [ROLE + oaChunk('a') + 'data: [DO'],
    check: (ev) => expect(ev[ev.length - 1]?.data).toContain('ERR_TIDEGATE_UPSTREAM_TRUNCATED'),
  },
  {
    name: 'anthropic event:error (no space) after text, in one frame with text after it',
    provider: 'anthropic',
    steps: [ANTHROPIC_HEAD + aDelta('a') + 'event:error\ndata:{"type":"error","error":{"type":"overloaded_error","message":"busy"}}\n\n' + aDelta('b') + ANTHROPIC_TAIL],
    check: (ev) => {
      expect(ev[ev.length - 1]?.event).toBe('error');
      expect(ev[ev.length - 1]?.data).toContain('busy');
      expect(ev.some((e) => e.data.includes('"text":"b"'))).toBe(false);
    },
  },
  ...everyCut(ANTHROPIC_HEAD + aDelta('a') + ANTHROPIC_TAIL, (ANTHROPIC_HEAD + aDelta('a') + ANTHROPIC_TAIL).length - 60, (ANTHROPIC_HEAD + aDelta('a') + ANTHROPIC_TAIL).length).map(
    (steps, i): Case => ({ name: `anthropic message_stop cut at byte ${i}`, provider: 'anthropic', steps }),
  ),
  {
    name: 'anthropic data-only error (type in the JSON, no event line) after text',
    provider: 'anthropic',
    steps: [ANTHROPIC_HEAD + aDelta('a') + 'data: {"type":"error","error":{"type":"api_error","message":"dataonly"}}\n\n' + ANTHROPIC_TAIL],
    check: (ev) => expect(ev[ev.length - 1]?.data).toContain('dataonly'),
  },
  {
    name: 'passthrough with a terminator: the terminator cut across reads, events after it dropped',
    provider: 'ptend',
    steps: paced(['data: one\n\ndata: two\n\nev', 'ent: end\ndata: b', 'ye\n\ndata: three\n\n']),
    check: (ev) => expect(ev.map((e) => e.data)).toEqual(['one', 'two', 'bye']),
  },
  {
    name: 'passthrough with a terminator: a lookalike (right event, other data) is not the end',
    provider: 'ptend',
    steps: ['data: one\n\nevent: end\ndata: not yet\n\ndata: two\n\nevent: end\ndata: bye\n\n'],
    check: (ev) => expect(ev.map((e) => e.data)).toEqual(['one', 'not yet', 'two', 'bye']),
  },
  {
    name: 'passthrough with a terminator: EOF without it is a truncation',
    provider: 'ptend',
    steps: ['data: one\n\ndata: two\n\n'],
    check: (ev) => expect(ev[ev.length - 1]?.data).toContain('ERR_TIDEGATE_UPSTREAM_TRUNCATED'),
  },
  {
    name: 'passthrough with a terminator whose data has two lines: its frame, one data line each, is the end',
    provider: 'ptlines',
    steps: paced(['data: one\n\ndata: la', 'st\ndata: line\n\ndata: after\n\n']),
    check: (ev) => expect(ev.map((e) => e.data)).toEqual(['one', 'last\nline']),
  },
  {
    name: 'passthrough without a terminator: ids kept across skipped frames',
    provider: 'pt',
    steps: paced(['id: 1\ndata: a\n\n', 'data: b\n\nid: 2\ndata: c\n\n', 'data: d\n\n']),
    check: (ev) => expect(ev.map((e) => e.lastEventId)).toEqual(['1', '1', '2', '2']),
  },
];

describe('relay: bytes gives a client what relay: events gives it', () => {
  let up: ScriptedUpstream;
  let gw: RunningGateway;
  let logs: CaptureTransport;

  beforeAll(async () => {
    up = await scriptedUpstream();
    const routes: unknown[] = [];
    for (const relay of ['bytes', 'events']) {
      const policy = { relay };
      const forwardHeaders = ['content-type', 'x-script'];
      routes.push({ path: `/openai-${relay}`, provider: 'openai', url: `${up.url}/u`, forwardHeaders, policy });
      routes.push({ path: `/anthropic-${relay}`, provider: 'anthropic', url: `${up.url}/u`, forwardHeaders, policy });
      routes.push({ path: `/pt-${relay}`, provider: 'passthrough', methods: ['POST'], url: `${up.url}/u`, forwardHeaders, policy });
      routes.push({ path: `/ptend-${relay}`, provider: 'passthrough', methods: ['POST'], url: `${up.url}/u`, forwardHeaders, policy, terminator: { event: 'end', data: 'bye' } });
      routes.push({ path: `/ptlines-${relay}`, provider: 'passthrough', methods: ['POST'], url: `${up.url}/u`, forwardHeaders, policy, terminator: { data: 'last\nline' } });
    }
    ({ gw, logs } = await testGateway(up.url, routes, { heartbeatMs: 0 }));
  });
  afterAll(async () => {
    await gw.close();
    await up.close();
  });

  it.each(CASES.map((c, i) => [c.name, i] as const))('%s', async (_name, i) => {
    const c = CASES[i] as Case;
    const script = `case-${i}`;
    up.scripts.set(script, () => c.steps);
    const bytes = await post(`${gw.url}/${c.provider}-bytes`, { 'x-script': script });
    const events = await post(`${gw.url}/${c.provider}-events`, { 'x-script': script });
    expect(bytes.status).toBe(200);
    expect(events.status).toBe(200);
    const got = clientEvents(bytes.body);
    expect(got).toEqual(clientEvents(events.body));
    c.check?.(got, bytes.body.toString());
  });

  it('logs the same outcome and usage for both relays (usage chunk after text, split mid-key)', async () => {
    const text = ROLE + oaChunk('a') + oaChunk('b') + USAGE + DONE;
    const at = text.indexOf('"usage"') + 3;
    up.scripts.set('usage-split', () => paced(cutAt(text, at)));
    const before = logs.streams().length;
    await post(`${gw.url}/openai-bytes`, { 'x-script': 'usage-split' });
    await post(`${gw.url}/openai-events`, { 'x-script': 'usage-split' });
    await waitFor(() => logs.streams().length >= before + 2, 5000);
    const [b, e] = logs.streams().slice(before);
    expect(b).toMatchObject({ outcome: 'completed', inputTokens: 11, outputTokens: 4 });
    expect(e).toMatchObject({ outcome: 'completed', inputTokens: 11, outputTokens: 4 });
  });
});
