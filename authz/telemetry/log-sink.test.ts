import { describe, expect, it } from '@jest/globals';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LogSink } from './log-sink.js';

describe('LogSink', () => {
  it('writes every line, in order, in batches, and settles end() once out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-log-sink-'));
    try {
      const fd = openSync(join(dir, 'log'), 'w');
      const sink = new LogSink(fd, { flushChars: 1000 });
      for (let i = 0; i < 5000; i++) sink.write(`{"n":${i},"é":"ü"}\n`);
      await sink.end();
      closeSync(fd);
      const lines = readFileSync(join(dir, 'log'), 'utf8').trim().split('\n');
      expect(lines).toHaveLength(5000);
      expect(lines.every((l, i) => (JSON.parse(l) as { n: number }).n === i)).toBe(true);
      expect(sink.dropped).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('flushes on its timer without reaching the batch size', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-log-sink-'));
    try {
      const fd = openSync(join(dir, 'log'), 'w');
      const sink = new LogSink(fd, { flushMs: 20 });
      sink.write('one line\n');
      await new Promise((r) => setTimeout(r, 150));
      expect(readFileSync(join(dir, 'log'), 'utf8')).toBe('one line\n');
      await sink.end();
      closeSync(fd);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('drops lines instead of failing when the output is gone or cannot keep up', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-log-sink-'));
    try {
      writeFileSync(join(dir, 'log'), '');
      const fd = openSync(join(dir, 'log'), 'r'); // not writable: every write fails
      const sink = new LogSink(fd, { flushChars: 10, maxBufferedChars: 100 });
      for (let i = 0; i < 50; i++) sink.write('0123456789\n');
      await sink.end();
      closeSync(fd);
      expect(sink.dropped).toBeGreaterThan(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('LogSink on a crash', () => {
  it('flushSync writes what is buffered at once, and nothing twice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-log-sink-'));
    try {
      const fd = openSync(join(dir, 'log'), 'w');
      const sink = new LogSink(fd, { flushChars: 64 });
      for (let i = 0; i < 100; i++) sink.write(`line ${String(i).padStart(3, '0')}\n`);
      sink.flushSync();
      await sink.end();
      closeSync(fd);
      const lines = readFileSync(join(dir, 'log'), 'utf8').trim().split('\n');
      expect(lines.length).toBe(100);
      expect(new Set(lines).size).toBe(100);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
