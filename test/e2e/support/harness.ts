import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Scope, TokenRecord } from '../../../core/index.js';
import { buildWafTree, DATASET, OTHER, PROCESSES, STATIONS, TOPIC, type WafTree } from './fixtures.js';
import { ensureNginx, Nginx, type NginxPlan } from './nginx.js';
import { nginxConf } from './nginx-conf.js';
import { freePorts } from '../../support/ports.js';
import { startOapiStandin, stopServer } from './oapi-standin.js';
import { newToken, tokenRecord, writeScopeAtomically } from './scopes.js';
import { SvcAuth } from './svc-auth.js';

export type TokenName = 'topic' | 'topicNext' | 'dataset' | 'processes' | 'stations' | 'other' | 'unknown' | 'badChecksum' | 'expired';

function corrupt(token: string): string {
  const last = token.at(-1) === 'A' ? 'B' : 'A';
  return token.slice(0, -1) + last;
}

/** Every token of a run, generated fresh, held in memory only. */
export function makeTokens(): Readonly<Record<TokenName, string>> {
  return {
    topic: newToken(),
    topicNext: newToken(),
    dataset: newToken(),
    processes: newToken(),
    stations: newToken(),
    other: newToken(),
    unknown: newToken(),
    badChecksum: corrupt(newToken()),
    expired: newToken(),
  };
}

/** The manifests the suite starts from: each closed scope with its token, the topic also with an expired one. */
export function initialScopes(t: Readonly<Record<TokenName, string>>): [Scope, TokenRecord[]][] {
  return [
    [TOPIC, [tokenRecord(t.topic), tokenRecord(t.expired, '2026-01-01T00:00:00Z')]],
    [DATASET, [tokenRecord(t.dataset)]],
    [PROCESSES, [tokenRecord(t.processes)]],
    [STATIONS, [tokenRecord(t.stations)]],
    [OTHER, [tokenRecord(t.other)]],
  ];
}

export interface Ports {
  readonly ingress: number;
  readonly customErrors: number;
  readonly original: number;
  readonly uriOnly: number;
  readonly auth: number;
  readonly metrics: number;
  readonly oapi: number;
}

/** Everything one run needs: temp tree, scopes directory, WAF, stand-in API, svc-auth, nginx. */
export class Harness {
  nginx: Nginx | undefined;
  oapi: Server | undefined;
  svcAuth: SvcAuth | undefined;

  private constructor(
    readonly base: string,
    readonly scopesDir: string,
    readonly stagingDir: string,
    readonly waf: WafTree,
    readonly ports: Ports,
    readonly tokens: Readonly<Record<TokenName, string>>,
  ) {}

  static async start(plan: NginxPlan, tokens: Readonly<Record<TokenName, string>>): Promise<Harness> {
    const binary = ensureNginx(plan);
    const base = mkdtempSync(join(tmpdir(), 'svc-e2e-'));
    chmodSync(base, 0o755);
    const scopesDir = join(base, 'scopes');
    const stagingDir = join(base, 'staging');
    const prefix = join(base, 'nginx');
    for (const d of [scopesDir, stagingDir, join(prefix, 'logs'), join(prefix, 'temp')]) mkdirSync(d, { recursive: true });
    const waf = buildWafTree(join(base, 'waf'));
    const [ingress, customErrors, original, uriOnly, auth, metrics, oapi] = (await freePorts(7)) as [number, number, number, number, number, number, number];
    const ports: Ports = { ingress, customErrors, original, uriOnly, auth, metrics, oapi };
    const h = new Harness(base, scopesDir, stagingDir, waf, ports, tokens);
    try {
      for (const [scope, records] of initialScopes(tokens)) writeScopeAtomically(scopesDir, stagingDir, scope, records);
      h.oapi = await startOapiStandin(oapi);
      h.svcAuth = new SvcAuth({ scopesDir, port: auth, metricsPort: metrics, secrets: Object.values(tokens) });
      await h.svcAuth.start();
      h.nginx = await Nginx.start(binary, prefix, nginxConf({ prefix, wafRoot: waf.root, ports: { ingress, customErrors, original, uriOnly, auth, oapi } }), [ingress, customErrors, original, uriOnly]);
    } catch (e) {
      await h.stop();
      throw e;
    }
    return h;
  }

  async stop(): Promise<void> {
    await this.nginx?.stop();
    await this.svcAuth?.stop();
    await stopServer(this.oapi);
    if (process.env.SVC_E2E_KEEP !== '1') rmSync(this.base, { recursive: true, force: true });
  }
}
