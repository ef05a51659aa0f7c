import { fetchUpstream, type UpstreamBody, type UpstreamRequest } from '../../http/request';
import { TimeoutError } from '../../errors';
import { withRetries } from '../../http/retry';
import { writeWhole } from '../../express/bridge/await-delivery';
import { codeOf } from '../../express/error-shapes';
import type { StreamContext } from './context';
import { errorOutcome } from './outcome';

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
  if (answer.contentType) res.setHeader('Content-Type', answer.contentType);
  // The answer may echo a credential the gateway sent.
  const body = stream.redaction === undefined ? answer.body : stream.redaction.keys.buffer(answer.body);
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
  return stream.wholeDelivered(handed).then((cut) => {
    if (cut === undefined) return stream.finish('completed', { status, bytes: sent, stream: false });
    stream.finish(errorOutcome(cut), { status, bytes: sent, stream: false, errorCode: codeOf(cut), timeoutKind: cut instanceof TimeoutError ? cut.kind : undefined });
  });
}
