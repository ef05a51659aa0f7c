import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  BUILTIN_TRANSCRIPTS,
  findTranscript,
  MAX_SYNTHETIC_TOKENS,
  syntheticTranscript,
  transcriptText,
} from '../../src/simulator';
import {
  ANTHROPIC_TEXT_TOKENS,
  OPENAI_CHAT_BASIC_TOKENS,
  OPENAI_CHAT_LONG_TOKENS,
  OPENAI_COMPAT_EMOJI_TOKENS,
  OPENAI_RESPONSES_BASIC_TOKENS,
} from '../../src/simulator/transcripts/recorded';

const RECORDED = path.join(__dirname, '../../src/simulator/transcripts/recorded');

function openaiContent(file: string): string[] {
  const out: string[] = [];
  for (const line of fs.readFileSync(path.join(RECORDED, file), 'utf8').split('\n')) {
    if (!line.startsWith('data: {')) continue;
    const j = JSON.parse(line.slice(6)) as { choices?: { delta?: { content?: string | null } }[] };
    const c = j.choices?.[0]?.delta?.content;
    if (typeof c === 'string' && c !== '') out.push(c);
  }
  return out;
}

function anthropicText(file: string): string[] {
  const out: string[] = [];
  for (const line of fs.readFileSync(path.join(RECORDED, file), 'utf8').split('\n')) {
    if (!line.startsWith('data: {')) continue;
    const j = JSON.parse(line.slice(6)) as { type: string; delta?: { type: string; text?: string } };
    if (j.type === 'content_block_delta' && j.delta?.type === 'text_delta' && j.delta.text) out.push(j.delta.text);
  }
  return out;
}

function responsesText(file: string): string[] {
  const out: string[] = [];
  for (const line of fs.readFileSync(path.join(RECORDED, file), 'utf8').split('\n')) {
    if (!line.startsWith('data: {')) continue;
    const j = JSON.parse(line.slice(6)) as { type: string; delta?: string };
    if (j.type === 'response.output_text.delta' && j.delta) out.push(j.delta);
  }
  return out;
}

describe('recorded transcripts', () => {
  it('match the content deltas of the recorded .sse copies', () => {
    expect(OPENAI_CHAT_BASIC_TOKENS).toEqual(openaiContent('openai-chat-basic.sse'));
    expect(OPENAI_COMPAT_EMOJI_TOKENS).toEqual(openaiContent('openai-compat-emoji-reasoning.sse'));
    expect(OPENAI_CHAT_LONG_TOKENS).toEqual(openaiContent('openai-chat-usage.sse'));
    expect(ANTHROPIC_TEXT_TOKENS).toEqual(anthropicText('anthropic-messages-text-recorded.sse'));
    expect(OPENAI_RESPONSES_BASIC_TOKENS).toEqual(responsesText('openai-responses-basic.sse'));
  });

  it('keep the default transcript long enough to stream for several seconds at 50 tokens/s', () => {
    expect(BUILTIN_TRANSCRIPTS.sim.tokens.length).toBeGreaterThanOrEqual(150);
  });
});

describe('sim-zh transcript', () => {
  const text = transcriptText(BUILTIN_TRANSCRIPTS['sim-zh']);

  it('holds Chinese text and 4-byte emoji', () => {
    expect(text).toMatch(/[\u4e00-\u9fff]/);
    expect(text).toContain('🌊');
    expect(text).toContain('🚀');
    expect(Buffer.from('🌊', 'utf8')).toHaveLength(4);
  });

  it('cuts tokens on whole characters only', () => {
    for (const t of BUILTIN_TRANSCRIPTS['sim-zh'].tokens) {
      // A lone surrogate would not survive a UTF-8 round trip.
      expect(Buffer.from(t, 'utf8').toString('utf8')).toBe(t);
    }
  });

  it('is replayed split across writes by sim-zh-split', () => {
    expect(BUILTIN_TRANSCRIPTS['sim-zh-split'].splitUtf8).toBe(true);
    expect(transcriptText(BUILTIN_TRANSCRIPTS['sim-zh-split'])).toBe(text);
  });
});

describe('syntheticTranscript', () => {
  it('yields n numbered tokens', () => {
    const t = syntheticTranscript(3);
    expect(t.tokens.length).toBe(3);
    expect([...t.tokens]).toEqual([' t0', ' t1', ' t2']);
    expect(t.tokens.map((s) => s.trim())).toEqual(['t0', 't1', 't2']);
    expect(transcriptText(t)).toBe(' t0 t1 t2');
  });

  it('rejects counts out of range', () => {
    expect(() => syntheticTranscript(-1)).toThrow(RangeError);
    expect(() => syntheticTranscript(1.5)).toThrow(RangeError);
    expect(() => syntheticTranscript(MAX_SYNTHETIC_TOKENS + 1)).toThrow(RangeError);
  });
});

describe('findTranscript', () => {
  it('resolves built-in names and sim-synthetic-<n>', () => {
    expect(findTranscript('sim-zh')?.name).toBe('sim-zh');
    expect(findTranscript('sim-synthetic-42')?.tokens.length).toBe(42);
  });

  it('returns undefined for unknown names', () => {
    expect(findTranscript('gpt-4o')).toBeUndefined();
    expect(findTranscript('toString')).toBeUndefined();
    expect(findTranscript(`sim-synthetic-${MAX_SYNTHETIC_TOKENS + 1}`)).toBeUndefined();
  });
});
