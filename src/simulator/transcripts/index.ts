import {
  ANTHROPIC_TEXT_TOKENS,
  OPENAI_CHAT_BASIC_TOKENS,
  OPENAI_CHAT_LONG_TOKENS,
  OPENAI_COMPAT_EMOJI_TOKENS,
  OPENAI_RESPONSES_BASIC_TOKENS,
} from './recorded';

/**
 * A recorded answer the simulator replays: the text split into the tokens a model emitted.
 * Each token becomes one content frame (`delta.content` / `text_delta`).
 */
export interface Transcript {
  /** Name a request selects it by (the `model` field or the `x-sim-transcript` header). */
  readonly name: string;
  /** One sentence: what it is and where it comes from. */
  readonly description: string;
  /** The answer, one entry per emitted token; every entry holds whole Unicode characters. */
  readonly tokens: readonly string[];
  /**
   * When true, every frame that holds a multi-byte UTF-8 character is written in two
   * `res.write()` calls, cut inside that character, with `splitDelayMs` between them, so the
   * character straddles two socket writes (and two HTTP chunks).
   */
  readonly splitUtf8?: boolean | undefined;
}

/**
 * The Chinese answer with 4-byte emoji (🌊 U+1F30A, 🚀 U+1F680) and a ZWJ sequence (👩‍💻).
 * Written for this project (no public raw capture with CJK content exists, see
 * recorded/SOURCES.md); tokens are cut the way a BPE tokenizer often cuts CJK: one to three
 * characters, emoji alone or paired.
 */
export const ZH_EMOJI_TOKENS: readonly string[] = [
  '潮汐', '是', '由', '月球', '和', '太阳', '的', '引力', '共同', '作用', '形成', '的', '海水',
  '周期', '性', '涨落', '。', '🌊', '每天', '大约', '出现', '两次', '高潮', '和', '两次',
  '低潮', '，', '间隔', '约', '十二', '小时', '二十五', '分钟', '。', '背压', '（', 'back',
  'pressure', '）', '就像', '潮', '闸', '：', '下游', '来不及', '处理', '时', '，', '上游',
  '就', '要', '暂停', '放水', '，', '等', '水位', '回落', '再', '继续', '。', '🌊🚀', ' ',
  '这样', '数据', '流', '既', '不会', '溢出', '，', '也', '不会', '丢失', '。', '👩‍💻',
];

/** The transcripts every simulator knows, by name. */
export const BUILTIN_TRANSCRIPTS: Readonly<Record<string, Transcript>> = Object.freeze({
  sim: {
    name: 'sim',
    description:
      'Recorded OpenAI-compatible answer (deepseek via Azure, vercel/ai fixture): 337 tokens, 4-byte emoji 🏀🎯🧡💙, ~7 s at 50 tokens/s.',
    tokens: OPENAI_COMPAT_EMOJI_TOKENS,
  },
  'sim-basic': {
    name: 'sim-basic',
    description: 'Recorded gpt-4o answer (openai-python snapshot): 30 ASCII tokens.',
    tokens: OPENAI_CHAT_BASIC_TOKENS,
  },
  'sim-long': {
    name: 'sim-long',
    description: 'Recorded gpt-4o-mini answer (openai-dotnet session record): 858 tokens, raw é and ’.',
    tokens: OPENAI_CHAT_LONG_TOKENS,
  },
  'sim-claude': {
    name: 'sim-claude',
    description: 'Recorded claude-sonnet-4-5 answer (vercel/ai fixture): 6 text deltas.',
    tokens: ANTHROPIC_TEXT_TOKENS,
  },
  'sim-responses': {
    name: 'sim-responses',
    description: 'Recorded gpt-4o-mini Responses answer (openai-dotnet session record): 9 ASCII tokens.',
    tokens: OPENAI_RESPONSES_BASIC_TOKENS,
  },
  'sim-zh': {
    name: 'sim-zh',
    description: 'Short Chinese answer with 🌊🚀 and 👩‍💻; every token holds whole characters.',
    tokens: ZH_EMOJI_TOKENS,
  },
  'sim-zh-split': {
    name: 'sim-zh-split',
    description: 'sim-zh, written so that a multi-byte character straddles two socket writes in every frame that has one.',
    tokens: ZH_EMOJI_TOKENS,
    splitUtf8: true,
  },
});

/** Largest token count `syntheticTranscript` and the `sim-synthetic-<n>` model accept. */
export const MAX_SYNTHETIC_TOKENS = 10_000_000;

/**
 * A generated transcript of `tokenCount` tokens for volume and backpressure tests: token `i`
 * is `" t<i>"`, so the text is deterministic and any gap or reordering is visible.
 * Token strings are produced lazily, so a million-token transcript costs no memory up front.
 *
 * Requested by model name `sim-synthetic-<n>` (e.g. `sim-synthetic-100000`).
 * @param tokenCount number of tokens, an integer in [0, MAX_SYNTHETIC_TOKENS].
 * @throws RangeError when `tokenCount` is out of range or not an integer.
 */
export function syntheticTranscript(tokenCount: number): Transcript {
  if (!Number.isInteger(tokenCount) || tokenCount < 0 || tokenCount > MAX_SYNTHETIC_TOKENS) {
    throw new RangeError(`synthetic token count must be an integer in [0, ${MAX_SYNTHETIC_TOKENS}], got ${tokenCount}`);
  }
  const tokens = new Proxy([] as string[], {
    get(target, prop, receiver) {
      if (prop === 'length') return tokenCount;
      if (typeof prop === 'string' && /^\d+$/.test(prop)) {
        const i = Number(prop);
        return i < tokenCount ? ` t${i}` : undefined;
      }
      if (prop === Symbol.iterator) {
        return function* iterate(): Generator<string> {
          for (let i = 0; i < tokenCount; i++) yield ` t${i}`;
        };
      }
      return Reflect.get(target, prop, receiver) as unknown;
    },
    has(target, prop) {
      if (typeof prop === 'string' && /^\d+$/.test(prop)) return Number(prop) < tokenCount;
      return Reflect.has(target, prop);
    },
  });
  return {
    name: `sim-synthetic-${tokenCount}`,
    description: `${tokenCount} generated tokens " t0 t1 …".`,
    tokens,
  };
}

/** The full text of a transcript (its tokens joined). */
export function transcriptText(transcript: Transcript): string {
  let text = '';
  for (let i = 0; i < transcript.tokens.length; i++) text += transcript.tokens[i];
  return text;
}

/**
 * Resolves a transcript name: a key of `registry`, or `sim-synthetic-<n>`.
 * @returns the transcript, or `undefined` when the name is unknown or `n` is out of range.
 */
export function findTranscript(
  name: string,
  registry: Readonly<Record<string, Transcript>> = BUILTIN_TRANSCRIPTS,
): Transcript | undefined {
  if (Object.prototype.hasOwnProperty.call(registry, name)) return registry[name];
  const m = /^sim-synthetic-(\d{1,8})$/.exec(name);
  if (m) {
    const n = Number(m[1]);
    if (n <= MAX_SYNTHETIC_TOKENS) return syntheticTranscript(n);
  }
  return undefined;
}
