// `npx tsx test/e2e/answers.ts`: each proxy's answer to each case of the proxy suite, as a table (status,
// and whether the protected content or pygeoapi's result came back). The suite asserts these; this prints
// them for people (deploy/README.md, issue notes). Tokens are generated here and never printed.
import { randomBytes } from 'node:crypto';
import { WAF } from './support/fixtures.js';
import { makeTokens, type TokenName } from './support/harness.js';
import { nginxPlan } from './support/nginx.js';
import { header, rawRequest } from './support/net.js';
import { COLLECTIONS, featureId } from './support/pygeoapi.js';
import { HOST, ProxyHarness, type ProxyName } from './support/proxies.js';

const tokens = makeTokens();
const json = [['Content-Type', 'application/json']] as const;
const geo = [['Content-Type', 'application/geo+json']] as const;
const station = (id: string) => JSON.stringify({ type: 'Feature', id, geometry: { type: 'Point', coordinates: [1, 1] }, properties: { name: id } });
const exec = { method: 'POST', body: JSON.stringify({ inputs: { name: 'svc-e2e' } }), headers: json };

interface Case { name: string; method?: string; target: string; body?: string; headers?: readonly (readonly [string, string])[]; token?: TokenName; via?: 'query' }
const ds = `/oapi/collections/${COLLECTIONS.dataset}/items`;
const CASES: Case[] = [
  { name: 'open collection /items', target: `/oapi/collections/${COLLECTIONS.open}/items` },
  { name: 'open collection /items/{id}?f=json', target: `/oapi/collections/${COLLECTIONS.open}/items/${featureId(COLLECTIONS.open)}?f=json` },
  { name: 'closed dataset /items, no token', target: ds },
  { name: 'closed dataset /items, Bearer', target: ds, token: 'dataset' },
  { name: 'closed dataset /items, ?token=', target: ds, token: 'dataset', via: 'query' },
  { name: 'closed dataset /items, another scope’s token', target: ds, token: 'topic' },
  { name: 'closed topic collection, Bearer', target: `/oapi/collections/${COLLECTIONS.topic}/items`, token: 'topic' },
  { name: 'WAF closed file, no token', target: WAF.topicFile },
  { name: 'WAF closed file, Bearer', target: WAF.topicFile, token: 'topic' },
  { name: 'execute svc-synop2bufr, processes token', target: '/oapi/processes/svc-synop2bufr/execution', ...exec, token: 'processes' },
  { name: 'execute svc-csv2bufr, no token', target: '/oapi/processes/svc-csv2bufr/execution', ...exec },
  { name: 'execute svc-csv2bufr, stations token', target: '/oapi/processes/svc-csv2bufr/execution', ...exec, token: 'stations' },
  { name: 'execute other-process, no token', target: '/oapi/processes/other-process/execution', ...exec },
  { name: 'stations POST, no token', method: 'POST', target: '/oapi/collections/stations/items', body: station('a1'), headers: geo },
  { name: 'stations POST, processes token', method: 'POST', target: '/oapi/collections/stations/items', body: station('a2'), headers: geo, token: 'processes' },
  { name: 'stations POST, stations token', method: 'POST', target: '/oapi/collections/stations/items', body: station('a3'), headers: geo, token: 'stations' },
  { name: 'stations POST + X-HTTP-Method-Override: GET', method: 'POST', target: '/oapi/collections/stations/items', body: station('a4'), headers: [...geo, ['X-HTTP-Method-Override', 'GET']] },
  { name: 'closed dataset + client X-Original-URI (open)', target: ds, headers: [['X-Original-URI', `/oapi/collections/${COLLECTIONS.open}/items`]] },
  { name: 'stations POST to /collections/Stations', method: 'POST', target: '/oapi/collections/Stations/items', body: station('a5'), headers: geo },
];

const h = await ProxyHarness.start(nginxPlan(), tokens);
// the protected content: every closed collection's and closed WAF file's marker
const closed = [h.pygeoapi!.files.markers[COLLECTIONS.dataset]!, h.pygeoapi!.files.markers[COLLECTIONS.topic]!, h.waf.markers.topicFile];
try {
  const proxies: ProxyName[] = ['nginx', 'traefik', 'envoy'];
  console.log(`| case | ${proxies.join(' | ')} |\n|---|${proxies.map(() => '---').join('|')}|`);
  for (const c of CASES) {
    const cells: string[] = [];
    for (const p of proxies) {
      const before = h.pygeoapi!.stationsData();
      let target = c.target;
      const headers = [...(c.headers ?? [])];
      if (c.token && c.via === 'query') target += `?token=${tokens[c.token]}`;
      else if (c.token) headers.push(['Authorization', `Bearer ${tokens[c.token]}`]);
      const body = c.body?.replace(/"a(\d)"/g, `"a$1-${p}-${randomBytes(2).toString('hex')}"`);
      const res = await rawRequest(h.ports[p], { method: c.method ?? 'GET', target, headers, body, host: HOST });
      const got = closed.some((m) => res.body.includes(m)) ? ' +content' : res.body.includes('Hello svc-e2e') ? ' +result' : '';
      const changed = h.pygeoapi!.stationsData() !== before ? ' +written' : '';
      const challenge = /insufficient_scope/.test(header(res, 'www-authenticate') ?? '') ? ' (insufficient_scope)' : '';
      cells.push(`${res.status}${got}${changed}${challenge}`);
    }
    console.log(`| ${c.name} | ${cells.join(' | ')} |`);
  }
  await h.svcAuth!.stop('SIGKILL');
  const down: string[] = [];
  for (const p of proxies) down.push(String((await rawRequest(h.ports[p], { target: ds, headers: [['Authorization', `Bearer ${tokens.dataset}`]], host: HOST })).status));
  console.log(`| svc-auth stopped: closed dataset, Bearer | ${down.join(' | ')} |`);
} finally {
  await h.stop();
}
