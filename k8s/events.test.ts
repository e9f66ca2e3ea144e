import { describe, it, expect } from '@jest/globals';
import { EventRecorder, eventName, type EventRecord, type EventSink } from './events.js';

const ref = { apiVersion: 'auth.svc.io/v1alpha1', kind: 'ProtectedScope', name: 'topic-a', namespace: 'ns', uid: 'u1' };

describe('EventRecorder', () => {
  it('sends events in order and flushes', async () => {
    const sent: EventRecord[] = [];
    const sink: EventSink = { create: async (e) => void sent.push(e) };
    const r = new EventRecorder(sink, { reportingController: 'c', reportingInstance: 'i', concurrency: 1 });
    r.emit(ref, 'Normal', 'ScopeClosed', 'closed');
    r.emit(ref, 'Normal', 'ScopeOpened', 'opened');
    await r.flush();
    expect(sent.map((e) => e.reason)).toEqual(['ScopeClosed', 'ScopeOpened']);
    expect(r.sent).toBe(2);
  });

  it('never blocks or throws: drops past the queue limit and survives a failing sink', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const failures: unknown[] = [];
    const dropped: string[] = [];
    const sink: EventSink = {
      create: async (e) => {
        await gate;
        if (e.reason === 'Bad') throw new Error('403 forbidden');
      },
    };
    const r = new EventRecorder(sink, { reportingController: 'c', reportingInstance: 'i', concurrency: 1, maxQueue: 2, onDropped: (e) => dropped.push(e.note), onError: (e) => failures.push(e) });
    r.emit(ref, 'Warning', 'Bad', '1'); // in flight
    r.emit(ref, 'Normal', 'Ok', '2');
    r.emit(ref, 'Normal', 'Ok', '3');
    r.emit(ref, 'Normal', 'Ok', '4'); // queue full
    expect(dropped).toEqual(['4']);
    release();
    await r.flush();
    expect(failures).toHaveLength(1);
    expect(r.sent).toBe(2);
    expect(r.dropped).toBe(1);
  });

  it('truncates notes to 1 KiB', async () => {
    const sent: EventRecord[] = [];
    const r = new EventRecorder({ create: async (e) => void sent.push(e) }, { reportingController: 'c', reportingInstance: 'i' });
    r.emit(ref, 'Normal', 'X', 'x'.repeat(5000));
    await r.flush();
    expect(sent[0]!.note).toHaveLength(1024);
  });
});

describe('eventName', () => {
  it('is a valid, unique-ish name even for a 253-character object name', () => {
    const a = eventName('a'.repeat(253), 1_700_000_000_000);
    expect(a.length).toBeLessThanOrEqual(253);
    expect(a).toMatch(/^a+\.[0-9a-f]+$/);
    expect(eventName('x', 1)).not.toBe(eventName('x', 1));
  });
});

describe('EventRecorder rate limit', () => {
  it('sends a burst at once, then at the sustained rate', async () => {
    const times: number[] = [];
    const r = new EventRecorder({ create: async () => void times.push(Date.now()) }, { reportingController: 'c', reportingInstance: 'i', qps: 50, burst: 3, concurrency: 4 });
    const t0 = Date.now();
    for (let i = 0; i < 6; i++) r.emit(ref, 'Normal', 'X', String(i));
    await r.flush();
    expect(times).toHaveLength(6);
    expect(times[2]! - t0).toBeLessThan(15);
    // 3 more at 50/s take at least ~40 ms after the burst.
    expect(times[5]! - t0).toBeGreaterThanOrEqual(50);
  });
});
