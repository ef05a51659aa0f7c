// A gateway process for fleet tests, built from the compiled package (npm test builds it first).
// GET /s streams events from an in-process source that produces on demand (up to CAP bytes per
// stream, so kernel socket buffers stay bounded); GET /stats reports live streams and bytes held.
'use strict';
const path = require('node:path');
const express = require('express');
const { createFlow, sendFlow, ByteBudget } = require(path.join(__dirname, '../../dist/index.js'));

const maxBufferedBytes = Number(process.env.MAX_BUFFERED_BYTES || 65536);
const capBytes = Number(process.env.CAP_BYTES || 4 * 1024 * 1024);
const data = 'x'.repeat(200);
const streams = new Set();
const app = express();
app.get('/s', (_req, res) => {
  let produced = 0;
  const source = createFlow((sink) => {
    sink.onRequest((n) => {
      for (let i = 0; i < n && produced < capBytes; i++) {
        produced += data.length + 8;
        sink.next({ data });
      }
    });
  });
  const budget = new ByteBudget(maxBufferedBytes);
  const entry = { budget, produced: () => produced };
  streams.add(entry);
  sendFlow(res, source, { budget, heartbeatMs: 0, stallTimeoutMs: 0 }).done.then(() => streams.delete(entry));
});
app.get('/stats', (_req, res) => {
  let held = 0;
  let maxPeak = 0;
  let produced = 0;
  for (const s of streams) {
    held += s.budget.used;
    maxPeak = Math.max(maxPeak, s.budget.peak);
    produced += s.produced();
  }
  res.json({ streams: streams.size, held, maxPeak, produced, rss: process.memoryUsage().rss });
});
const server = app.listen(0, '127.0.0.1', () => process.stdout.write(`ready ${server.address().port}\n`));
