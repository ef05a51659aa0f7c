/**
 * The CLI's first import: listens to SIGTERM and SIGINT before the rest of the gateway's modules
 * load (express, prom-client, winston, rxjs: a few hundred ms on a slow machine). Node installs a
 * signal's handler only once something listens to it; until then the kernel's default action
 * kills the process (exit 143 / 130) with nothing logged. A signal that arrives while the modules
 * load waits here for the event loop, which runs it through the listeners `main()` has installed
 * by then ({@link releaseEarlySignals}): a `shutdown requested before listening` line during the
 * warm-up, else the drain of a gateway that just started listening; exit 0 either way.
 */
const ignore = (): void => undefined;
process.on('SIGTERM', ignore);
process.on('SIGINT', ignore);

/**
 * Removes the placeholder listeners, once the CLI listens to both signals itself (never before:
 * a signal's last listener going closes Node's watch of it, and with it a signal not yet dispatched).
 */
export function releaseEarlySignals(): void {
  process.off('SIGTERM', ignore);
  process.off('SIGINT', ignore);
}
