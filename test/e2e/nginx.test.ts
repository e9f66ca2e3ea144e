/**
 * svc-auth end to end through a real nginx (docs/access-rules.md, docs/architecture.md "The real components the tests run"): two
 * nginx configurations, one mirroring ingress-nginx's `auth-url`, one the original's `auth_request
 * /authorize`, in front of a static WAF tree and a stand-in OGC API. Every request goes over a raw socket,
 * so attack paths reach nginx byte for byte. Tokens are generated per run and never appear in a test name
 * or a failure message.
 */
import { describe, it, expect, beforeAll, afterAll, jest } from '@jest/globals';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { API, DATASET, TOPIC, WAF, type WafFile } from './support/fixtures.js';
import { Harness, makeTokens, type TokenName } from './support/harness.js';
import { nginxPlan } from './support/nginx.js';
import { header, rawRequest, type RawResponse } from './support/net.js';
import { sleep, waitUntil } from '../support/wait.js';
import { OAPI_MARKER } from './support/oapi-standin.js';
import { manifestFile, removeScope, rewriteScopeInPlace, tokenRecord, writeScopeAtomically } from './support/scopes.js';
import { dumpManifests, newProtectedScope, scopeObjectName } from '../../core/index.js';

jest.setTimeout(60_000);

const plan = nginxPlan();
if (plan.action === 'skip') console.warn(`e2e nginx suite skipped (SVC_E2E_SKIP_NGINX=1): ${plan.message}`);
const suite = plan.action === 'skip' ? describe.skip : describe;

const tokens = makeTokens();
let h: Harness;

type Config = 'ingress' | 'original' | 'uriOnly' | 'customErrors';
const CONFIGS: readonly [string, Config][] = [
  ['ingress-nginx auth-url (/authz/auth-request, X-Original-URL)', 'ingress'],
  ['original shape (/authorize, X-Original-URI)', 'original'],
  ['the common auth_request recipe (/authz/auth-request, only X-Original-URI set, nothing cleared)', 'uriOnly'],
];
/** Configs whose auth location does not state the original method: svc-auth governs it as unsafe. */
const METHOD_UNSTATED: readonly Config[] = ['uriOnly'];

type Marker = WafFile | 'oapi';
type Via = 'bearer' | 'query' | 'basic';

interface Req {
  readonly method?: string;
  readonly target: string;
  readonly body?: string;
  readonly headers?: readonly (readonly [string, string])[];
  readonly host?: string | null;
  readonly version?: string;
}

function markerText(m: Marker): string {
  return m === 'oapi' ? OAPI_MARKER : h.waf.markers[m];
}

function withQueryToken(target: string, token: string): string {
  return `${target}${target.includes('?') ? '&' : '?'}token=${token}`;
}

/** Sends a request through one nginx config, with a token carried one way; tokens stay inside. */
function send(config: Config, req: Req, token?: { name: TokenName; via: Via }): Promise<RawResponse> {
  let target = req.target;
  const headers = [...(req.headers ?? [])];
  if (token) {
    const value = tokens[token.name];
    if (token.via === 'query') target = withQueryToken(target, value);
    else if (token.via === 'bearer') headers.push(['Authorization', `Bearer ${value}`]);
    else headers.push(['Authorization', `Basic ${Buffer.from(`svc:${value}`).toString('base64')}`]);
  }
  const port = h.ports[config];
  return rawRequest(port, { method: req.method ?? 'GET', target, headers, body: req.body, host: req.host, version: req.version });
}

function served(res: RawResponse, m: Marker): boolean {
  return res.body.includes(markerText(m));
}

// --- what the suite requests -------------------------------------------------------------------------

interface Closed extends Req {
  readonly name: string;
  readonly token: TokenName;
  readonly marker: Marker;
  readonly waf: boolean;
  /** HEAD: nothing to look for in the body; the status says it all. */
  readonly noBody?: boolean;
}

const JSON_BODY = '{"inputs":{"data":"x"}}';
const jsonHeaders = [['Content-Type', 'application/json']] as const;

const CLOSED: readonly Closed[] = [
  { name: 'WAF file of a closed topic', target: WAF.topicFile, token: 'topic', marker: 'topicFile', waf: true },
  { name: 'WAF file of a closed dataset', target: WAF.datasetFile, token: 'dataset', marker: 'datasetFile', waf: true },
  { name: 'WAF HEAD of a closed topic file', method: 'HEAD', target: WAF.topicFile, token: 'topic', marker: 'topicFile', waf: true, noBody: true },
  { name: 'WAF file of a sub-dataset (extends the id at ":")', target: WAF.datasetChildFile, token: 'dataset', marker: 'datasetChildFile', waf: true },
  { name: 'API items of a closed dataset collection', target: API.datasetItems, token: 'dataset', marker: 'oapi', waf: false },
  { name: 'API items of a collection under a closed topic', target: API.topicItems, token: 'topic', marker: 'oapi', waf: false },
  { name: 'process execution (POST)', method: 'POST', target: API.execution, body: JSON_BODY, headers: jsonHeaders, token: 'processes', marker: 'oapi', waf: false },
  { name: 'process description (GET is governed too)', target: '/oapi/processes/svc-synop2bufr', token: 'processes', marker: 'oapi', waf: false },
  { name: 'stations write (POST)', method: 'POST', target: API.stationsItems, body: JSON_BODY, headers: jsonHeaders, token: 'stations', marker: 'oapi', waf: false },
  { name: 'stations write (PUT)', method: 'PUT', target: API.station, body: JSON_BODY, headers: jsonHeaders, token: 'stations', marker: 'oapi', waf: false },
  { name: 'stations write (PATCH)', method: 'PATCH', target: API.station, body: JSON_BODY, headers: jsonHeaders, token: 'stations', marker: 'oapi', waf: false },
  { name: 'stations write (DELETE)', method: 'DELETE', target: API.station, token: 'stations', marker: 'oapi', waf: false },
];

/** Whose token is "another scope's": a valid token that this resource's scope does not list. */
const anotherScopeToken = (c: Closed): TokenName => (c.token === 'dataset' ? 'topic' : 'dataset');

interface Open extends Req {
  readonly name: string;
  readonly marker: Marker | null;
  /** Open only for a stated safe method: where the proxy does not state it, governed (401). */
  readonly safeMethod?: true;
}

const OPEN: readonly Open[] = [
  { name: 'WAF file of an open topic', target: WAF.openTopicFile, marker: 'openTopicFile' },
  { name: 'WAF level core2 is not under topic ...data.core', target: WAF.boundaryTopicFile, marker: 'boundaryTopicFile' },
  { name: 'WAF dataset obs2 is not under dataset ...:obs', target: WAF.boundaryDatasetFile, marker: 'boundaryDatasetFile' },
  { name: 'WAF discovery metadata is always open (even naming a closed dataset)', target: WAF.metadataFile, marker: 'metadataFile' },
  { name: 'WAF open file with a closed topic path in its query', target: `${WAF.openTopicFile}?x=/origin/a/wis2/mw-met/data/core/weather/`, marker: 'openTopicFile' },
  { name: 'API items of an open collection', target: API.openItems, marker: 'oapi' },
  { name: 'API items of collection obs2 (not under ...:obs)', target: API.boundaryDatasetItems, marker: 'oapi' },
  { name: 'API open collection with ?q=stations is not a stations write', method: 'POST', target: `${API.openItems}?q=stations`, body: JSON_BODY, headers: jsonHeaders, marker: 'oapi' },
  { name: 'API open collection with a closed id in its query', target: `${API.openItems}?q=urn:wmo:md:mw-met:obs`, marker: 'oapi' },
  { name: 'API discovery-metadata collection (GET)', target: API.discoveryItems, marker: 'oapi' },
  { name: 'stations GET', target: API.stationsItems, marker: 'oapi', safeMethod: true },
  { name: 'stations item GET', target: API.station, marker: 'oapi', safeMethod: true },
  { name: 'stations HEAD', method: 'HEAD', target: API.stationsItems, marker: null, safeMethod: true },
  { name: 'stations OPTIONS', method: 'OPTIONS', target: API.stationsItems, marker: 'oapi', safeMethod: true },
  { name: 'process execution OPTIONS (CORS preflight)', method: 'OPTIONS', target: API.execution, marker: 'oapi', safeMethod: true },
];

interface Attack extends Req {
  readonly name: string;
  readonly marker: Marker;
  /** Sent as Bearer: an attacker holding a valid token of another scope. */
  readonly token?: TokenName;
  /**
   * When nginx itself resolves the request to this open file (it drops a fragment, say), a 200 with that
   * file's content is the right answer; otherwise any 200 fails.
   */
  readonly nginxServesOpen?: WafFile;
  /**
   * Configs where the attack cannot be refused by svc-auth: the auth location neither sets nor clears the
   * header the attack forges, so svc-auth cannot tell the client's value from the proxy's. The docs say
   * every auth location must set or clear it; the attack is not run there.
   */
  readonly believedIn?: readonly Config[];
}

const T = WAF.topicFile; // /data/2026-11-21/wis/origin/a/wis2/mw-met/data/core/weather/x.bufr4
const OPEN_DIR = WAF.openTopicDir; // .../mw-met/data/recommended
const LEVELS = '/data/2026-11-21/wis/origin/a/wis2/mw-met/data'; // parent of core and recommended
const FROM_DAY = '2026-11-21/wis/origin/a/wis2/mw-met/data/core/weather/x.bufr4';
const post = { method: 'POST', body: JSON_BODY, headers: jsonHeaders } as const;

const WAF_ATTACKS: readonly Attack[] = [
  // dot segments
  { name: '../ from an open level', target: `${OPEN_DIR}/../core/weather/x.bufr4`, marker: 'topicFile' },
  { name: '%2e%2e from an open level', target: `${OPEN_DIR}/%2e%2e/core/weather/x.bufr4`, marker: 'topicFile' },
  { name: '%2E%2E from an open level', target: `${OPEN_DIR}/%2E%2E/core/weather/x.bufr4`, marker: 'topicFile' },
  { name: '.%2e from an open level', target: `${OPEN_DIR}/.%2e/core/weather/x.bufr4`, marker: 'topicFile' },
  { name: '%2e. from an open level', target: `${OPEN_DIR}/%2e./core/weather/x.bufr4`, marker: 'topicFile' },
  { name: '../ out of /data/metadata (always open)', target: `/data/metadata/../${FROM_DAY}`, marker: 'topicFile' },
  { name: '%2e%2e out of /data/metadata', target: `/data/metadata/%2e%2e/${FROM_DAY}`, marker: 'topicFile' },
  { name: '.. above the root', target: `/data/../../data/${FROM_DAY}`, marker: 'topicFile' },
  { name: '../ from an open dataset dir', target: `/data/2026-11-21/wis/urn:wmo:md:mw-met:obs2/../urn:wmo:md:mw-met:obs/x.bufr4`, marker: 'datasetFile' },
  // encoded slashes
  { name: '%2F joining two levels', target: `${LEVELS}%2Fcore/weather/x.bufr4`, marker: 'topicFile' },
  { name: '%2f for every slash below /data', target: `/data/${FROM_DAY.replaceAll('/', '%2f')}`, marker: 'topicFile' },
  { name: '..%2F from an open level', target: `${OPEN_DIR}/..%2Fcore/weather/x.bufr4`, marker: 'topicFile' },
  { name: 'metadata%2F..%2F (open prefix, then up)', target: `/data/metadata%2F..%2F${FROM_DAY}`, marker: 'topicFile' },
  // backslashes
  { name: 'raw backslash ..\\ from an open level', target: `${OPEN_DIR}/..\\core/weather/x.bufr4`, marker: 'topicFile' },
  { name: 'raw backslashes as separators', target: `${OPEN_DIR}\\..\\core\\weather\\x.bufr4`, marker: 'topicFile' },
  { name: '%5C as a separator', target: `${OPEN_DIR}/..%5Ccore/weather/x.bufr4`, marker: 'topicFile' },
  // doubled slashes and /./
  { name: 'doubled slashes everywhere', target: `/data//2026-11-21//wis/origin/a/wis2/mw-met/data//core//weather//x.bufr4`, marker: 'topicFile' },
  { name: 'leading //data', target: `//data/${FROM_DAY}`, marker: 'topicFile' },
  { name: '/./ segments', target: `/data/./2026-11-21/./wis/origin/a/wis2/mw-met/data/./core/weather/./x.bufr4`, marker: 'topicFile' },
  { name: '/%2e/ segments', target: `/data/%2e/${FROM_DAY}`, marker: 'topicFile' },
  { name: '/data/metadata/./../ ', target: `/data/metadata/./../${FROM_DAY}`, marker: 'topicFile' },
  // double encoding and single-encoded names
  { name: '%252e%252e (double-encoded dots)', target: `${OPEN_DIR}/%252e%252e/core/weather/x.bufr4`, marker: 'topicFile' },
  { name: '%252F (double-encoded slash)', target: `${LEVELS}%252Fcore/weather/x.bufr4`, marker: 'topicFile' },
  { name: 'percent-encoded level name %63ore', target: `${LEVELS}/%63ore/weather/x.bufr4`, marker: 'topicFile' },
  { name: 'percent-encoded dataset id (%3A)', target: `/data/2026-11-21/wis/urn%3Awmo%3Amd%3Amw-met%3Aobs/x.bufr4`, marker: 'datasetFile' },
  // ; path parameters
  { name: '..;/ from an open level', target: `${OPEN_DIR}/..;/core/weather/x.bufr4`, marker: 'topicFile' },
  { name: ';param on a level', target: `${LEVELS}/core;v=1/weather/x.bufr4`, marker: 'topicFile' },
  { name: ';param on the file', target: `${T};.json`, marker: 'topicFile' },
  { name: '/data/metadata;/../', target: `/data/metadata;/../${FROM_DAY}`, marker: 'topicFile' },
  // NUL and newline
  { name: '%00 after the file name', target: `${T}%00`, marker: 'topicFile' },
  { name: '%00.json after the file name', target: `${T}%00.json`, marker: 'topicFile' },
  { name: '%00 in an open level, then ../', target: `${OPEN_DIR}%00/../core/weather/x.bufr4`, marker: 'topicFile' },
  { name: '%0a after the file name', target: `${T}%0a`, marker: 'topicFile' },
  { name: '%0a in an open level, then ../', target: `${OPEN_DIR}%0a/../core/weather/x.bufr4`, marker: 'topicFile' },
  { name: '%0d%0a header injection in the path', target: `${T}%0d%0aX-Original-URL:%20/data/metadata/x`, marker: 'topicFile' },
  // query and fragment
  { name: 'closed file with ?q=metadata', target: `${T}?q=metadata`, marker: 'topicFile' },
  { name: 'closed file with an open path as its query', target: `${T}?/data/metadata/`, marker: 'topicFile' },
  { name: 'closed file with an empty token parameter', target: `${T}?token=&x=1`, marker: 'topicFile' },
  { name: 'open file, then #, then ../ to the closed file', target: `${WAF.openTopicFile}#/../../../core/weather/x.bufr4`, marker: 'topicFile', nginxServesOpen: 'openTopicFile' },
  // spoofed headers, no token
  { name: 'spoofed X-Forwarded-Uri (open file)', target: T, headers: [['X-Forwarded-Uri', WAF.openTopicFile], ['X-Forwarded-Method', 'GET']], marker: 'topicFile' },
  { name: 'spoofed X-Original-URI (open file)', target: T, headers: [['X-Original-URI', WAF.openTopicFile]], marker: 'topicFile' },
  { name: 'spoofed X-Original-URL (open file)', target: T, headers: [['X-Original-URL', `http://127.0.0.1${WAF.openTopicFile}`]], marker: 'topicFile' },
  { name: 'spoofed X-Rewrite-URL / X-Envoy-Original-Path', target: T, headers: [['X-Rewrite-URL', WAF.openTopicFile], ['X-Envoy-Original-Path', WAF.openTopicFile]], marker: 'topicFile' },
  // request-line and Host tricks
  { name: 'absolute-form request target', target: `http://127.0.0.1${T}`, marker: 'topicFile' },
  { name: 'HTTP/1.0 without Host', target: T, host: null, version: 'HTTP/1.0', marker: 'topicFile' },
  { name: 'Host ending in ? (X-Original-URL is built from $http_host)', target: T, host: '127.0.0.1?', marker: 'topicFile' },
  { name: 'Host ending in # (X-Original-URL is built from $http_host)', target: T, host: '127.0.0.1#', marker: 'topicFile' },
  { name: 'Host with a path (X-Original-URL is built from $http_host)', target: T, host: '127.0.0.1/data/metadata/x?', marker: 'topicFile' },
  // another scope's token
  { name: 'dataset token, ../ from the dataset dir into the topic', target: `/data/2026-11-21/wis/urn:wmo:md:mw-met:obs/../origin/a/wis2/mw-met/data/core/weather/x.bufr4`, token: 'dataset', marker: 'topicFile' },
  { name: 'dataset token, ..%2F from the dataset dir into the topic', target: `/data/2026-11-21/wis/urn:wmo:md:mw-met:obs/..%2Forigin/a/wis2/mw-met/data/core/weather/x.bufr4`, token: 'dataset', marker: 'topicFile' },
  { name: 'topic token, closed dataset nested under the topic path', target: `${T}/../../../../../../../../urn:wmo:md:mw-met:obs/x.bufr4`, token: 'topic', marker: 'datasetFile' },
];

const DS = 'urn:wmo:md:mw-met:obs';
const API_ATTACKS: readonly Attack[] = [
  { name: 'API ../ from an open collection', target: `/oapi/collections/urn:wmo:md:mw-met:public/../${DS}/items`, marker: 'oapi' },
  { name: 'API %2e%2e from an open collection', target: `/oapi/collections/urn:wmo:md:mw-met:public/%2e%2e/${DS}/items`, marker: 'oapi' },
  { name: 'API ../ out of discovery-metadata', target: `/oapi/collections/discovery-metadata/../${DS}/items`, marker: 'oapi' },
  { name: 'API discovery-metadata%2F..%2F', target: `/oapi/collections/discovery-metadata%2F..%2F${DS}/items`, marker: 'oapi' },
  { name: 'API id with %3A', target: `/oapi/collections/urn:wmo:md:mw-met%3Aobs/items`, marker: 'oapi' },
  { name: 'API id fully percent-encoded', target: `/oapi/collections/urn%3Awmo%3Amd%3Amw-met%3Aobs/items`, marker: 'oapi' },
  { name: 'API id with an encoded letter', target: `/oapi/collections/%75rn:wmo:md:mw-met:obs/items`, marker: 'oapi' },
  { name: 'API topic id with %2E', target: `/oapi/collections/origin%2Ea%2Ewis2%2Emw-met%2Edata%2Ecore%2Eweather/items`, marker: 'oapi' },
  { name: 'API id with ;param', target: `/oapi/collections/${DS};x/items`, marker: 'oapi' },
  { name: 'API id with %00', target: `/oapi/collections/${DS}%00/items`, marker: 'oapi' },
  { name: 'API id with %0a', target: `/oapi/collections/${DS}%0a/items`, marker: 'oapi' },
  { name: 'API id with a raw backslash', target: `/oapi/collections/x\\..\\${DS}/items`, marker: 'oapi' },
  { name: 'API id with %252e', target: `/oapi/collections/x/%252e%252e/${DS}/items`, marker: 'oapi' },
  { name: 'API doubled slashes', target: `/oapi//collections//${DS}//items`, marker: 'oapi' },
  { name: 'API /./ segments', target: `/oapi/./collections/./${DS}/items`, marker: 'oapi' },
  { name: 'API closed collection with ?q=stations', target: `${API.datasetItems}?q=stations`, marker: 'oapi' },
  { name: 'API closed collection with ?f=json', target: `${API.datasetItems}?f=json`, marker: 'oapi' },
  { name: 'API closed collection with discovery-metadata in its query', target: `/oapi/collections/${DS}?collections/discovery-metadata`, marker: 'oapi' },
  { name: 'API closed collection, spoofed X-Forwarded-Uri', target: API.datasetItems, headers: [['X-Forwarded-Uri', API.openItems]], marker: 'oapi' },
  { name: 'API closed collection, spoofed X-Original-URI', target: API.datasetItems, headers: [['X-Original-URI', API.openItems]], marker: 'oapi' },
  // processes
  { name: 'execution with an encoded dash (svc%2Dsynop2bufr)', ...post, target: '/oapi/processes/svc%2Dsynop2bufr/execution', marker: 'oapi' },
  { name: 'execution with an encoded letter (%73vc-...)', ...post, target: '/oapi/processes/%73vc-synop2bufr/execution', marker: 'oapi' },
  { name: 'execution via svcx/../', ...post, target: '/oapi/processes/svcx/../svc-synop2bufr/execution', marker: 'oapi' },
  { name: 'execution with doubled slashes', ...post, target: '/oapi//processes//svc-synop2bufr/execution', marker: 'oapi' },
  { name: 'execution with ;param on the id', ...post, target: '/oapi/processes/svc-synop2bufr;/execution', marker: 'oapi' },
  { name: 'execution with %2F before execution', ...post, target: '/oapi/processes/svc-synop2bufr%2Fexecution', marker: 'oapi' },
  { name: 'execution with ?q=svcx', ...post, target: `${API.execution}?q=svcx`, marker: 'oapi' },
  { name: 'execution with a spoofed X-Forwarded-Uri', ...post, target: API.execution, headers: [...jsonHeaders, ['X-Forwarded-Uri', API.boundaryExecution]], marker: 'oapi' },
  // stations writes
  { name: 'stations POST with an encoded letter (%73tations)', ...post, target: '/oapi/collections/%73tations/items', marker: 'oapi' },
  { name: 'stations POST with stations%2Fitems', ...post, target: '/oapi/collections/stations%2Fitems', marker: 'oapi' },
  { name: 'stations POST via /./', ...post, target: '/oapi/collections/./stations/items', marker: 'oapi' },
  { name: 'stations POST with doubled slashes', ...post, target: '/oapi//collections//stations/items', marker: 'oapi' },
  { name: 'stations POST via x/../', ...post, target: '/oapi/collections/x/../stations/items', marker: 'oapi' },
  { name: 'stations POST via discovery-metadata/../', ...post, target: '/oapi/collections/discovery-metadata/../stations/items', marker: 'oapi' },
  { name: 'stations POST with ?q=public', ...post, target: `${API.stationsItems}?q=public`, marker: 'oapi' },
  { name: 'stations POST, spoofed X-Original-Method: GET', ...post, target: API.stationsItems, headers: [...jsonHeaders, ['X-Original-Method', 'GET']], marker: 'oapi', believedIn: ['uriOnly'] },
  { name: 'stations POST, spoofed X-Api-Http-Method: GET', ...post, target: API.stationsItems, headers: [...jsonHeaders, ['X-Api-Http-Method', 'GET']], marker: 'oapi' },
  { name: 'stations POST, spoofed X-Forwarded-Method: GET', ...post, target: API.stationsItems, headers: [...jsonHeaders, ['X-Forwarded-Method', 'GET']], marker: 'oapi' },
  { name: 'stations POST, X-HTTP-Method-Override: GET', ...post, target: API.stationsItems, headers: [...jsonHeaders, ['X-HTTP-Method-Override', 'GET']], marker: 'oapi' },
  { name: 'stations write with an unknown method', method: 'FROB', target: API.stationsItems, marker: 'oapi' },
  { name: 'stations write with a lower-case method', ...post, method: 'post', target: API.stationsItems, marker: 'oapi' },
  // another scope's token
  { name: 'dataset token, API ../ into a topic collection', target: `/oapi/collections/${DS}/../origin.a.wis2.mw-met.data.core.weather/items`, token: 'dataset', marker: 'oapi' },
  { name: 'processes token, stations POST via processes/svc-x/../../', ...post, target: '/oapi/processes/svc-x/../../collections/stations/items', token: 'processes', marker: 'oapi' },
  { name: 'stations token, execution via collections/stations/../../', ...post, target: '/oapi/collections/stations/../../processes/svc-synop2bufr/execution', token: 'stations', marker: 'oapi' },
];

// Ambiguous or broken input fails closed (docs/access-rules.md): target headers that disagree (the spoofed
// X-Original-URL above, through the recipe that does not clear it), method overrides, case variants, `#`.
const FAIL_CLOSED_ATTACKS: readonly Attack[] = [
  { name: 'case variant: a topic level in upper case', target: T.replace('/origin/a/', '/Origin/A/'), marker: 'topicFile' },
  { name: 'case variant: a dataset id in upper case', target: `/oapi/collections/${DS.toUpperCase()}/items`, marker: 'oapi' },
  { name: 'case variant: STATIONS write', ...post, target: '/oapi/collections/STATIONS/items', marker: 'oapi' },
  { name: 'case variant: SVC-synop2bufr execution', ...post, target: '/oapi/processes/SVC-synop2bufr/execution', marker: 'oapi' },
  { name: 'case variant: the API prefix and resource (/oapi/Processes/Svc-...)', ...post, target: '/oapi/Processes/Svc-synop2bufr/execution', marker: 'oapi' },
  { name: 'stations GET with X-HTTP-Method-Override: DELETE', target: API.station, headers: [['X-HTTP-Method-Override', 'DELETE']], marker: 'oapi' },
  { name: 'stations GET with X-HTTP-Method: PUT', target: API.station, headers: [['X-HTTP-Method', 'PUT']], marker: 'oapi' },
  { name: 'stations GET with X-Method-Override: PATCH', target: API.station, headers: [['X-Method-Override', 'PATCH']], marker: 'oapi' },
  { name: 'stations write with a # in the target', ...post, target: `${API.stationsItems}#x`, marker: 'oapi' },
  { name: 'closed file with a # and a token after it', target: `${T}#?token=x`, marker: 'topicFile' },
  { name: 'spoofed X-Original-URL and X-Original-URI, both open', target: T, headers: [['X-Original-URL', `http://127.0.0.1${WAF.openTopicFile}`], ['X-Original-URI', WAF.openTopicFile]], marker: 'topicFile' },
  { name: 'an empty X-Original-URL copy, then a forged one', target: T, headers: [['X-Original-URL', ''], ['X-Original-URL', `http://127.0.0.1${WAF.openTopicFile}`]], marker: 'topicFile' },
];

const ATTACKS = [...WAF_ATTACKS, ...API_ATTACKS, ...FAIL_CLOSED_ATTACKS];

// --- the suite -----------------------------------------------------------------------------------------

suite('svc-auth through a real nginx', () => {
  beforeAll(async () => {
    h = await Harness.start(plan, tokens);
  }, 600_000);

  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  describe.each(CONFIGS)('%s', (_label, config) => {
    describe('open data needs no token', () => {
      it.each(OPEN.map((o) => [o.name, o] as const))('%s → 200 (401 where a safe method is needed and not stated)', async (_n, o) => {
        const res = await send(config, o);
        if (o.safeMethod && METHOD_UNSTATED.includes(config)) {
          expect(res.status).toBe(401);
          if (o.marker !== null) expect(served(res, o.marker)).toBe(false);
          return;
        }
        expect(res.status).toBe(200);
        if (o.marker !== null) expect(served(res, o.marker)).toBe(true);
      });
    });

    describe.each(CLOSED.map((c) => [c.name, c] as const))('closed: %s', (_n, c) => {
      it('no token → 401 with the Bearer challenge (and Basic on WAF paths)', async () => {
        const res = await send(config, c);
        expect(res.status).toBe(401);
        expect(served(res, c.marker)).toBe(false);
        const challenge = header(res, 'www-authenticate') ?? '';
        expect(challenge).toContain('Bearer realm="svc"');
        // nginx passes one WWW-Authenticate header of an auth_request answer on (1.22, Debian bookworm):
        // both challenges must reach the client in it
        if (c.waf) expect(challenge).toMatch(/Basic realm="svc"/);
        else expect(challenge).not.toMatch(/basic/i);
      });

      it.each([['Bearer header', 'bearer'], ['?token= query argument', 'query'], ['Basic password', 'basic']] as const)(
        'its own token in the %s → 200 with the content',
        async (_v, via) => {
          const res = await send(config, c, { name: c.token, via });
          expect(res.status).toBe(200);
          expect(served(res, c.marker)).toBe(!c.noBody);
        },
      );

      it.each([['Bearer header', 'bearer'], ['?token= query argument', 'query']] as const)('another scope’s token in the %s → 403', async (_v, via) => {
        const res = await send(config, c, { name: anotherScopeToken(c), via });
        expect(res.status).toBe(403);
        expect(served(res, c.marker)).toBe(false);
      });

      it.each([['an unknown token', 'unknown'], ['a token with a bad checksum', 'badChecksum']] as const)('%s → 401 invalid_token', async (_v, name) => {
        const res = await send(config, c, { name, via: 'bearer' });
        expect(res.status).toBe(401);
        expect(served(res, c.marker)).toBe(false);
        expect(header(res, 'www-authenticate') ?? '').toContain('invalid_token');
      });
    });

    it('a process no path scope covers (svcx is not under processes/svc) is closed by default: 401, and 403 with another scope’s token', async () => {
      const req = { method: 'POST', target: API.boundaryExecution, body: JSON_BODY, headers: jsonHeaders };
      const none = await send(config, req);
      expect(none.status).toBe(401);
      expect(served(none, 'oapi')).toBe(false);
      expect(header(none, 'www-authenticate') ?? '').toContain('Bearer realm="svc"');
      const other = await send(config, req, { name: 'processes', via: 'bearer' });
      expect(other.status).toBe(403);
      expect(served(other, 'oapi')).toBe(false);
    });

    it('an expired token of the scope → 401', async () => {
      const res = await send(config, { target: WAF.topicFile }, { name: 'expired', via: 'bearer' });
      expect(res.status).toBe(401);
      expect(served(res, 'topicFile')).toBe(false);
    });

    it('the Bearer scheme is case-insensitive', async () => {
      const res = await send(config, { target: WAF.topicFile, headers: [['Authorization', `bEARER ${tokens.topic}`]] });
      expect(res.status).toBe(200);
      expect(served(res, 'topicFile')).toBe(true);
    });

    it('the query token wins over the header (valid query, bogus header) → 200', async () => {
      const res = await send(config, { target: withQueryToken(WAF.topicFile, tokens.topic), headers: [['Authorization', 'Bearer not-a-token']] });
      expect(res.status).toBe(200);
      expect(served(res, 'topicFile')).toBe(true);
    });

    describe('normalization attacks never get the protected content', () => {
      it.each(ATTACKS.filter((a) => !a.believedIn?.includes(config)).map((a) => [a.name, a] as const))('%s', async (_n, a) => {
        const res = await send(config, a, a.token ? { name: a.token, via: 'bearer' } : undefined);
        expect(served(res, a.marker)).toBe(false);
        if (a.nginxServesOpen !== undefined && res.status === 200) {
          expect(served(res, a.nginxServesOpen)).toBe(true);
        } else {
          expect(res.status).not.toBe(200);
          // Refused by nginx (400) or by svc-auth (401/403). auth_request runs before the file lookup, so a
          // 404 or a backend answer would mean svc-auth let a request for a closed scope through, even where
          // this nginx happens to find nothing behind it (a backend that decodes twice would).
          expect([400, 401, 403]).toContain(res.status);
        }
      });
    });
  });

  describe('ingress-nginx with custom-http-errors 401,403 and an error backend answering 200 (CVE-2026-24513 regression)', () => {
    const cases: readonly [string, Req, { name: TokenName; via: Via } | undefined][] = [
      ['no token', { target: WAF.topicFile }, undefined],
      ['another scope’s token', { target: WAF.topicFile }, { name: 'dataset', via: 'bearer' }],
      ['an unknown token', { target: WAF.topicFile }, { name: 'unknown', via: 'query' }],
      ['../ from an open level', { target: `${OPEN_DIR}/../core/weather/x.bufr4` }, undefined],
      ['%2F joining two levels', { target: `${LEVELS}%2Fcore/weather/x.bufr4` }, undefined],
    ];
    it.each(cases)('%s: the error page at most, never the protected file', async (_n, req, token) => {
      const res = await send('customErrors', req, token);
      expect(served(res, 'topicFile')).toBe(false);
      // a 200 here is the error backend's own page, nothing else
      if (res.status === 200) expect(served(res, 'oapi')).toBe(true);
    });

    it('its own token still gets the file', async () => {
      const res = await send('customErrors', { target: WAF.topicFile }, { name: 'topic', via: 'bearer' });
      expect(res.status).toBe(200);
      expect(served(res, 'topicFile')).toBe(true);
    });
  });

  describe('revocation by editing the scopes directory', () => {
    const topicFile: Req = { target: WAF.topicFile };

    /** Polls both configs until a request answers `want` (bounded), then checks it holds on both. */
    async function until(req: Req, token: { name: TokenName; via: Via } | undefined, want: number, withinMs = 15_000): Promise<void> {
      const both = async () => (await Promise.all([send('ingress', req, token), send('original', req, token)])).map((r) => r.status);
      let last: number[] = [];
      await waitUntil(async () => (last = await both()).every((s) => s === want), { what: `${req.target} to answer ${want} on both configs`, timeoutMs: withinMs })
        .catch(() => undefined); // the expect below says what was seen
      expect(last).toEqual([want, want]);
    }

    it('replacing the topic’s token in place: the old one stops working, the new one works', async () => {
      expect((await send('ingress', topicFile, { name: 'topic', via: 'bearer' })).status).toBe(200);
      rewriteScopeInPlace(h.scopesDir, TOPIC, [tokenRecord(tokens.topicNext)]);
      await until(topicFile, { name: 'topic', via: 'bearer' }, 401);
      await until(topicFile, { name: 'topicNext', via: 'bearer' }, 200);
      await until(topicFile, undefined, 401);
    });

    it('deleting the manifest opens the topic', async () => {
      removeScope(h.scopesDir, TOPIC);
      await until(topicFile, undefined, 200);
      const res = await send('ingress', topicFile);
      expect(served(res, 'topicFile')).toBe(true);
    });

    it('writing it back (rename into place) closes it again', async () => {
      writeScopeAtomically(h.scopesDir, h.stagingDir, TOPIC, [tokenRecord(tokens.topic)]);
      await until(topicFile, undefined, 401);
      await until(topicFile, { name: 'topic', via: 'query' }, 200);
      await until(topicFile, { name: 'topicNext', via: 'bearer' }, 401);
    });

    it('a token moved to another scope answers 403 on the old one', async () => {
      writeScopeAtomically(h.scopesDir, h.stagingDir, DATASET, [tokenRecord(tokens.dataset), tokenRecord(tokens.topicNext)]);
      await until({ target: WAF.datasetFile }, { name: 'topicNext', via: 'bearer' }, 200);
      await until(topicFile, { name: 'topicNext', via: 'bearer' }, 403);
    });

    it('closed: true keeps a dataset closed with no token; clearing it opens the dataset', async () => {
      const embargo = { kind: 'dataset', value: 'urn:wmo:md:mw-met:obs2' } as const;
      const file = manifestFile(h.scopesDir, embargo);
      const object = newProtectedScope(embargo, scopeObjectName(embargo), undefined, []);
      writeFileSync(file, dumpManifests([{ ...object, spec: { ...object.spec, closed: true } }]));
      await until({ target: WAF.boundaryDatasetFile }, undefined, 401);
      await until({ target: WAF.boundaryDatasetFile }, { name: 'dataset', via: 'bearer' }, 403);
      writeFileSync(file, dumpManifests([object]));
      await until({ target: WAF.boundaryDatasetFile }, undefined, 200);
      removeScope(h.scopesDir, embargo);
    });

    it('a manifest broken mid-edit never opens the scope it held', async () => {
      const file = manifestFile(h.scopesDir, TOPIC);
      const good = readFileSync(file, 'utf8');
      writeFileSync(file, 'apiVersion: auth.svc.io/v1alpha1\nkind: ProtectedScope\nspec: [unclosed\n');
      try {
        await sleep(2000); // the watcher has seen it by now
        for (const config of ['ingress', 'original'] as const) {
          const res = await send(config, topicFile);
          expect(res.status).not.toBe(200);
          expect(served(res, 'topicFile')).toBe(false);
        }
      } finally {
        writeFileSync(file, good);
      }
      await until(topicFile, { name: 'topic', via: 'bearer' }, 200);
    });
  });

  describe('svc-auth down', () => {
    it('nginx never serves the protected file while svc-auth is stopped', async () => {
      await h.svcAuth!.stop('SIGKILL');
      for (const config of ['ingress', 'original'] as const) {
        for (const token of [undefined, { name: 'topic', via: 'bearer' } as const, { name: 'topic', via: 'query' } as const]) {
          const res = await send(config, { target: WAF.topicFile }, token);
          expect([500, 502, 503, 504]).toContain(res.status);
          expect(served(res, 'topicFile')).toBe(false);
        }
        const write = await send(config, { ...post, target: API.stationsItems }, { name: 'stations', via: 'bearer' });
        expect(write.status).not.toBe(200);
        expect(served(write, 'oapi')).toBe(false);
      }
    });

    it('restarted on a directory it cannot load (never ready): 403 through nginx for closed and open data alike', async () => {
      const broken = join(h.scopesDir, 'zz-broken.yaml');
      writeFileSync(broken, 'apiVersion: auth.svc.io/v1alpha1\nkind: ProtectedScope\nspec: [unclosed\n');
      try {
        await h.svcAuth!.start(60_000, 'healthz');
        await sleep(1000);
        expect(await h.svcAuth!.status('/readyz')).not.toBe(200);
        for (const config of ['ingress', 'original'] as const) {
          for (const token of [undefined, { name: 'topic', via: 'bearer' } as const]) {
            const res = await send(config, { target: WAF.topicFile }, token);
            expect(res.status).toBe(403);
            expect(served(res, 'topicFile')).toBe(false);
          }
          const open = await send(config, { target: WAF.openTopicFile });
          expect(open.status).toBe(403);
        }
      } finally {
        rmSync(broken, { force: true });
      }
    });

    it('once the directory loads, it serves again', async () => {
      await waitUntil(async () => (await h.svcAuth!.status('/readyz')) === 200, { what: 'svc-auth /readyz', timeoutMs: 15_000 }).catch(() => undefined);
      expect(await h.svcAuth!.status('/readyz')).toBe(200);
      for (const config of ['ingress', 'original'] as const) {
        const res = await send(config, { target: WAF.topicFile }, { name: 'topic', via: 'bearer' });
        expect(res.status).toBe(200);
        expect(served(res, 'topicFile')).toBe(true);
        expect((await send(config, { target: WAF.topicFile })).status).toBe(401);
        expect((await send(config, { target: WAF.openTopicFile })).status).toBe(200);
      }
    });

    it('stopped and started normally, it serves at once', async () => {
      await h.svcAuth!.stop();
      await h.svcAuth!.start();
      const res = await send('ingress', { target: WAF.topicFile }, { name: 'topic', via: 'query' });
      expect(res.status).toBe(200);
      expect(served(res, 'topicFile')).toBe(true);
    });
  });

  it('svc-auth’s output never contains a token', () => {
    const output = h.svcAuth!.output;
    const leaked = Object.values(tokens).filter((t) => output.includes(t)).length;
    expect(leaked).toBe(0);
  });
});
