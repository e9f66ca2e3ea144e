import { isIP } from 'node:net';
import { parsePrefix, type AccessConfig } from '../core/index.js';

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** A usage mistake: main prints it with a hint and exits 2. */
export class UsageError extends Error {}

/** `HOST:PORT`, `:PORT` (all interfaces) or `[IPv6]:PORT`; port 0 picks a free one. */
export function parseHostPort(flag: string, value: string): HostPort {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new UsageError(`${flag} ${JSON.stringify(value)}: expected HOST:PORT such as 127.0.0.1:8080, 0.0.0.0:8080 or [::]:8080`);
  const host = m[1] ?? (m[2] || '0.0.0.0');
  if (m[1] !== undefined && isIP(m[1]) !== 6) throw new UsageError(`${flag} ${JSON.stringify(value)}: ${m[1]} is not an IPv6 address`);
  if (m[2] !== undefined && m[2].length > 0 && isIP(m[2]) === 0 && !/^[A-Za-z0-9.-]+$/.test(m[2])) {
    throw new UsageError(`${flag} ${JSON.stringify(value)}: ${m[2]} is neither an IP address nor a host name`);
  }
  return { host, port };
}

const QUERY_PARAM = /^[A-Za-z0-9._~-]+$/;

export interface AccessFlags {
  readonly wafPrefix: string;
  readonly apiPrefix: string;
  /** Empty disables query tokens. */
  readonly tokenQueryParam: string;
}

/** The decision configuration from the flags; overlapping prefixes would make one path both WAF and API. */
export function accessConfig(flags: AccessFlags): AccessConfig {
  const prefix = (flag: string, value: string): readonly string[] => {
    try {
      return parsePrefix(value);
    } catch (e) {
      throw new UsageError(`${flag}: ${(e as Error).message}`);
    }
  };
  const wafPrefix = prefix('--waf-prefix', flags.wafPrefix);
  const apiPrefix = prefix('--api-prefix', flags.apiPrefix);
  const covers = (a: readonly string[], b: readonly string[]) => a.length <= b.length && a.every((s, i) => s === b[i]);
  if (covers(wafPrefix, apiPrefix) || covers(apiPrefix, wafPrefix)) {
    throw new UsageError(`--waf-prefix ${flags.wafPrefix} and --api-prefix ${flags.apiPrefix} overlap: choose two distinct paths such as /data and /oapi`);
  }
  const param = flags.tokenQueryParam;
  if (param.length > 0 && !QUERY_PARAM.test(param)) {
    throw new UsageError(`--token-query-param ${JSON.stringify(param)}: use letters, digits and "._~-" (or "" to disable query tokens)`);
  }
  return { wafPrefix, apiPrefix, tokenParam: param.length > 0 ? param : null };
}
