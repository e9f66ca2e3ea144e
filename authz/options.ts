// svc-auth's flags turned into what the server runs with: listen addresses, the decision configuration's prefixes.
import { parsePrefix, type AccessConfig } from '../core/index.js';
import { parseListenAddress } from '../lib/listen-address.js';

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** A usage mistake: main prints it with a hint and exits 2. */
export class UsageError extends Error {}

/** A listen flag in lib/listen-address.ts's grammar; no host means every IPv4 interface, as svc-auth always did. */
export function parseHostPort(flag: string, value: string): HostPort {
  try {
    const { host, port } = parseListenAddress(value);
    return { host: host ?? '0.0.0.0', port };
  } catch (e) {
    throw new UsageError(`${flag} ${(e as Error).message}`);
  }
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
