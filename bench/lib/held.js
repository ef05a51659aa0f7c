'use strict';
// Bench-side accounting of what a proxy holds per stream, from frozen snapshots of the fake
// upstream's counters, the kernel's TCP queues and the load generator's clients.
/*
 * HELD BYTES PER STREAM: what a proxy keeps in its own (userland) memory for one stream.
 *
 * Measured bench-side, independent of the gateway's own accounting, after freezing the upstream
 * (it stops producing) and the clients (they stop reading), so the numbers are still:
 *
 *   in   = payload the proxy read from its upstream socket
 *        = written − (pending + kernel queues of the upstream link) × written/wire
 *   out  = payload the proxy handed to its client socket
 *        = client payload read + (kernel queues of the client link) × payload/body-wire seen by the client
 *   held = in − out
 *
 * `written`/`wire` come from the fake upstream (payload bytes / the same plus chunk framing that it
 * handed to res.write); "kernel queues" are tx_queue + rx_queue of both ends of each link from
 * /proc/net/tcp. Kernel queues hold WIRE bytes (chunk framing included): with one chunk per
 * ~175 B event the framing is ~4% of a 4 MiB autotuned send queue, ~140 KiB, more than the 64 KiB
 * budget, hence the conversion with payload/wire ratios instead of subtracting wire from payload.
 *
 * A stream is counted only while both of its client-link sockets are in /proc/net/tcp (ESTABLISHED,
 * or FIN_WAIT/CLOSE_WAIT with the proxy's FIN queued behind the data) and the upstream did not see
 * the proxy abort it. The previous version took "open"
 * from the frozen client's own view; but a paused socket (readStop) does not notice a reset, and
 * a reset socket disappears from /proc/net/tcp with its queues discarded. So a stream tidegate had
 * just cut for stalling (it resets the socket) looked open with zero kernel bytes, and everything
 * the upstream wrote counted as "held": the 6.6 MB per stream at 10,000 ev/s in the stability map
 * were the queues the reset threw away (one stalled stream just before its cut: 3.9 MiB gateway
 * send queue + 123 KiB client receive queue + 2.4 MiB upstream send queue + 124 KiB gateway
 * receive queue). strace of the gateway over 20 such streams: socket reads − socket writes = −13 KB
 * in total, i.e. nothing accumulated in userland. Such streams are now "cut (reset)": the client
 * socket is gone from the table, or the final drain reads ECONNRESET. A client socket in
 * CLOSE_WAIT means the proxy closed it with a FIN ("closed").
 *
 * (/proc/<pid>/io rchar − wchar is no cross-check for tidegate: its stall detector reads
 * /proc/net/tcp itself, about 1 MB per read with a few thousand TIME_WAIT sockets on the host.)
 */
/**
 * State of a stream's client link in the frozen snapshot: 'open' (both sockets ESTABLISHED),
 * 'ending' (the proxy has shut down its sending side: FIN queued behind the data, so its socket is
 * in FIN_WAIT and the client's in ESTABLISHED or CLOSE_WAIT; the kernel queues still count),
 * 'reset' (the client's socket is gone from the table: a reset discarded its queues), 'closed'.
 */
function linkState(snap, c, gwPort) {
  if (!gwPort) return 'open';
  const cl = snap.tcp[`${c.localPort}>${gwPort}`];
  const gw = snap.tcp[`${gwPort}>${c.localPort}`];
  if (!cl) return c.ended ? 'closed' : 'reset';
  if (cl.st === '01' && gw && gw.st === '01') return 'open';
  if (cl.st === '01' || cl.st === '08') return 'ending';
  return 'closed';
}

function heldPerStream(stats, snap, gwPort, upstreamPort) {
  const byTag = new Map(stats.streams.map((s) => [s.tag, s]));
  const q = (a, b) => {
    const e = snap.tcp[`${a}>${b}`];
    return e ? e.tx + e.rx : 0;
  };
  const out = [];
  for (const c of snap.clients) {
    const s = byTag.get(c.tag);
    if (!s) continue;
    const kUp = q(s.remotePort, upstreamPort) + q(upstreamPort, s.remotePort);
    const kDown = gwPort ? q(c.localPort, gwPort) + q(gwPort, c.localPort) : 0;
    // The proxy's own sockets only: its send queue towards this client, its receive queue from the upstream.
    const ownDown = gwPort ? q(gwPort, c.localPort) : 0;
    const ownUp = q(s.remotePort, upstreamPort);
    const link = linkState(snap, c, gwPort);
    const rUp = s.wire > 0 ? s.written / s.wire : 1;
    const body = c.rawBytes - (c.headBytes || 0);
    const rDown = body > 0 && c.payloadBytes > 0 ? c.payloadBytes / body : 1;
    const inB = s.written - (s.pending + kUp) * rUp;
    const outB = c.payloadBytes + kDown * rDown;
    // The proxy may have closed its upstream connection a moment before the upstream noticed
    // (a stall cut right before the snapshot): its kernel queues are gone from the table (both
    // sides, or the proxy's side whose receive queue held them), so "written − kernel queues"
    // would count them as held. Such a stream is not open any more.
    const upstreamLink = snap.tcp[`${s.remotePort}>${upstreamPort}`] !== undefined && snap.tcp[`${upstreamPort}>${s.remotePort}`] !== undefined;
    const open = (link === 'open' || link === 'ending') && s.state !== 'aborted' && upstreamLink && !c.failed;
    out.push({ tag: c.tag, mode: c.mode, open, link, upstreamAborted: s.state === 'aborted', produced: s.written, inB, held: open ? Math.max(0, inB - outB) : null, heldRaw: Math.round(inB - outB), kernelUp: kUp, kernelDown: kDown, ownDown, ownUp, received: c.rawBytes });
  }
  return out;
}

/**
 * How a stream ended, from the client's view after the final drain plus the link state in the
 * frozen snapshot: 'error' (an error event arrived), 'done' ([DONE]), 'reset' (cut with a TCP
 * reset: no error event can arrive), 'closed' (ended without [DONE] or an error event), 'open'
 * ('unread' when the proxy had aborted the upstream: ended, but the client has not read that far).
 */
function outcomeOf(c, link) {
  if (c.sawError) return 'error';
  if (c.sawDone) return 'done';
  if (link === 'reset' || (c.status === 200 && /ECONNRESET|EPIPE/.test(String(c.failed || '')))) return 'reset';
  if (c.ended || c.failed || link === 'closed') return 'closed';
  return 'open';
}

function outcomes(clients, held) {
  const byTag = new Map(held.map((x) => [x.tag, x]));
  return clients.map((c) => {
    const h = byTag.get(c.tag);
    let outcome = outcomeOf(c, h && h.link);
    // The proxy closed the upstream but the client has not read its way to the end yet.
    if (outcome === 'open' && h && h.upstreamAborted) outcome = 'unread';
    return { ...c, outcome };
  });
}

module.exports = { heldPerStream, linkState, outcomeOf, outcomes };
