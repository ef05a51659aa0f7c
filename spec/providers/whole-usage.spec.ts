import { wholeAnswerUsage } from '../../src/providers/whole-usage';

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
