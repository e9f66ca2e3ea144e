// svc-auth's JSON logger (pino) over its batching sink; token values are never given to it.
import { pino, type DestinationStream, type Level, type Logger } from 'pino';
import { LogSink } from './log-sink.js';

export { LOG_LEVELS } from '../../lib/log-levels.js';
export type LogLevel = Level | 'silent';

export interface AuthLogger {
  readonly logger: Logger;
  /** Writes out what is buffered; for an orderly exit. */
  close(): Promise<void>;
  /** Best effort, synchronous: for a crash, when there is no time for I/O callbacks. */
  flushSync(): void;
  /** Lines dropped because stdout could not keep up or failed. */
  dropped(): number;
}

/**
 * JSON logs with pino (time in epoch milliseconds, pino's cheapest). By default to stdout through
 * LogSink, an asynchronous batching destination, so a decision log costs the hot path its serialization
 * and not a write(2). Token values are never passed to it; the handlers log the token id only.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): AuthLogger {
  const sink = destination === undefined ? new LogSink(1) : undefined;
  const logger = pino(
    {
      name: 'svc-auth',
      level,
      formatters: { level: (label) => ({ level: label }) },
    },
    sink ?? destination!,
  );
  return {
    logger,
    close: () => sink?.end() ?? Promise.resolve(),
    flushSync: () => sink?.flushSync(),
    dropped: () => sink?.dropped ?? 0,
  };
}
