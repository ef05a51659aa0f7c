import { wholeAnswerUsage } from '../../../src/gateway/relay/whole-usage';

const usageOf = (json: unknown): ReturnType<typeof wholeAnswerUsage> => wholeAnswerUsage(Buffer.from(JSON.stringify(json)));

describe('wholeAnswerUsage', () => {
  it("reads OpenAI's prompt and completion tokens", () => {
    const answer = { id: 'c', choices: [{ message: { role: 'assistant', content: 'hi' } }], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10, prompt_tokens_details: { cached_tokens: 0 } } };
    expect(usageOf(answer)).toEqual({ inputTokens: 7, outputTokens: 3, totalTokens: 10 });
  });

  it("reads Anthropic's and Responses' input and output tokens", () => {
    expect(usageOf({ id: 'm', content: [{ type: 'text', text: 'hi' }], usage: { input_tokens: 5, output_tokens: 2 } })).toEqual({ inputTokens: 5, outputTokens: 2 });
    expect(usageOf({ id: 'r', output: [], usage: { input_tokens: 4, output_tokens: 9, total_tokens: 13, output_tokens_details: { reasoning_tokens: 0 } } })).toEqual({ inputTokens: 4, outputTokens: 9, totalTokens: 13 });
  });

  it('skips a "usage" that the output quotes, and one inside a string of the usage object', () => {
    const answer = { choices: [{ message: { content: 'the "usage": {"prompt_tokens": 999} field' } }], usage: { prompt_tokens: 1, completion_tokens: 2, note: 'a } and a "usage"' } };
    expect(usageOf(answer)).toEqual({ inputTokens: 1, outputTokens: 2 });
  });

  it('reads the usage key before a later "usage" that is a value, not a key', () => {
    const answer = { usage: { input_tokens: 3, output_tokens: 4 }, metadata: { kind: 'usage', note: 'usage' } };
    expect(usageOf(answer)).toEqual({ inputTokens: 3, outputTokens: 4 });
    expect(wholeAnswerUsage(Buffer.from('{"usage" : \n {"prompt_tokens": 2}}'))).toEqual({ inputTokens: 2 });
  });

  it('reads the top-level usage, never one nested in the output, a schema or metadata', () => {
    const nestedAfter = { usage: { prompt_tokens: 3, completion_tokens: 4 }, metadata: { usage: { prompt_tokens: 999, completion_tokens: 999 } } };
    expect(usageOf(nestedAfter)).toEqual({ inputTokens: 3, outputTokens: 4 });
    const schemaAfter = { usage: { input_tokens: 3, output_tokens: 4 }, tools: [{ parameters: { properties: { usage: { type: 'object' } } } }] };
    expect(usageOf(schemaAfter)).toEqual({ inputTokens: 3, outputTokens: 4 });
    const toolInputOnly = { content: [{ type: 'tool_use', input: { usage: { input_tokens: 777, output_tokens: 888 } } }], usage: null };
    expect(usageOf(toolInputOnly)).toBeUndefined();
  });

  it('is undefined when the last top-level usage key, the one JSON.parse keeps, is not an object', () => {
    const twice = '{"usage": {"prompt_tokens": 3}, "id": "x", "usage" : null}';
    expect(JSON.parse(twice)).toMatchObject({ usage: null });
    expect(wholeAnswerUsage(Buffer.from(twice))).toBeUndefined();
    expect(wholeAnswerUsage(Buffer.from('{"usage": {"prompt_tokens": 3}, "note": "usage"}'))).toEqual({ inputTokens: 3 });
  });

  it('skips a key that only ends in "usage" behind an escaped quote', () => {
    const answer = { 'a"usage': { prompt_tokens: 999 }, usage: { prompt_tokens: 2 } };
    expect(usageOf(answer)).toEqual({ inputTokens: 2 });
    expect(usageOf({ 'a"usage': { prompt_tokens: 999 } })).toBeUndefined();
    expect(usageOf({ 'a\\': 1, usage: { prompt_tokens: 5 } })).toEqual({ inputTokens: 5 });
  });

  it('does not parse a usage object larger than 16 KiB', () => {
    const padded = { usage: { prompt_tokens: 3, completion_tokens: 4, pad: 'x'.repeat(16 * 1024) } };
    expect(usageOf(padded)).toBeUndefined();
    const nested = Buffer.from(`{"usage":{"prompt_tokens":${'['.repeat(1 << 20)}${']'.repeat(1 << 20)},"completion_tokens":4}}`);
    expect(wholeAnswerUsage(nested)).toBeUndefined();
  });

  it('reads the usage after megabytes of embeddings', () => {
    const answer = { data: [{ embedding: Array.from({ length: 200_000 }, (_, i) => i / 7) }], usage: { prompt_tokens: 8, total_tokens: 8 } };
    expect(usageOf(answer)).toEqual({ inputTokens: 8, totalTokens: 8 });
  });

  it('is undefined without a usage object of counts, or for bytes that are not JSON', () => {
    expect(usageOf({ id: 'x' })).toBeUndefined();
    expect(usageOf({ usage: null })).toBeUndefined();
    expect(usageOf({ usage: { prompt_tokens: 'many', completion_tokens: -1 } })).toBeUndefined();
    expect(wholeAnswerUsage(Buffer.from('{"usage": {"prompt_tokens": 3'))).toBeUndefined();
    expect(wholeAnswerUsage(Buffer.from('not json "usage" at all'))).toBeUndefined();
    expect(wholeAnswerUsage(Buffer.alloc(0))).toBeUndefined();
  });
});
