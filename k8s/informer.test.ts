import { describe, it, expect, jest } from '@jest/globals';
import { ResilientInformer, type ListWatch } from './informer.js';
import { ApiError, FakeApi, FakeStore } from './fake.js';
import { sleep, poll as until } from '../test/support/wait.js';

interface Obj {
  metadata: { name: string; resourceVersion?: string; uid?: string };
  value?: number;
}

function setup(opts: ConstructorParameters<typeof ResilientInformer<Obj>>[2] = {}) {
  const api = new FakeApi();
  const store = new FakeStore<Obj>(api, 'things');
  const seen: string[] = [];
  const errors: unknown[] = [];
  const informer = new ResilientInformer<Obj>(
    store.listWatch(),
    {
      onAdd: (o) => seen.push(`add ${o.metadata.name}`),
      onUpdate: (_old, o) => seen.push(`update ${o.metadata.name}=${o.value}`),
      onDelete: (o) => seen.push(`delete ${o.metadata.name}`),
      onError: (e) => errors.push(e),
    },
    { backoffInitialMs: 5, backoffMaxMs: 20, ...opts },
  );
  return { api, store, informer, seen, errors };
}

describe('ResilientInformer', () => {
  it('lists, then follows the watch', async () => {
    const { store, informer, seen } = setup();
    store.put({ metadata: { name: 'a' }, value: 1 });
    informer.start();
    await informer.waitForSync();
    expect(informer.list().map((o) => o.metadata.name)).toEqual(['a']);
    await until(() => store.openWatches === 1);
    store.put({ metadata: { name: 'b' }, value: 1 });
    store.put({ metadata: { name: 'a' }, value: 2 });
    store.remove('b');
    await until(() => seen.length === 4);
    expect(seen).toEqual(['add a', 'add b', 'update a=2', 'delete b']);
    expect(informer.get('a')?.value).toBe(2);
    await informer.stop();
  });

  it('restarts after a watch error and catches up by relisting, keeping its cache meanwhile', async () => {
    const { api, store, informer, seen, errors } = setup();
    store.put({ metadata: { name: 'a' }, value: 1 });
    informer.start();
    await informer.waitForSync();
    await until(() => store.openWatches === 1);
    api.outage = true;
    store.cutWatches(new Error('connection reset'));
    await until(() => errors.length >= 2);
    expect(informer.synced).toBe(true);
    expect(informer.get('a')?.value).toBe(1);
    // Changes during the outage arrive through the relist.
    store.put({ metadata: { name: 'a' }, value: 5 });
    store.put({ metadata: { name: 'c' }, value: 1 });
    api.outage = false;
    await until(() => informer.get('c') !== undefined && informer.get('a')?.value === 5);
    expect(seen).toContain('update a=5');
    expect(informer.restarts).toBeGreaterThanOrEqual(2);
    await informer.stop();
  });

  it('relists on 410 Gone without counting it as a failure', async () => {
    const { store, informer, errors } = setup();
    store.historyLimit = 2;
    informer.start();
    await informer.waitForSync();
    await until(() => store.openWatches === 1);
    // The watch ends; meanwhile the history window moves past our resourceVersion.
    store.cutWatches();
    for (let i = 0; i < 5; i++) store.put({ metadata: { name: `x${i}` }, value: i });
    await until(() => informer.size === 5);
    expect(errors).toEqual([]);
    await informer.stop();
  });

  it('handles an ERROR event with code 410 by relisting', async () => {
    let lists = 0;
    const listWatch: ListWatch<Obj> = {
      list: async () => {
        lists++;
        return { items: [{ metadata: { name: `gen${lists}`, resourceVersion: String(lists) } }], resourceVersion: String(lists) };
      },
      watch: async (_rv, _t, onEvent) => {
        if (lists === 1) setTimeout(() => onEvent('ERROR', { kind: 'Status', code: 410, message: 'too old resource version' }), 5);
        return { abort: () => undefined };
      },
    };
    const informer = new ResilientInformer<Obj>(listWatch, {}, { backoffInitialMs: 5 });
    informer.start();
    await until(() => lists >= 2);
    expect(informer.list().map((o) => o.metadata.name)).toEqual(['gen2']);
    await informer.stop();
  });

  it('reopens a watch that goes silent (watchdog)', async () => {
    let watches = 0;
    const listWatch: ListWatch<Obj> = {
      list: async () => ({ items: [], resourceVersion: '1' }),
      watch: async () => {
        watches++;
        return { abort: () => undefined }; // never sends, never ends: a half-open connection
      },
    };
    const errors: unknown[] = [];
    const informer = new ResilientInformer<Obj>(listWatch, { onError: (e) => errors.push(e) }, { watchTimeoutSeconds: 1, watchdogSlackMs: 20, backoffInitialMs: 5 });
    informer.start();
    await until(() => watches >= 2, 5000);
    expect(String((errors[0] as Error).message)).toMatch(/no data/);
    await informer.stop();
  });

  it('relists on its interval and reports objects that vanished unseen as deleted', async () => {
    const { store, informer, seen } = setup({ relistIntervalMs: 50 });
    store.put({ metadata: { name: 'a' } });
    informer.start();
    await informer.waitForSync();
    await until(() => store.openWatches === 1);
    // Remove without an event reaching the informer (a missed event).
    store.objects.delete('a');
    await until(() => seen.includes('delete a'));
    expect(informer.size).toBe(0);
    await informer.stop();
  });

  it('survives a throwing handler', async () => {
    const api = new FakeApi();
    const store = new FakeStore<Obj>(api, 'things');
    const errors: unknown[] = [];
    const informer = new ResilientInformer<Obj>(store.listWatch(), {
      onAdd: () => {
        throw new Error('boom');
      },
      onError: (e) => errors.push(e),
    });
    store.put({ metadata: { name: 'a' } });
    informer.start();
    await informer.waitForSync();
    await until(() => store.openWatches === 1);
    store.put({ metadata: { name: 'b' } });
    await until(() => informer.size === 2);
    expect(errors.length).toBe(2);
    expect(String((errors[0] as Error).message)).toMatch(/handler threw/);
    await informer.stop();
  });

  it('waitForSync: resolves on the list itself, no timer to wait for; rejects when stopped or never started', async () => {
    jest.useFakeTimers();
    try {
      const { store, informer } = setup();
      store.put({ metadata: { name: 'a' }, value: 1 });
      await expect(informer.waitForSync()).rejects.toThrow('informer stopped');
      informer.start();
      // With the clock frozen, only the list completing can settle it.
      await informer.waitForSync();
      expect(informer.list()).toHaveLength(1);
      await informer.stop();
      // A list that never answers: stop() settles the wait at once, and so does the timeout.
      const never: ListWatch<Obj> = { list: () => new Promise(() => undefined), watch: async () => ({ abort: () => undefined }) };
      const pending = new ResilientInformer<Obj>(never);
      pending.start();
      const waiting = expect(pending.waitForSync()).rejects.toThrow('informer stopped');
      void pending.stop();
      await waiting;
      const late = new ResilientInformer<Obj>(never);
      late.start();
      const timedOut = expect(late.waitForSync(1000)).rejects.toThrow('informer not synced after 1000 ms');
      jest.advanceTimersByTime(1000);
      await timedOut;
      void late.stop();
    } finally {
      jest.useRealTimers();
    }
  });

  it('backs off on repeated list failures and honours Retry-After', async () => {
    let calls = 0;
    const times: number[] = [];
    const listWatch: ListWatch<Obj> = {
      list: async () => {
        calls++;
        times.push(Date.now());
        if (calls === 1) throw Object.assign(new ApiError(429, 'Too Many Requests'), { headers: { 'retry-after': '1' } });
        if (calls < 4) throw new ApiError(500, 'boom');
        return { items: [], resourceVersion: '1' };
      },
      watch: async () => ({ abort: () => undefined }),
    };
    const informer = new ResilientInformer<Obj>(listWatch, {}, { backoffInitialMs: 5, backoffMaxMs: 50 });
    informer.start();
    await informer.waitForSync(5000);
    expect(calls).toBe(4);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(990);
    await informer.stop();
  });

  it('does not spin when the server ends watches at once', async () => {
    let watches = 0;
    const listWatch: ListWatch<Obj> = {
      list: async () => ({ items: [], resourceVersion: '1' }),
      watch: async (_rv, _t, _onEvent, onDone) => {
        watches++;
        setImmediate(() => onDone());
        return { abort: () => undefined };
      },
    };
    const informer = new ResilientInformer<Obj>(listWatch, {}, { backoffInitialMs: 20, backoffMaxMs: 40 });
    informer.start();
    await sleep(200);
    await informer.stop();
    expect(watches).toBeLessThan(15);
  });
});
