import { decodeBody, encodeBody, isUtf8Body } from '../../http/body-charset';
import type { Scrubber } from '../../http/redact';
import { fetchUpstream, type UpstreamBody, type UpstreamRequest } from '../../http/request';
import { TimeoutError } from '../../errors';
import { withRetries } from '../../http/retry';
import { writeWhole } from '../../express/bridge/await-delivery';
import { codeOf } from '../../express/error-shapes';
import type { StreamContext } from './context';
import { errorOutcome } from './outcome';
import { wholeAnswerUsage } from './whole-usage';

/**
 * The `whole` way: one whole upstream answer relayed as it came (status, content type, body),
 * for a client or route that does not stream. The call is retried as the route allows. Resolves
 * once the answer reached the client (or the client was cut, see {@link StreamContext.wholeDelivered}):
 * until then the stream, and its slot, count the answer held for it.
 */
export async function relayWhole(stream: StreamContext, request: UpstreamRequest): Promise<void> {
  const answer = await withRetries(() => stream.attempt(() => fetchUpstream(request)), stream.env.route.retry, stream.retryOptions());
  // Not awaited here: the request and the answer object need not live while the client reads.
  return sendWhole(stream, answer);
}

function sendWhole(stream: StreamContext, answer: UpstreamBody): Promise<void> {
  const { res, env } = stream;
  res.status(answer.status);
  // The answer may echo a credential the gateway sent.
  const { bytes: body, contentType } = stream.redaction === undefined ? { bytes: answer.body, contentType: answer.contentType } : redacted(stream.redaction.keys, answer);
  if (contentType) res.setHeader('Content-Type', contentType);
  // Set here, not by end(): Node leaves it out of a HEAD answer, which must carry the GET's headers.
  res.setHeader('Content-Length', body.length);
  // A HEAD answer's body is dropped by Node, unsent. Any other goes slice by slice, so that a
  // client reading it steadily shows as progress to the stall watch.
  const head = stream.req.method === 'HEAD';
  let handed: (() => number) | undefined;
  if (head) res.end(body);
  else handed = writeWhole(res, body).handed;
  const sent = head ? 0 : body.length;
  env.metrics.bytesOut.inc({ route: env.route.path }, sent);
  const status = answer.status;
  // The log line's token counts, as a stream's are: the answer's own `usage`.
  if (status >= 200 && status < 300 && env.route.provider !== 'passthrough') {
    const usage = wholeAnswerUsage(answer.body);
    if (usage !== undefined) Object.assign(stream.usage, usage);
  }
  return stream.wholeDelivered(handed).then((cut) => {
    if (cut === undefined) return stream.finish('completed', { status, bytes: sent, stream: false });
    stream.finish(errorOutcome(cut), { status, bytes: sent, stream: false, errorCode: codeOf(cut), timeoutKind: cut instanceof TimeoutError ? cut.kind : undefined });
  });
}

/**
 * `answer`'s body with `keys` redacted, and its Content-Type (redacted too): a UTF-8 body is
 * scanned as bytes; one in another charset is read in it, and only a body that had a key is
 * written again ({@link encodeBody}: in UTF-8, and labelled so, where Node cannot write its
 * charset). Either way a key spelt in UTF-16 or UTF-32 is redacted too ({@link Scrubber.wideBytes}):
 * the label may not be the body's charset.
 */
function redacted(keys: Scrubber, answer: UpstreamBody): { bytes: Buffer; contentType: string | undefined } {
  const contentType = answer.contentType === undefined ? undefined : keys.string(answer.contentType);
  if (isUtf8Body(answer.contentType, answer.body)) return { bytes: keys.wideBytes(keys.buffer(answer.body)), contentType };
  const text = decodeBody(answer.body, answer.contentType);
  const scrubbed = keys.string(text);
  if (scrubbed === text) return { bytes: keys.wideBytes(answer.body), contentType };
  const encoded = encodeBody(scrubbed, contentType);
  return { bytes: keys.wideBytes(encoded.bytes), contentType: encoded.contentType };
}
