'use strict';
/**
 * SSE parser throughput: tidegate's byte-level `createSseParser` against `eventsource-parser`
 * (v3) fed the same bytes through a streaming `TextDecoder`, on the same chunking.
 *
 *   npm run build && node bench/sse-parser.js [--quick] [--json]
 *
 * `runSseParserBench({ quick })` returns the results as a JSON-serialisable object, for
 * bench/run.js. Throughput is MB/s (10^6 bytes of input per second), best of several rounds.
 */
const { performance } = require('perf_hooks');
const path = require('path');

function loadTidegate() {
  try {
    return require(path.join(__dirname, '..', 'dist', 'sse'));
  } catch (err) {
    throw new Error(`bench/sse-parser: build first (npm run build): ${err.message}`);
  }
}

/** (a) Many small OpenAI chat.completion.chunk events, one token each. */
function openAiStream(targetBytes) {
  const words = ['The', ' quick', ' brown', ' fox', ' jumps', ' over', ' the', ' lazy', ' dog', '.', ' 速', 'い', ' 😀'];
  const parts = [];
  let size = 0;
  for (let i = 0; size < targetBytes; i++) {
    const payload = JSON.stringify({
      id: 'chatcmpl-BENCH0000000000000000000000',
      object: 'chat.completion.chunk',
      created: 1727346180,
      model: 'gpt-4o-2024-08-06',
      system_fingerprint: 'fp_5050236cbd',
      choices: [{ index: 0, delta: { content: words[i % words.length] }, logprobs: null, finish_reason: null }],
    });
    const ev = `data: ${payload}\n\n`;
    parts.push(ev);
    size += Buffer.byteLength(ev);
  }
  parts.push('data: [DONE]\n\n');
  return Buffer.from(parts.join(''), 'utf8');
}

/** (b) Large multi-line events of CJK text (3-byte characters) with id and event fields. */
function cjkStream(targetBytes) {
  const line = '東京の天気は晴れ。気温は二十五度で、湿度は六十パーセントです。明日は雨が降るでしょう。'.repeat(3);
  const parts = [];
  let size = 0;
  for (let i = 0; size < targetBytes; i++) {
    let ev = `id: ${i}\nevent: document\n`;
    for (let l = 0; l < 40; l++) ev += `data: ${l}: ${line}\n`;
    ev += '\n';
    parts.push(ev);
    size += Buffer.byteLength(ev);
  }
  return Buffer.from(parts.join(''), 'utf8');
}

/** Splits into chunks of `size` bytes (copies, like socket reads), boundaries at arbitrary offsets. */
function chunk(buf, size) {
  const out = [];
  for (let i = 0; i < buf.length; i += size) out.push(Buffer.from(buf.subarray(i, Math.min(buf.length, i + size))));
  return out;
}

function runTidegate(tidegate, chunks) {
  let events = 0;
  let chars = 0;
  const parser = tidegate.createSseParser({
    onEvent(e) {
      events++;
      chars += e.data.length;
    },
  });
  for (let i = 0; i < chunks.length; i++) parser.feed(chunks[i]);
  parser.end();
  return events + chars;
}

function runEventsourceParser(createParser, chunks) {
  let events = 0;
  let chars = 0;
  const parser = createParser({
    onEvent(e) {
      events++;
      chars += e.data.length;
    },
  });
  const decoder = new TextDecoder();
  for (let i = 0; i < chunks.length; i++) parser.feed(decoder.decode(chunks[i], { stream: true }));
  const rest = decoder.decode();
  if (rest) parser.feed(rest);
  return events + chars;
}

function measure(fn, bytes, rounds, minMs) {
  let best = Infinity;
  let check;
  for (let r = 0; r < rounds; r++) {
    let iterations = 0;
    const start = performance.now();
    let elapsed = 0;
    do {
      check = fn();
      iterations++;
      elapsed = performance.now() - start;
    } while (elapsed < minMs && iterations < 10000);
    best = Math.min(best, elapsed / iterations);
  }
  return { mbPerSec: Math.round((bytes / 1e6 / (best / 1000)) * 10) / 10, msPerRun: Math.round(best * 1000) / 1000, check };
}

/**
 * Runs every workload and returns `{ name, node, results: [{ workload, bytes, chunkBytes, events,
 * tidegateMBps, eventsourceParserMBps, ratio }] }`; `ratio` > 1 means tidegate is faster.
 */
function runSseParserBench(options = {}) {
  const quick = Boolean(options.quick);
  const tidegate = loadTidegate();
  const { createParser } = require('eventsource-parser');
  const size = quick ? 1_000_000 : 8_000_000;
  const rounds = quick ? 3 : 7;
  const minMs = quick ? 50 : 200;
  const workloads = [
    { workload: 'openai-small-events', data: openAiStream(size), chunkBytes: 16384 },
    { workload: 'openai-small-events', data: openAiStream(size), chunkBytes: 256 },
    { workload: 'cjk-multiline-events', data: cjkStream(size), chunkBytes: 16384 },
  ];
  const results = [];
  for (const w of workloads) {
    const chunks = chunk(w.data, w.chunkBytes);
    // Warm both up and check they agree before timing.
    const a = runTidegate(tidegate, chunks);
    const b = runEventsourceParser(createParser, chunks);
    if (a !== b) throw new Error(`bench/sse-parser: parsers disagree on ${w.workload} (${a} vs ${b})`);
    for (let i = 0; i < 3; i++) {
      runTidegate(tidegate, chunks);
      runEventsourceParser(createParser, chunks);
    }
    let events = 0;
    tidegate.createSseParser({ onEvent: () => events++ }).feed(w.data);
    const ours = measure(() => runTidegate(tidegate, chunks), w.data.length, rounds, minMs);
    const theirs = measure(() => runEventsourceParser(createParser, chunks), w.data.length, rounds, minMs);
    results.push({
      workload: w.workload,
      bytes: w.data.length,
      chunkBytes: w.chunkBytes,
      events,
      tidegateMBps: ours.mbPerSec,
      eventsourceParserMBps: theirs.mbPerSec,
      ratio: Math.round((ours.mbPerSec / theirs.mbPerSec) * 100) / 100,
    });
  }
  return { name: 'sse-parser', node: process.version, quick, results };
}

module.exports = { runSseParserBench };

if (require.main === module) {
  const argv = process.argv.slice(2);
  const report = runSseParserBench({ quick: argv.includes('--quick') });
  if (argv.includes('--json')) console.log(JSON.stringify(report, null, 2));
  else {
    console.log(`sse-parser (node ${report.node}${report.quick ? ', quick' : ''})`);
    console.log('workload               chunk B   events  tidegate MB/s  eventsource-parser MB/s  ratio');
    for (const r of report.results) {
      console.log(
        `${r.workload.padEnd(22)} ${String(r.chunkBytes).padStart(7)} ${String(r.events).padStart(8)} ${String(r.tidegateMBps).padStart(14)} ${String(r.eventsourceParserMBps).padStart(24)} ${String(r.ratio).padStart(6)}`,
      );
    }
  }
}
