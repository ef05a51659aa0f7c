/**
 * The one error a malformed request raises inside the simulator: it carries the HTTP status
 * (400, 413, 500) that the exchange answers with, in the route's provider error shape.
 */
export class RequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}
