import { fetchUpstream, type UpstreamRequest } from '../../http/request';
import { withRetries } from '../../http/retry';
import type { StreamContext } from './context';

/**
 * The `whole` way: one whole upstream answer relayed as it came (status, content type, body),
 * for a client or route that does not stream. The call is retried as the route allows.
 */
export async function relayWhole(stream: StreamContext, request: UpstreamRequest): Promise<void> {
  const { res, env } = stream;
  const answer = await withRetries(() => stream.attempt(() => fetchUpstream(request)), env.route.retry, stream.retryOptions());
  res.status(answer.status);
  if (answer.contentType) res.setHeader('Content-Type', answer.contentType);
  // The answer may echo a credential the gateway sent.
  const body = stream.redaction === undefined ? answer.body : stream.redaction.keys.buffer(answer.body);
  // Set here, not by end(): Node leaves it out of a HEAD answer, which must carry the GET's headers.
  res.setHeader('Content-Length', body.length);
  res.end(body);
  // A HEAD answer's body is dropped by Node, unsent.
  const sent = stream.req.method === 'HEAD' ? 0 : body.length;
  env.metrics.bytesOut.inc({ route: env.route.path }, sent);
  stream.finish('completed', { status: answer.status, bytes: sent, stream: false });
}
