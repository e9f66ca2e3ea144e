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

/** A candidate logging its leadership changes; `now` replaces its clock (Date.now). */
function candidate(lease: FakeLease, identity: string, log: string[], now?: () => number) {
  return new LeaderElector(lease.client(identity), {
    identity,
    ...timing,
    ...(now ? { now } : {}),
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
    // b's clock stands still: a lease held by someone else never expires for it, so only a release lets it in.
    const b = candidate(lease, 'b', log, () => 1_000_000);
    b.start();
    await sleep(100);
    expect(b.isLeader()).toBe(false);
    await a.stop(true);
    expect(lease.record?.holderIdentity).toBe('');
    await until(() => b.isLeader());
    expect(lease.record?.leaseTransitions).toBe(1);
    await b.stop(false);
  });

  it('a partitioned leader stops leading at its renew deadline, by its own clock', async () => {
    let now = 1_000_000;
    const lease = new FakeLease();
    const log: string[] = [];
    const a = candidate(lease, 'a', log, () => now);
    a.start();
    await until(() => a.isLeader());
    lease.failing.add('a');
    await sleep(3 * timing.retryPeriodMs); // its rounds now fail; none renews
    now += timing.renewDeadlineMs - 1;
    expect(a.isLeader()).toBe(true);
    now += 1;
    expect(a.isLeader()).toBe(false); // no timer needed: every write checks isLeader() first
    await until(() => log.includes('a stops'));
    await a.stop(false);
  });

  it('takes over from a leader that stopped renewing only after the lease duration', async () => {
    const { lease, log, a } = await leading();
    const b = candidate(lease, 'b', log);
    b.start();
    await sleep(60);
    // a's API calls start failing (partitioned): the record now holds its last renewal.
    lease.failing.add('a');
    const last = { ...lease.record! };
    expect(last.holderIdentity).toBe('a');
    await until(() => !a.isLeader());
    await until(() => b.isLeader());
    // b acquired no sooner than the lease's duration after the last renewal: the records' instants, not the test's.
    expect(lease.record!.acquireTimeMs! - last.renewTimeMs!).toBeGreaterThanOrEqual(last.leaseDurationSeconds! * 1000);
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
