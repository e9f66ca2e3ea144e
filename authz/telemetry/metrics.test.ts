import { describe, expect, it } from '@jest/globals';
import { AuthMetrics, GRANT_CREDENTIALS } from './metrics.js';

const grants = async (m: AuthMetrics): Promise<Record<string, number>> => {
  const text = await m.registry.metrics();
  return Object.fromEntries([...text.matchAll(/^svc_auth_grants_total\{credential="([a-z]+)"\} (\d+)$/gm)].map((x) => [x[1]!, Number(x[2])]));
};

describe('svc_auth_grants_total (counted in an array, brought to prom-client at scrape time)', () => {
  it('starts every credential at 0, and each scrape shows every grant once, however many scrapes there were', async () => {
    const m = new AuthMetrics({ defaultMetrics: false });
    expect(await grants(m)).toEqual(Object.fromEntries(GRANT_CREDENTIALS.map((c) => [c, 0])));
    m.grant('session');
    m.grant('session');
    m.grant('token');
    expect(await grants(m)).toMatchObject({ session: 2, token: 1, jwt: 0, network: 0, imported: 0 });
    expect(await grants(m)).toMatchObject({ session: 2, token: 1 });
    m.grant('session');
    m.grant('network');
    expect(await grants(m)).toMatchObject({ session: 3, token: 1, network: 1, jwt: 0 });
  });
});
