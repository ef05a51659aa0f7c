'use strict';
// Clients of the resume scenario (run inside the load generator): each POSTs a stream, reads its
// events (`id: <streamId>:<seq>`, content numbered `[n=<k>]` by the fake upstream), drops the
// connection after its own random number of events, and once every client has dropped (or
// ended) all resume with `GET /v1/streams/{streamId}` and `Last-Event-ID`, on the first gateway
// or (every other client) the second, then read to the end. Every wait is bounded by spec.maxMs.
const http = require('node:http');
const { performance } = require('node:perf_hooks');

/** Feeds SSE text; calls onEvent({id, data}) per complete event (LF line endings, as tidegate writes). */
function sseReader(onEvent) {
  let buf = '';
  return (chunk) => {
    buf += chunk;
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let id = null;
      let data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('id:')) id = line.slice(3).trim();
        else if (line.startsWith('data:')) data += line.slice(5).trim();
      }
      if (data || id) onEvent({ id, data });
    }
  };
}

class ResumeClient {
  constructor(spec, i) {
    this.spec = spec;
    this.i = i;
    this.tag = `${spec.tagPrefix || 'r'}${i}`;
    this.seqs = [];
    this.lastId = null;
    this.streamId = null;
    this.done = false;
    this.error = null;
    this.dropped = false;
    this.resumed = false;
    this.resumeStatus = 0;
    this.replayMs = null;
    this.req = null;
    this.dropAfter = spec.dropAfterEvents[i];
  }

  onEvent(ev) {
    if (ev.id) this.lastId = ev.id;
    if (ev.data === '[DONE]') this.done = true;
    if (!this.dropped && !this.resumed && this.seqs.length + 1 >= this.dropAfter && /\[n=\d+\]/.test(ev.data)) setImmediate(() => this.drop());
    else if (/"error"/.test(ev.data) && !/\[n=\d+\]/.test(ev.data)) this.error = this.error || ev.data.slice(0, 200);
    const m = /\[n=(\d+)\]/.exec(ev.data);
    if (m) this.seqs.push(Number(m[1]));
  }

  /** The original POST; resolves when its response head arrived (or it failed). */
  start() {
    return new Promise((resolve) => {
      const body = JSON.stringify({ model: 'bench', stream: true, user: this.tag, messages: [{ role: 'user', content: 'bench' }] });
      const req = http.request({ host: '127.0.0.1', port: this.spec.ports[0], path: this.spec.path, method: 'POST', agent: false, headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: 'Bearer bench', 'content-length': Buffer.byteLength(body) } }, (res) => {
        this.streamId = res.headers['x-tidegate-stream-id'] || null;
        res.setEncoding('utf8');
        res.on('data', sseReader((ev) => this.onEvent(ev)));
        res.on('error', () => {});
        resolve();
      });
      req.on('error', (e) => {
        if (!this.dropped) this.error = this.error || e.code || e.message;
        resolve();
      });
      req.end(body);
      this.req = req;
    });
  }

  drop() {
    if (this.done || this.error || this.dropped) return;
    this.dropped = true;
    this.req.destroy();
  }

  /** The resume; resolves when the resumed stream ended (or after the time left). */
  resume(port, timeoutMs) {
    if (!this.dropped || !this.streamId) return Promise.resolve();
    this.resumed = true;
    this.resumePort = port;
    const t0 = performance.now();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.error = this.error || 'resume timed out';
        req.destroy();
        resolve();
      }, timeoutMs);
      const end = () => {
        clearTimeout(timer);
        resolve();
      };
      const headers = { accept: 'text/event-stream', authorization: 'Bearer bench' };
      if (this.lastId) headers['last-event-id'] = this.lastId;
      const req = http.get({ host: '127.0.0.1', port, path: `/v1/streams/${this.streamId}`, agent: false, headers }, (res) => {
        this.resumeStatus = res.statusCode;
        res.setEncoding('utf8');
        const read = sseReader((ev) => {
          if (this.replayMs === null) this.replayMs = performance.now() - t0;
          this.onEvent(ev);
        });
        res.on('data', read);
        res.on('end', end);
        res.on('close', end);
        res.on('error', end);
      });
      req.on('error', (e) => {
        this.error = this.error || `resume: ${e.code || e.message}`;
        end();
      });
    });
  }

  summary() {
    const unique = new Set(this.seqs);
    return { tag: this.tag, streamId: this.streamId, received: this.seqs.length, unique: unique.size, maxSeq: this.seqs.reduce((a, b) => Math.max(a, b), 0), seqsMissingBelowMax: missing(unique), done: this.done, error: this.error, dropped: this.dropped, resumed: this.resumed, resumePort: this.resumePort || null, resumeStatus: this.resumeStatus, replayMs: this.replayMs };
  }
}

function missing(set) {
  let max = 0;
  for (const v of set) max = Math.max(max, v);
  let n = 0;
  for (let k = 1; k <= max; k++) if (!set.has(k)) n++;
  return n;
}

/**
 * Runs spec.streams clients: starts them; each drops after spec.dropAfterEvents[i] events. Once
 * all have dropped or ended (at most spec.maxMs / 2), calls `beforeResume()` (the bench samples
 * the detached gateway then), resumes every dropped client, and waits for all to end (at most
 * spec.maxMs in all).
 */
async function runResume(spec, beforeResume) {
  const t0 = Date.now();
  const clients = Array.from({ length: spec.streams }, (_, i) => new ResumeClient(spec, i));
  await Promise.all(clients.map((c) => c.start()));
  while (Date.now() - t0 < spec.maxMs / 2 && clients.some((c) => !c.dropped && !c.done && !c.error)) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, spec.awayMs || 0));
  await beforeResume();
  const left = Math.max(1000, spec.maxMs - (Date.now() - t0));
  await Promise.all(clients.map((c, i) => c.resume(spec.ports[i % spec.ports.length], left)));
  for (const c of clients) if (c.req) c.req.destroy();
  return clients.map((c) => c.summary());
}

module.exports = { runResume };
