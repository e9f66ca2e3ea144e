// The whole stack on one machine, shared by test/integration/stack-*.test.ts and scripts/demo-cluster.ts:
//
//   svc CLI (svc-management's identity) ──► ProtectedScopes in the API server
//   svc-operator (its ServiceAccount, the chart's command line) ──► snapshot ConfigMaps
//   svc-auth (its ServiceAccount, --snapshot-configmap, the chart's command line) ◄── nginx auth subrequest
//   nginx configured as ingress-nginx configures `auth-url` (test/e2e/support) ──► static WAF tree, stand-in OGC API
//
// Every program runs as a real process; every API call goes through the real authenticator and RBAC authorizer
// with the chart's rules. Ports are free 127.0.0.1 ports.
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { buildWafTree, type WafTree } from '../e2e/support/fixtures.js';
import { Nginx } from '../e2e/support/nginx.js';
import { nginxConf } from '../e2e/support/nginx-conf.js';
import { rawRequest, type RawResponse } from '../e2e/support/net.js';
import { freePorts } from '../support/ports.js';
import { startOapiStandin, stopServer } from '../e2e/support/oapi-standin.js';
import { helmTemplate, type Manifest } from './helm.js';
import { componentKubeconfigs, installIdentities, type Component } from './identities.js';
import { chartCommandLine, Program, runCli, type CliResult } from './processes.js';

export interface StackPorts {
  /** nginx, ingress-nginx `auth-url` mirror: /data (WAF) and /oapi (stand-in API). */
  readonly ingress: number;
  /** nginx, the same with custom-http-errors (the CVE-2026-24513 shape); part of the e2e config. */
  readonly customErrors: number;
  /** nginx, the original's `auth_request /authorize` shape. */
  readonly original: number;
  readonly auth: number;
  readonly authMetrics: number;
  readonly operatorMetrics: number;
  readonly oapi: number;
}

export interface StackOptions {
  readonly helm: string;
  readonly adminKubeconfig: string;
  /** An existing namespace the stack owns. */
  readonly namespace: string;
  /** The nginx binary (test/e2e/support/nginx.ts: ensureNginx(nginxPlan())). */
  readonly nginxBinary: string;
  /** Plaintexts to redact from program output; a live list, so tokens created later are covered. */
  readonly secrets: string[];
  /** Lifetime of the ServiceAccount tokens the programs and the CLI use; default 1 h. */
  readonly tokenLifetimeSeconds?: number;
  /** Where to put kubeconfigs, the WAF tree and nginx's prefix; default a fresh temp dir, removed by stop(). */
  readonly baseDir?: string;
  /** Append each program's output (tokens redacted) to <logDir>/<program>.log. */
  readonly logDir?: string;
  readonly log?: (message: string) => void;
  /** How long svc-auth may take to load its first snapshot; default 60 s. */
  readonly readyTimeoutMs?: number;
}

export interface RequestOptions {
  readonly method?: string;
  /** A token sent as `Authorization: Bearer`. */
  readonly bearer?: string;
  /** A token sent as `?token=`. */
  readonly query?: string;
  readonly body?: string;
}

export class Stack {
  operator: Program | undefined;
  auth: Program | undefined;
  nginx: Nginx | undefined;
  oapi: Server | undefined;

  private constructor(
    readonly options: StackOptions,
    readonly base: string,
    private readonly ownsBase: boolean,
    readonly ports: StackPorts,
    readonly waf: WafTree,
    readonly manifests: Manifest[],
    readonly kubeconfigs: Record<Component, string>,
  ) {}

  get namespace(): string {
    return this.options.namespace;
  }

  static async start(options: StackOptions): Promise<Stack> {
    const log = options.log ?? (() => undefined);
    const ownsBase = options.baseDir === undefined;
    const base = options.baseDir ?? mkdtempSync(join(tmpdir(), 'svc-stack-'));
    // nginx's workers run unprivileged when the master is root: the tree must be traversable.
    chmodSync(base, 0o755);
    const prefix = join(base, 'nginx');
    for (const d of [join(prefix, 'logs'), join(prefix, 'temp')]) mkdirSync(d, { recursive: true });
    if (options.logDir) mkdirSync(options.logDir, { recursive: true });

    log(`installing the chart's ServiceAccounts, Roles and RoleBindings into ${options.namespace}`);
    installIdentities(options.helm, options.adminKubeconfig, options.namespace);
    const rendered = helmTemplate(options.helm, { namespace: options.namespace });
    if (rendered.status !== 0) throw new Error(`helm template failed:\n${rendered.stderr}`);
    const admin = new k8s.KubeConfig();
    admin.loadFromFile(options.adminKubeconfig);
    const kubeconfigs = await componentKubeconfigs(admin, options.namespace, join(base, 'kubeconfigs'), options.tokenLifetimeSeconds ?? 3600);

    const [ingress, customErrors, original, auth, authMetrics, operatorMetrics, oapi] = (await freePorts(7)) as [number, number, number, number, number, number, number];
    const ports: StackPorts = { ingress, customErrors, original, auth, authMetrics, operatorMetrics, oapi };
    const stack = new Stack(options, base, ownsBase, ports, buildWafTree(join(base, 'waf')), rendered.manifests, kubeconfigs);
    try {
      await stack.startPrograms();
      log(`starting the stand-in OGC API on 127.0.0.1:${oapi} and nginx (ingress-nginx auth-url mirror) on 127.0.0.1:${ingress}`);
      stack.oapi = await startOapiStandin(oapi);
      stack.nginx = await Nginx.start(options.nginxBinary, prefix,
        nginxConf({ prefix, wafRoot: stack.waf.root, ports: { ingress, customErrors, original, auth, oapi } }), [ingress, customErrors, original]);
    } catch (e) {
      await stack.stop();
      throw e;
    }
    return stack;
  }

  private program(name: 'svc-operator' | 'svc-auth', listen: { listen?: number; metricsListen?: number }): Program {
    const { logDir, secrets } = this.options;
    return new Program({
      name,
      command: chartCommandLine(this.manifests, name, this.namespace, listen),
      kubeconfig: this.kubeconfigs[name],
      secrets,
      ...(logDir ? { logFile: join(logDir, `${name}.log`) } : {}),
    });
  }

  private async startPrograms(): Promise<void> {
    const log = this.options.log ?? (() => undefined);
    log(`starting svc-operator as system:serviceaccount:${this.namespace}:svc-operator (health on 127.0.0.1:${this.ports.operatorMetrics})`);
    this.operator = this.program('svc-operator', { metricsListen: this.ports.operatorMetrics });
    this.operator.start();
    await this.operator.waitForHttp(this.ports.operatorMetrics, '/readyz', this.options.readyTimeoutMs ?? 60_000);
    log(`starting svc-auth as system:serviceaccount:${this.namespace}:svc-auth (ConfigMap source) on 127.0.0.1:${this.ports.auth}`);
    this.auth = this.program('svc-auth', { listen: this.ports.auth, metricsListen: this.ports.authMetrics });
    this.auth.start();
    await this.auth.waitForHttp(this.ports.auth, '/readyz', this.options.readyTimeoutMs ?? 60_000);
  }

  /** Arguments that point the CLI at this stack as svc-management (what its pod's in-cluster config gives it). */
  cliTarget(): string[] {
    return ['--kubeconfig', this.kubeconfigs['svc-management'], '-n', this.namespace];
  }

  /** `svc <args> --kubeconfig <svc-management> -n <namespace>` as a real process. Output unredacted: never print it whole. */
  cli(args: readonly string[], input?: string): Promise<CliResult> {
    return runCli([...args, ...this.cliTarget()], this.kubeconfigs['svc-management'], input === undefined ? {} : { input });
  }

  /** One request through nginx's ingress-nginx mirror, over a raw socket. */
  request(target: string, opts: RequestOptions = {}): Promise<RawResponse> {
    const t = opts.query ? `${target}${target.includes('?') ? '&' : '?'}token=${opts.query}` : target;
    return rawRequest(this.ports.ingress, {
      ...(opts.method ? { method: opts.method } : {}),
      target: t,
      headers: opts.bearer ? [['Authorization', `Bearer ${opts.bearer}`]] : [],
      ...(opts.body !== undefined ? { body: opts.body } : {}),
    });
  }

  /** The programs' output so far, tokens redacted (for failure messages). */
  logs(): string {
    return [this.operator, this.auth].filter((p): p is Program => p !== undefined).map((p) => `--- ${p.name}\n${p.tail(15)}`).join('\n');
  }

  async stop(): Promise<void> {
    await this.nginx?.stop();
    await stopServer(this.oapi);
    await this.auth?.stop();
    await this.operator?.stop();
    if (this.ownsBase && process.env.SVC_STACK_KEEP !== '1') rmSync(this.base, { recursive: true, force: true });
  }
}
