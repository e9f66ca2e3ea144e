import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { LOG_LEVELS } from '../lib/log-levels.js';
import { parseArgs } from './args.js';
import { accessConfig, parseHostPort, UsageError } from './options.js';

// The grammar itself is lib/listen-address.ts's (and its test's); here, what svc-auth adds to it.
describe('parseHostPort', () => {
  it('takes no host as every IPv4 interface, as svc-auth always did', () => {
    expect(parseHostPort('--listen', ':9090')).toEqual({ host: '0.0.0.0', port: 9090 });
    expect(parseHostPort('--listen', '8080')).toEqual({ host: '0.0.0.0', port: 8080 });
    expect(parseHostPort('--listen', '[::1]:8080')).toEqual({ host: '::1', port: 8080 });
  });

  it.each(['127.0.0.1', '::1:8080', '127.0.0.1:65536', '[nothost]:1', 'a b:1'])('refuses %s as a usage error naming the flag', (value) => {
    expect(() => parseHostPort('--metrics-listen', value)).toThrow(UsageError);
    expect(() => parseHostPort('--metrics-listen', value)).toThrow(/^--metrics-listen "/);
  });
});

describe('accessConfig', () => {
  it('turns the flags into the decision configuration', () => {
    expect(accessConfig({ wafPrefix: '/data', apiPrefix: '/oapi', tokenQueryParam: 'token' })).toEqual({ wafPrefix: ['data'], apiPrefix: ['oapi'], tokenParam: 'token' });
    expect(accessConfig({ wafPrefix: '/files/waf/', apiPrefix: '/api', tokenQueryParam: '' }).tokenParam).toBeNull();
  });

  it.each([
    [{ wafPrefix: '/', apiPrefix: '/oapi', tokenQueryParam: 'token' }, /--waf-prefix/],
    [{ wafPrefix: '/data', apiPrefix: '/data/api', tokenQueryParam: 'token' }, /overlap/],
    [{ wafPrefix: '/data', apiPrefix: '/oapi', tokenQueryParam: 'to ken' }, /--token-query-param/],
  ])('refuses %j', (flags, message) => {
    expect(() => accessConfig(flags)).toThrow(message);
  });
});

describe('parseArgs', () => {
  const io = () => {
    const out = { out: '', err: '' };
    return { out, io: { out: (s: string) => (out.out += s), err: (s: string) => (out.err += s) } };
  };

  it('applies the defaults', () => {
    const { io: sink } = io();
    const parsed = parseArgs(['--scopes-dir', '.'], sink);
    expect(parsed).toMatchObject({
      listen: { host: '0.0.0.0', port: 8080 },
      metricsListen: { host: '0.0.0.0', port: 9090 },
      access: { wafPrefix: ['data'], apiPrefix: ['oapi'], tokenParam: 'token' },
      source: { kind: 'scopes-dir' },
      logLevel: 'info',
      cacheMaxAge: 30,
      refusalSample: 20,
      trustedProxyHops: 0,
    });
    expect(parseArgs(['--scopes-dir', '.', '--trusted-proxy-hops', '2'], sink)).toMatchObject({ trustedProxyHops: 2 });
    expect(parseArgs(['--scopes-dir', '.', '--cache-max-age', '0'], sink)).toMatchObject({ cacheMaxAge: 0 });
    expect(parseArgs(['--scopes-dir', '.', '--refusal-log-sample', '0'], sink)).toMatchObject({ refusalSample: 0 });
    expect(parsed).toMatchObject({ access: { openPathsByDefault: false } });
    expect(parseArgs(['--scopes-dir', '.', '--open-paths-by-default'], sink)).toMatchObject({ access: { openPathsByDefault: true } });
    expect(parseArgs(['--scopes-dir', '.', '--refusal-log-sample', 'many'], sink)).toEqual({ exit: 2 });
  });

  it('-n is the namespace, as in svc and svc-operator; every log level of lib/log-levels.ts is accepted', () => {
    const { io: sink } = io();
    expect(parseArgs(['--snapshot-configmap', 'snap', '-n', 'svc'], sink)).toMatchObject({ source: { kind: 'configmap', name: 'snap', namespace: 'svc' } });
    for (const level of LOG_LEVELS) expect(parseArgs(['--scopes-dir', '.', '--log-level', level], sink)).toMatchObject({ logLevel: level });
  });

  it('--version prints the package version and exits 0, as svc and svc-operator', () => {
    const { out, io: sink } = io();
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(parseArgs(['--version'], sink)).toEqual({ exit: 0 });
    expect(out).toEqual({ out: `${version}\n`, err: '' });
  });

  it('takes a snapshot file whose directory exists, even before the file does', () => {
    const { io: sink } = io();
    expect(parseArgs(['--snapshot-file', './not-yet.json', '--token-query-param', ''], sink)).toMatchObject({ source: { kind: 'snapshot-file' }, access: { tokenParam: null } });
  });

  it.each([
    [['--scopes-dir', '.', '--listen', '127.0.0.1:9090', '--metrics-listen', '127.0.0.1:9090'], /must differ/],
    [['--scopes-dir', '.', '--log-level', 'loud'], /Allowed choices/],
    [['--snapshot-file', '/nonexistent/dir/snap'], /does not exist/],
    [['--scopes-dir', '.', 'extra'], /too many arguments|unexpected/i],
    [['--scopes-dir', '.', '--cache-max-age', '-1'], /whole seconds/],
    [['--scopes-dir', '.', '--cache-max-age', '1.5'], /whole seconds/],
    [['--scopes-dir', '.', '--cache-max-age', '90000'], /whole seconds/],
    [['--scopes-dir', '.', '--trusted-proxy-hops', '-1'], /load balancers in front of the proxy, 0 to 9/],
    [['--scopes-dir', '.', '--trusted-proxy-hops', '10'], /load balancers in front of the proxy, 0 to 9/],
  ])('%j is a usage error (exit 2)', (args, message) => {
    const { out, io: sink } = io();
    expect(parseArgs(args, sink)).toEqual({ exit: 2 });
    expect(out.err).toMatch(message);
  });

  it('--help exits 0', () => {
    const { out, io: sink } = io();
    expect(parseArgs(['--help'], sink)).toEqual({ exit: 0 });
    expect(out.out).toContain('--scopes-dir');
  });
});
