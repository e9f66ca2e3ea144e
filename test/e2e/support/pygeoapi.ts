import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump as yamlDump } from 'js-yaml';
import { Supervised } from '../../support/process.js';
import { ensureVenv, type PyTool } from './pyvenv.js';

/**
 * A real pygeoapi (OGC API - Features and Processes) from PyPI, configured like a wis2box behind
 * `/oapi`: collections whose ids are a topic hierarchy and metadata URNs, a `stations` collection on an
 * editable TinyDB provider (POST/PUT/DELETE really change its file), and processes registered under the
 * ids svc-auth governs, each pygeoapi's own HelloWorld processor.
 *
 * 0.21.0 is the newest pygeoapi that installs on Debian 12's Python 3.11 (0.22+ needs Python 3.12).
 */
export const PYGEOAPI: PyTool = { name: 'pygeoapi', version: '0.21.0', requirements: ['pygeoapi==0.21.0'] };

/** Collections served: the ids are what svc-auth matches (docs/access-rules.md). */
export const COLLECTIONS = {
  topic: 'origin.a.wis2.mw-met.data.core.weather',
  dataset: 'urn:wmo:md:mw-met:obs',
  open: 'urn:wmo:md:mw-met:public',
  boundaryDataset: 'urn:wmo:md:mw-met:obs2',
  discovery: 'discovery-metadata',
  stations: 'stations',
} as const;

/** Processes served, all HelloWorld: governed by processes/svc (svc-*), and two that are not (svcx, other-process). */
export const PROCESS_IDS = ['svc-synop2bufr', 'svc-csv2bufr', 'other-process', 'svcx'] as const;

/** Every observation feature carries its collection's marker, so a test tells its content from an error page. */
export function featureId(collection: string): string {
  return `obs-${collection.replace(/[^A-Za-z0-9]/g, '-')}-1`;
}

export const STATION_ID = '0-454-2-AWSNAMITAMBO';

function observations(collection: string, marker: string): object {
  return {
    type: 'FeatureCollection',
    features: [1, 2].map((n) => ({
      type: 'Feature',
      id: n === 1 ? featureId(collection) : `obs-${n}`,
      geometry: { type: 'Point', coordinates: [33.78 + n / 100, -13.97] },
      properties: { collection, marker, reportTime: '2026-11-21T00:00:00Z', air_temperature: 20 + n },
    })),
  };
}

/** TinyDB's JSON layout (table "_default", documents keyed by an integer id). */
function stationsDb(): object {
  const stations = [
    [STATION_ID, 'NAMITAMBO', 35.27, -15.6],
    ['0-454-2-AWSLOBI', 'LOBI', 34.63, -14.4],
  ] as const;
  const docs: Record<string, object> = {};
  stations.forEach(([id, name, x, y], i) => {
    docs[String(i + 1)] = { type: 'Feature', id, geometry: { type: 'Point', coordinates: [x, y] }, properties: { name, wigos_station_identifier: id } };
  });
  return { _default: docs };
}

export interface PygeoapiFiles {
  readonly config: string;
  readonly openapi: string;
  readonly stationsDb: string;
  /** A marker per collection, in each of its features. */
  readonly markers: Readonly<Record<string, string>>;
}

/** Writes the config, the data files and the generated OpenAPI document into `dir`. */
export function writePygeoapiConfig(bin: string, dir: string, port: number, run: string): PygeoapiFiles {
  mkdirSync(dir, { recursive: true });
  const markers: Record<string, string> = {};
  const resources: Record<string, object> = {};
  const extents = { spatial: { bbox: [32, -18, 36, -9], crs: 'http://www.opengis.net/def/crs/OGC/1.3/CRS84' } };
  for (const id of Object.values(COLLECTIONS)) {
    if (id === 'stations') continue;
    markers[id] = `pygeoapi-${id}-${run}`;
    const file = join(dir, `${id.replace(/[^A-Za-z0-9.-]/g, '_')}.geojson`);
    writeFileSync(file, JSON.stringify(observations(id, markers[id])));
    resources[id] = {
      type: 'collection', title: id, description: `observations of ${id}`, keywords: ['observations'], extents,
      links: [],
      providers: [{ type: 'feature', name: 'GeoJSON', data: file, id_field: 'id' }],
    };
  }
  const stationsDbFile = join(dir, 'stations.tinydb.json');
  writeFileSync(stationsDbFile, JSON.stringify(stationsDb()));
  resources.stations = {
    type: 'collection', title: 'Stations', description: 'station metadata (editable)', keywords: ['stations'], extents, links: [],
    providers: [{ type: 'feature', name: 'TinyDB', editable: true, data: stationsDbFile, id_field: 'id' }],
  };
  for (const id of PROCESS_IDS) resources[id] = { type: 'process', processor: { name: 'HelloWorld' } };

  const config = {
    server: {
      bind: { host: '127.0.0.1', port },
      url: `http://127.0.0.1:${port}/oapi`,
      mimetype: 'application/json; charset=UTF-8', encoding: 'utf-8', language: 'en-US',
      pretty_print: false, limit: 10, map: { url: 'https://tile.openstreetmap.org/{z}/{x}/{y}.png', attribution: 'OSM' },
      // served under /oapi like wis2box; trailing slashes answered, not 404
      api_rules: { api_version: '1.0.0', url_prefix: 'oapi', strict_slashes: false },
      manager: { name: 'Dummy', connection: join(dir, 'jobs'), output_dir: join(dir, 'outputs') },
    },
    logging: { level: 'ERROR' },
    metadata: {
      identification: { title: 'svc e2e', description: 'wis2box-like pygeoapi', keywords: ['wis2'], keywords_type: 'theme', terms_of_service: 'https://example.org', url: 'https://example.org' },
      license: { name: 'CC-BY 4.0', url: 'https://creativecommons.org/licenses/by/4.0/' },
      provider: { name: 'svc', url: 'https://example.org' },
      contact: { name: 'svc', position: 'ops', address: 'x', city: 'x', stateorprovince: 'x', postalcode: 'x', country: 'x', phone: 'x', fax: 'x', email: 'ops@example.org', url: 'https://example.org', hours: 'x', instructions: 'x', role: 'pointOfContact' },
    },
    resources,
  };
  const configFile = join(dir, 'pygeoapi.yml');
  writeFileSync(configFile, yamlDump(config));
  const openapi = join(dir, 'openapi.yml');
  const r = spawnSync(join(bin, 'pygeoapi'), ['openapi', 'generate', configFile, '--output-file', openapi], { encoding: 'utf8', env: { ...process.env, PYGEOAPI_CONFIG: configFile } });
  if (r.status !== 0) throw new Error(`pygeoapi openapi generate failed:\n${r.stderr.split('\n').slice(-15).join('\n')}`);
  return { config: configFile, openapi, stationsDb: stationsDbFile, markers };
}

/** pygeoapi under Flask (threaded, no reloader, no debugger), listening on 127.0.0.1:port. */
export class Pygeoapi {
  private constructor(private readonly proc: Supervised, readonly files: PygeoapiFiles, readonly port: number) {}

  static async ensure(): Promise<string> {
    return ensureVenv(PYGEOAPI, 'pygeoapi');
  }

  static async start(dir: string, port: number, run: string): Promise<Pygeoapi> {
    const bin = await Pygeoapi.ensure();
    const files = writePygeoapiConfig(bin, dir, port, run);
    const env = { ...process.env, PYGEOAPI_CONFIG: files.config, PYGEOAPI_OPENAPI: files.openapi, FLASK_DEBUG: '0' };
    const proc = await Supervised.start('pygeoapi', join(bin, 'python'),
      ['-m', 'flask', '--app', 'pygeoapi.flask_app:APP', 'run', '--host', '127.0.0.1', '--port', String(port), '--no-reload', '--no-debugger', '--with-threads'],
      { env, ports: [port], timeoutMs: 60_000 });
    return new Pygeoapi(proc, files, port);
  }

  /** The stations collection's TinyDB file as it is now (to compare before and after a write). */
  stationsData(): string {
    return readFileSync(this.files.stationsDb, 'utf8');
  }

  tail(lines = 30): string {
    return this.proc.tail(lines);
  }

  async stop(): Promise<void> {
    await this.proc.stop();
  }
}
