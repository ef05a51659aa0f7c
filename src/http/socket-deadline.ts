/**
 * A deadline over a socket's reads whose verdict waits for the event loop's next poll.
 *
 * Node runs timers before it polls I/O. When the loop was blocked past a deadline (a long GC,
 * CPU starvation), the timer runs first and would judge a peer whose bytes, connect or end
 * already sit in the socket, unprocessed. Here the timer only schedules the verdict with
 * `setImmediate` (after that poll), and the verdict is dropped if the deadline was cleared or
 * moved meanwhile (the poll delivered what was waited for). It costs one turn, only when a
 * deadline passes. The same rule as the event relay's idle timeout (`TimeoutSubscriber`'s
 * `pollBeforeFailing`).
 *
 * @example
 * const idle = new SocketDeadline(30_000, () => body.destroy(new TimeoutError('idle', 30_000)));
 * body.on('data', () => idle.refresh());
 * body.once('end', () => idle.clear());
 */
export class SocketDeadline {
  private readonly timer: NodeJS.Timeout;
  /** Moved by {@link refresh} since the timer last fired. */
  private moved = false;
  private cleared = false;

  /**
   * @param ms the deadline, ms from now
   * @param onPassed called once the deadline passed and the next poll brought nothing that moved or cleared it
   */
  constructor(
    ms: number,
    private readonly onPassed: () => void,
  ) {
    this.timer = setTimeout(fire, ms, this);
  }

  /** Restarts the deadline `ms` from now (Node's `Timeout#refresh`), also after it fired and while its verdict waits. */
  refresh(): void {
    if (this.cleared) return;
    this.moved = true;
    this.timer.refresh();
  }

  /** Drops the deadline and any verdict waiting. */
  clear(): void {
    this.cleared = true;
    clearTimeout(this.timer);
  }

  /** @internal the timer fired: the verdict waits for the poll. */
  fired(): void {
    this.moved = false;
    setImmediate(judge, this);
  }

  /** @internal after the poll: passed unless cleared or moved meanwhile. */
  judged(): void {
    if (this.cleared || this.moved) return;
    this.cleared = true;
    this.onPassed();
  }
}

// Module functions, not closures: a deadline per call allocates only its object and its timer.
function fire(deadline: SocketDeadline): void {
  deadline.fired();
}
function judge(deadline: SocketDeadline): void {
  deadline.judged();
}
