// svc-auth's log destination: lines batched into buffers and written asynchronously, dropped and counted past a bound.
import { writeSync, writev } from 'node:fs';

export interface LogSinkOptions {
  /** Start a write once a batch holds this many bytes. */
  readonly flushChars?: number;
  /** Write whatever is buffered at least this often. */
  readonly flushMs?: number;
  /** Beyond this many buffered bytes (the output cannot keep up), lines are dropped and counted. */
  readonly maxBufferedChars?: number;
}

/**
 * pino's destination for svc-auth: each line is UTF-8-encoded straight into the current batch buffer, and
 * full batches (64 KiB, or whatever is there every 200 ms) go out in one asynchronous writev(2), so an
 * audit line per decision costs the hot path one buffer write. (sonic-boom, pino's own, concatenates into
 * one string and measures its byte length on every line, which costs as much as the decision itself at
 * these rates; collecting strings and joining them per batch cost several times more than encoding each
 * line once.) Partial writes and EAGAIN are retried; any other error (stdout closed) drops output rather
 * than the process.
 */
export class LogSink {
  /** Batches handed over for writing, oldest first; the first is being written when `writing`. */
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private batch: Buffer;
  private used = 0;
  private writing = false;
  /** How many batches at the head of the queue the writev under way covers. */
  private inFlight = 0;
  /** Batch buffers written out, for reuse: a fresh 64 KiB buffer per batch costs page faults. */
  private spare: Buffer[] = [];
  private broken = false;
  private waiters: (() => void)[] = [];
  private readonly timer: NodeJS.Timeout;
  private readonly batchBytes: number;
  private readonly maxBufferedBytes: number;
  /** Lines dropped because the output could not keep up or failed. */
  dropped = 0;

  constructor(
    private readonly fd: number,
    options: LogSinkOptions = {},
  ) {
    this.batchBytes = options.flushChars ?? 65536;
    this.maxBufferedBytes = options.maxBufferedChars ?? 16 * 1024 * 1024;
    this.batch = Buffer.allocUnsafe(this.batchBytes);
    this.timer = setInterval(() => this.flush(), options.flushMs ?? 200);
    this.timer.unref();
  }

  write(line: string): void {
    // A UTF-16 code unit never takes more than 3 bytes in UTF-8.
    const most = line.length * 3;
    if (this.broken || this.queuedBytes + this.used + most > this.maxBufferedBytes) {
      this.dropped++;
      return;
    }
    if (this.used + most > this.batch.length) {
      this.flush();
      if (most > this.batch.length) {
        this.enqueue(Buffer.from(line, 'utf8'));
        this.pump();
        return;
      }
    }
    this.used += this.batch.write(line, this.used, 'utf8');
    if (this.used >= this.batchBytes) this.flush();
  }

  /** Starts writing what is buffered, unless a write is already under way (it continues with the rest). */
  flush(): void {
    this.seal();
    this.pump();
  }

  /** Moves the current batch to the queue and starts a new one. */
  private seal(): void {
    if (this.used === 0) return;
    this.enqueue(this.batch.subarray(0, this.used));
    this.batch = this.spare.pop() ?? Buffer.allocUnsafe(this.batchBytes);
    this.used = 0;
  }

  private enqueue(b: Buffer): void {
    this.queue.push(b);
    this.queuedBytes += b.length;
  }

  private pump(): void {
    if (this.writing) return;
    if (this.queue.length === 0 || this.broken) {
      this.settle();
      return;
    }
    this.writing = true;
    this.writeOut();
  }

  /** Writes every queued batch with one writev(2); what is queued meanwhile goes in the next one. */
  private writeOut(): void {
    const batches = this.queue.slice();
    this.inFlight = batches.length;
    writev(this.fd, batches, null, (e, n) => {
      if (e) {
        if (e.code === 'EAGAIN') {
          setTimeout(() => this.writeOut(), 10);
          return;
        }
        this.fail();
        return;
      }
      this.queuedBytes -= n;
      // Drop what went out; a partially written batch stays, as its unwritten rest.
      let i = 0;
      while (i < batches.length && n >= batches[i]!.length) {
        const done = batches[i++]!;
        n -= done.length;
        // A whole batch buffer (not an oversized line, not the rest of a partial write) can be reused.
        if (done.byteOffset === 0 && done.buffer.byteLength === this.batchBytes && this.spare.length < 4) this.spare.push(Buffer.from(done.buffer, 0, this.batchBytes));
      }
      this.queue.splice(0, i);
      if (n > 0) this.queue[0] = this.queue[0]!.subarray(n);
      this.writing = false;
      this.inFlight = 0;
      // Full batches that queued up meanwhile go now; a part-filled one waits for the timer (or end()),
      // or every completed write would start another small one.
      if (this.waiters.length > 0) this.flush();
      else this.pump();
    });
  }

  /** The output is gone: count what cannot be written any more (in lines, roughly: by newlines). */
  private fail(): void {
    this.broken = true;
    this.writing = false;
    this.inFlight = 0;
    for (const b of this.queue) this.dropped += countLines(b);
    this.dropped += countLines(this.batch.subarray(0, this.used));
    this.queue = [];
    this.queuedBytes = 0;
    this.used = 0;
    this.settle();
  }

  private settle(): void {
    if (this.writing || (this.queue.length > 0 && !this.broken)) return;
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
   * is not waited for (it is still written, after this one).
   */
  flushSync(): void {
    if (this.broken) return;
    this.seal();
    const keep = this.writing ? this.inFlight : 0;
    try {
      for (const b of this.queue.slice(keep)) writeSync(this.fd, b);
    } catch {
      this.broken = true;
    }
    this.queue = this.queue.slice(0, keep);
    this.queuedBytes = this.queue.reduce((n, b) => n + b.length, 0);
  }
}

function countLines(b: Buffer): number {
  let n = 0;
  for (let i = b.indexOf(0x0a); i >= 0; i = b.indexOf(0x0a, i + 1)) n++;
  return n;
}
