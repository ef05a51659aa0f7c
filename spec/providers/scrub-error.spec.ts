import { UpstreamHttpError } from '../../src/http/errors';
import { Scrubber } from '../../src/http/redact';
import { scrubError } from '../../src/providers/scrub';

describe('scrubError', () => {
  const scrubber = new Scrubber(['sk-secret-0123456789']);

  it("redacts an upstream HTTP error's body, which an adapter reads the upstream's error from", () => {
    const error = new UpstreamHttpError(401, '{"error":{"message":"bad key sk-secret-0123456789"}}', 'application/json');
    const scrubbed = scrubError(error, scrubber) as UpstreamHttpError;
    expect(scrubbed).toBeInstanceOf(UpstreamHttpError);
    expect(scrubbed).toMatchObject({ status: 401, code: 'ERR_TIDEGATE_UPSTREAM_STATUS', body: '{"error":{"message":"bad key [redacted]"}}' });
    expect(error.body).toContain('sk-secret-0123456789');
  });

  it('returns an upstream HTTP error without a secret as it is', () => {
    const error = new UpstreamHttpError(400, '{"error":{"message":"too long"}}', 'application/json');
    expect(scrubError(error, scrubber)).toBe(error);
  });
});
