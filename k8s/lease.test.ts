import { describe, it, expect } from '@jest/globals';
import { LeaderElector } from './lease.js';
import { FakeLease } from './fake.js';
import { sleep, poll as until } from '../test/support/wait.js';

const timing = { leaseDurationMs: 300, renewDeadlineMs: 200, retryPeriodMs: 40 };

/** A fresh Lease with candidate `a` already leading, and the log of leadership changes. */
async function leading() {
  const lease = new FakeLease();
  const log: string[] = [];
  const a = candidate(lease, 'a', log);
  a.start();
  await until(() => a.isLeader());
  return { lease, log, a };
}

function candidate(lease: FakeLease, identity: string, log: string[]) {
  return new LeaderElector(lease.client(identity), {
    identity,
    ...timing,
    onStartedLeading: () => log.push(`${identity} leads`),
    onStoppedLeading: () => log.push(`${identity} stops`),
  });
}

describe('LeaderElector', () => {
  it('elects exactly one of two candidates', async () => {
    const lease = new FakeLease();
    const log: string[] = [];
    const a = candidate(lease, 'a', log);
    const b = candidate(lease, 'b', log);
    a.start();
    b.start();
    await until(() => a.isLeader() || b.isLeader());
    await sleep(400);
    expect([a.isLeader(), b.isLeader()].filter(Boolean)).toHaveLength(1);
    expect(log).toHaveLength(1);
    expect(lease.record?.holderIdentity).toBe(a.isLeader() ? 'a' : 'b');
    await Promise.all([a.stop(false), b.stop(false)]);
  });

  it('hands over after release on stop, without waiting for the lease to expire', async () => {
    const { lease, log, a } = await leading();
    const b = candidate(lease, 'b', log);
    b.start();
    await sleep(100);
    expect(b.isLeader()).toBe(false);
    const t0 = Date.now();
    await a.stop(true);
    expect(lease.record?.holderIdentity).toBe('');
    await until(() => b.isLeader());
    expect(Date.now() - t0).toBeLessThan(timing.leaseDurationMs);
    expect(lease.record?.leaseTransitions).toBe(1);
    await b.stop(false);
  });

  it('takes over from a leader that stopped renewing only after the lease duration', async () => {
    const { lease, log, a } = await leading();
    const b = candidate(lease, 'b', log);
    b.start();
    await sleep(60);
    // a's API calls start failing (partitioned).
    lease.failing.add('a');
    const t0 = Date.now();
    await until(() => !a.isLeader());
    // a stops considering itself leader by its renew deadline...
    expect(Date.now() - t0).toBeLessThanOrEqual(timing.renewDeadlineMs + 20);
    await until(() => b.isLeader());
    // ...and b takes over no sooner than the lease duration after it last saw a renewal.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(timing.leaseDurationMs - timing.retryPeriodMs - 20);
    expect(log).toEqual(['a leads', 'a stops', 'b leads']);
    // Never two leaders at once.
    expect(a.isLeader() && b.isLeader()).toBe(false);
    await Promise.all([a.stop(false), b.stop(false)]);
  });

  it('keeps leading through a renewal failure shorter than the renew deadline', async () => {
    const { lease, log, a } = await leading();
    lease.failing.add('a');
    await sleep(80);
    lease.failing.delete('a');
    await sleep(250);
    expect(a.isLeader()).toBe(true);
    expect(log).toEqual(['a leads']);
    await a.stop(false);
  });

  it('refuses inconsistent timing', () => {
    const lease = new FakeLease();
    expect(() => new LeaderElector(lease.client(), { identity: 'x', leaseDurationMs: 10_000, renewDeadlineMs: 10_000 })).toThrow(/renew deadline/);
    expect(() => new LeaderElector(lease.client(), { identity: 'x', renewDeadlineMs: 1000, retryPeriodMs: 1000 })).toThrow(/retry period/);
  });
});
