import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Scope } from '../../../core/index.js';

/** The scopes the suite closes, and one more whose token is "another scope's token" everywhere. */
export const TOPIC: Scope = { kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' };
export const DATASET: Scope = { kind: 'dataset', value: 'urn:wmo:md:mw-met:obs' };
export const PROCESSES: Scope = { kind: 'path', value: 'processes/svc' };
export const STATIONS: Scope = { kind: 'path', value: 'collections/stations' };
export const OTHER: Scope = { kind: 'topic', value: 'origin.a.wis2.xx-met.data.core' };

const DAY = '/data/2026-11-21/wis';
/** WAF paths (as URLs; the tree on disk mirrors them). */
export const WAF = {
  topicFile: `${DAY}/origin/a/wis2/mw-met/data/core/weather/x.bufr4`,
  topicDir: `${DAY}/origin/a/wis2/mw-met/data/core`,
  openTopicFile: `${DAY}/origin/a/wis2/mw-met/data/recommended/weather/y.bufr4`,
  openTopicDir: `${DAY}/origin/a/wis2/mw-met/data/recommended`,
  boundaryTopicFile: `${DAY}/origin/a/wis2/mw-met/data/core2/weather/z.bufr4`,
  datasetFile: `${DAY}/urn:wmo:md:mw-met:obs/x.bufr4`,
  datasetChildFile: `${DAY}/urn:wmo:md:mw-met:obs:hourly/x.bufr4`,
  boundaryDatasetFile: `${DAY}/urn:wmo:md:mw-met:obs2/x.bufr4`,
  metadataFile: '/data/metadata/urn:wmo:md:mw-met:obs.json',
} as const;

export type WafFile = keyof typeof WAF;

/** A unique marker per file, so a test can tell the protected content from anything else nginx sends. */
export interface WafTree {
  readonly root: string;
  readonly markers: Readonly<Record<WafFile, string>>;
}

export function buildWafTree(root: string): WafTree {
  const run = randomBytes(4).toString('hex');
  const markers = {} as Record<WafFile, string>;
  for (const [name, url] of Object.entries(WAF) as [WafFile, string][]) {
    markers[name] = `waf-body-${name}-${run}`;
    if (name.endsWith('Dir')) continue;
    const file = join(root, url);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${markers[name]}\n`);
  }
  // nginx's workers run unprivileged when the master is root: they must be able to read the tree.
  chmodTree(root);
  return { root, markers };
}

function chmodTree(root: string): void {
  let dir = root;
  // make the temp dir (mode 0700 from mkdtemp) and its parents traversable
  for (let i = 0; i < 3; i++) {
    chmodSync(dir, 0o755);
    dir = dirname(dir);
    if (dir === '/' || dir === '/tmp') break;
  }
}

/** The API requests the suite checks (paths under /oapi). */
export const API = {
  datasetItems: '/oapi/collections/urn:wmo:md:mw-met:obs/items',
  topicItems: '/oapi/collections/origin.a.wis2.mw-met.data.core.weather/items',
  openItems: '/oapi/collections/urn:wmo:md:mw-met:public/items',
  boundaryDatasetItems: '/oapi/collections/urn:wmo:md:mw-met:obs2/items',
  discoveryItems: '/oapi/collections/discovery-metadata/items',
  execution: '/oapi/processes/svc-synop2bufr/execution',
  boundaryExecution: '/oapi/processes/svcx/execution',
  stationsItems: '/oapi/collections/stations/items',
  station: '/oapi/collections/stations/items/0-454-2-AWSNAMITAMBO',
} as const;
