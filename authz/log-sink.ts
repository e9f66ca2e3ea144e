import { write, writeSync } from 'node:fs';

export interface LogSinkOptions {
  /** Start a write once this many characters are buffered. */
  readonly flushChars?: number;
  /** Write whatever is buffered at least this often. */
  readonly flushMs?: number;
  /** Beyond this many buffered characters (the output cannot keep up), lines are dropped and counted. */
  readonly maxBufferedChars?: number;
}

/**
 * pino's destination for svc-auth: lines are appended to an array and written by one asynchronous
 * write(2) per batch (64 KiB or 200 ms, whichever comes first), so an audit line per decision costs the
 * hot path an array push. (sonic-boom, pino's own, concatenates into one string and measures its byte
 * length on every line, which costs as much as the decision itself at these rates.) Partial writes and
 * EAGAIN are retried; any other error (stdout closed) drops output rather than the process.
 */
export class LogSink {
  private chunks: string[] = [];
  private buffered = 0;
  private writing = false;
  private broken = false;
  private waiters: (() => void)[] = [];
  private readonly timer: NodeJS.Timeout;
  private readonly flushChars: number;
  private readonly maxBufferedChars: number;
  /** Lines dropped because the output could not keep up or failed. */
  dropped = 0;

  constructor(
    private readonly fd: number,
    options: LogSinkOptions = {},
  ) {
    this.flushChars = options.flushChars ?? 65536;
    this.maxBufferedChars = options.maxBufferedChars ?? 16 * 1024 * 1024;
    this.timer = setInterval(() => this.flush(), options.flushMs ?? 200);
    this.timer.unref();
  }

  write(line: string): void {
    if (this.broken || this.buffered + line.length > this.maxBufferedChars) {
      this.dropped++;
      return;
    }
    this.chunks.push(line);
    this.buffered += line.length;
    if (this.buffered >= this.flushChars && !this.writing) this.flush();
  }

  /** Starts writing what is buffered, unless a write is already under way (it continues with the rest). */
  flush(): void {
    if (this.writing) return;
    if (this.buffered === 0 || this.broken) {
      this.settle();
      return;
    }
    const data = Buffer.from(this.chunks.join(''), 'utf8');
    this.chunks = [];
    this.buffered = 0;
    this.writing = true;
    this.writeOut(data, 0);
  }

  private writeOut(data: Buffer, offset: number): void {
    write(this.fd, data, offset, data.length - offset, null, (e, n) => {
      if (e) {
        if (e.code === 'EAGAIN') {
          setTimeout(() => this.writeOut(data, offset), 10);
          return;
        }
        this.broken = true;
        this.writing = false;
        this.dropped += this.chunks.length;
        this.chunks = [];
        this.buffered = 0;
        this.settle();
        return;
      }
      if (offset + n < data.length) {
        this.writeOut(data, offset + n);
        return;
      }
      this.writing = false;
      if (this.buffered >= this.flushChars || this.waiters.length > 0) this.flush();
    });
  }

  private settle(): void {
    if (this.writing || (this.buffered > 0 && !this.broken)) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** Resolves once everything written so far is out (or the output is broken). */
  end(): Promise<void> {
    clearInterval(this.timer);
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      this.flush();
    });
  }

  /**
   * For a crash: writes what is buffered synchronously. A batch already handed to the kernel asynchronously
   * is not waited for.
   */
  flushSync(): void {
    if (this.broken || this.buffered === 0) return;
    const data = this.chunks.join('');
    this.chunks = [];
    this.buffered = 0;
    try {
      writeSync(this.fd, data);
    } catch {
      this.broken = true;
    }
  }
}
