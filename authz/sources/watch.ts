// A directory watched for changes (fs.watch, debounced, and a slow rescan), as kubelet's ConfigMap volumes need.
import { statSync, watch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';

export interface DirectoryWatchOptions {
  /** Quiet time after the last event before reacting: editors and kubelet write in several steps. */
  readonly debounceMs: number;
  /** Safety net: a periodic check, and the moment a lost watcher is re-created. */
  readonly rescanMs: number;
  /** Which entries of the directory matter; events about others are ignored (the rescan still sees everything). */
  readonly relevant?: (name: string) => boolean;
}

export type ChangeReason = 'event' | 'rescan';

/**
 * Watches one directory (not recursively) with fs.watch, debounced, plus a slow periodic rescan. Watching
 * the directory rather than a file is what makes kubelet's ConfigMap updates visible: it writes a new
 * timestamped directory and renames the `..data` symlink over the old one, so the watched file's inode
 * never changes. If the directory disappears, the watcher is dropped and re-created by the next rescan.
 */
export class DirectoryWatch {
  private watcher: FSWatcher | null = null;
  /** The directory's inode when the watcher was attached: a replaced directory needs a new watcher. */
  private watchedIno: number | null = null;
  private debounce: NodeJS.Timeout | null = null;
  private readonly rescan: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly dir: string,
    private readonly onChange: (reason: ChangeReason) => void,
    private readonly options: DirectoryWatchOptions,
  ) {
    this.attach();
    this.rescan = setInterval(() => {
      void this.check().finally(() => {
        if (!this.closed) this.onChange('rescan');
      });
    }, options.rescanMs);
    this.rescan.unref();
  }

  /** Re-creates the watcher if it was lost or the directory was replaced (deleted and created again). */
  private async check(): Promise<void> {
    let ino: number | null;
    try {
      ino = (await stat(this.dir)).ino;
    } catch {
      ino = null;
    }
    if (this.closed) return;
    if (this.watcher && ino !== null && ino === this.watchedIno) return;
    this.watcher?.close();
    this.watcher = null;
    if (ino !== null) this.attach();
  }

  private attach(): void {
    if (this.closed) return;
    try {
      const ino = statSync(this.dir).ino;
      const w = watch(this.dir, { persistent: false }, (_event, name) => {
        // No name (some platforms) or a relevant one: react; a busy unrelated neighbour (a log file) must not cause reloads.
        if (name === null || !this.options.relevant || this.options.relevant(String(name))) this.schedule();
      });
      this.watchedIno = ino;
      w.on('error', () => {
        w.close();
        if (this.watcher === w) this.watcher = null;
        this.schedule();
      });
      this.watcher = w;
    } catch {
      this.watcher = null; // missing for now; the rescan tries again
    }
  }

  private schedule(): void {
    if (this.closed) return;
    if (this.debounce) clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      this.debounce = null;
      if (!this.closed) this.onChange('event');
    }, this.options.debounceMs);
    this.debounce.unref();
  }

  get watching(): boolean {
    return this.watcher !== null;
  }

  close(): void {
    this.closed = true;
    clearInterval(this.rescan);
    if (this.debounce) clearTimeout(this.debounce);
    this.watcher?.close();
    this.watcher = null;
  }
}
