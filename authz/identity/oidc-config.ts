/**
 * The OpenID issuers svc-auth trusts, and how each one's claims become the names ProtectedScope subjects
 * hold. Written the way platform engineers already configure kube-apiserver: either its `--oidc-*` flags (same
 * meaning, same prefix defaults) or its structured `AuthenticationConfiguration` file (`jwt` list), so one
 * provider set-up serves the cluster and the data service alike.
 *
 * Why prefixes: `sub` is unique only within its issuer. Two issuers that can mint the same user or group name
 * would share each other's grants, so names are prefixed as kube-apiserver prefixes them, and two issuers whose
 * prefixed names could still collide are refused at start (checkDistinctIdentities).
 */
import { load } from 'js-yaml';
import { isIP } from 'node:net';
import { UsageError } from '../options.js';

/** One claim mapped to a name: the name is `prefix` followed by the claim's value. */
export interface ClaimMapping {
  readonly claim: string;
  readonly prefix: string;
}

/** A claim a JWT must carry with exactly this string value (kube-apiserver's `requiredValue` rule). */
export interface RequiredClaim {
  readonly claim: string;
  readonly requiredValue: string;
}

/** One trusted issuer, already resolved: defaults applied, names checked. */
export interface IssuerConfig {
  readonly url: string;
  /** Where the discovery document is fetched from when not `<url>/.well-known/openid-configuration`. */
  readonly discoveryUrl?: string;
  /** A JWT must carry one of these in `aud`. */
  readonly audiences: readonly string[];
  readonly username: ClaimMapping;
  /** Absent: the issuer's JWTs carry no groups for svc-auth. */
  readonly groups?: ClaimMapping;
  readonly requiredClaims: readonly RequiredClaim[];
  /** PEM trusted for this issuer's TLS, besides the system's roots. */
  readonly certificateAuthority?: string;
}

/** The flags, as given: kube-apiserver's `--oidc-*` flags, with several issuers sharing the claim settings. */
export interface OidcFlags {
  readonly issuers: readonly string[];
  readonly audiences: readonly string[];
  readonly usernameClaim: string;
  /** undefined: kube-apiserver's default (the issuer URL and `#`, except for `email`); `-`: no prefix. */
  readonly usernamePrefix?: string;
  readonly groupsClaim: string;
  readonly groupsPrefix?: string;
  /** `claim=value` pairs (`--oidc-required-claim`). */
  readonly requiredClaims: readonly string[];
}

const CLAIM_NAME = /^[A-Za-z0-9_:./-]+$/;

/** https issuers only, http for loopback providers (local IdPs, tests); no query or fragment. */
export function checkIssuerUrl(issuer: string, what: string): void {
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new UsageError(`${what} ${JSON.stringify(issuer)}: not a URL`);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const loopback = host === 'localhost' || (isIP(host) === 4 && host.startsWith('127.')) || host === '::1';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw new UsageError(`${what} ${issuer}: use https (http only for a provider on a loopback address)`);
  }
  if (url.search || url.hash || issuer.includes('#')) throw new UsageError(`${what} ${issuer}: an issuer has no query or fragment`);
}

function checkClaimName(what: string, claim: string): void {
  if (!CLAIM_NAME.test(claim)) throw new UsageError(`${what} ${JSON.stringify(claim)}: a claim name (letters, digits, _:./-)`);
}

/** kube-apiserver's `--oidc-username-prefix` default: non-email usernames carry the issuer URL and `#`. */
export function defaultUsernamePrefix(issuer: string, claim: string, given: string | undefined): string {
  if (given === '-') return '';
  if (given !== undefined) return given;
  return claim === 'email' ? '' : `${issuer}#`;
}

/** The flags as issuer configurations, with kube-apiserver's meaning. */
export function issuersFromFlags(f: OidcFlags): IssuerConfig[] {
  if (f.issuers.length === 0) {
    if (f.audiences.length > 0) throw new UsageError('--oidc-audience needs --oidc-issuer');
    return [];
  }
  if (f.audiences.length === 0) throw new UsageError('--oidc-issuer needs --oidc-audience (the client id the provider puts in aud)');
  checkClaimName('--oidc-username-claim', f.usernameClaim);
  if (f.groupsClaim !== '') checkClaimName('--oidc-groups-claim', f.groupsClaim);
  const requiredClaims = f.requiredClaims.map(parseRequiredClaim);
  const issuers = f.issuers.map((url): IssuerConfig => {
    checkIssuerUrl(url, '--oidc-issuer');
    const groupsPrefix = f.groupsPrefix === undefined || f.groupsPrefix === '-' ? '' : f.groupsPrefix;
    return {
      url,
      audiences: f.audiences,
      username: { claim: f.usernameClaim, prefix: defaultUsernamePrefix(url, f.usernameClaim, f.usernamePrefix) },
      ...(f.groupsClaim !== '' ? { groups: { claim: f.groupsClaim, prefix: groupsPrefix } } : {}),
      requiredClaims,
    };
  });
  checkDistinctIdentities(issuers, 'The flags give every issuer the same prefixes: use --authentication-config to give each its own (or --oidc-groups-claim "" to take no groups).');
  return issuers;
}

function parseRequiredClaim(pair: string): RequiredClaim {
  const eq = pair.indexOf('=');
  if (eq <= 0) throw new UsageError(`--oidc-required-claim ${JSON.stringify(pair)}: give claim=value`);
  const claim = pair.slice(0, eq);
  checkClaimName('--oidc-required-claim', claim);
  return { claim, requiredValue: pair.slice(eq + 1) };
}

/**
 * Two issuers whose names could be equal are refused: one's prefix must not begin the other's (an empty prefix
 * begins every name), for users and for groups, or a name minted by one could be read as the other's.
 */
export function checkDistinctIdentities(issuers: readonly IssuerConfig[], hint: string): void {
  for (let i = 0; i < issuers.length; i++) {
    for (let j = i + 1; j < issuers.length; j++) {
      const [a, b] = [issuers[i]!, issuers[j]!];
      if (a.url === b.url) throw new UsageError(`issuer ${a.url} is configured twice`);
      if (overlaps(a.username, b.username)) throw collision('user', a, b, a.username.prefix, b.username.prefix, hint);
      if (a.groups && b.groups && overlaps(a.groups, b.groups)) throw collision('group', a, b, a.groups.prefix, b.groups.prefix, hint);
    }
  }
}

const overlaps = (x: ClaimMapping, y: ClaimMapping): boolean => x.prefix.startsWith(y.prefix) || y.prefix.startsWith(x.prefix);

function collision(kind: 'user' | 'group', a: IssuerConfig, b: IssuerConfig, pa: string, pb: string, hint: string): UsageError {
  return new UsageError(
    `${kind} names of ${a.url} (prefix ${JSON.stringify(pa)}) and ${b.url} (prefix ${JSON.stringify(pb)}) could collide: ` +
      `either issuer could mint the other's ${kind}s and be granted what they are. ${hint}`,
  );
}

/** The API versions of kube-apiserver's structured authentication configuration svc-auth reads. */
const API_VERSIONS = ['apiserver.config.k8s.io/v1', 'apiserver.config.k8s.io/v1beta1', 'apiserver.config.k8s.io/v1alpha1'];

type Obj = Record<string, unknown>;

function object(v: unknown, at: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new UsageError(`${at}: an object`);
  return v as Obj;
}

function string(v: unknown, at: string, allowEmpty = false): string {
  if (typeof v !== 'string' || (!allowEmpty && v.length === 0)) throw new UsageError(`${at}: a${allowEmpty ? '' : ' non-empty'} string`);
  return v;
}

function list(v: unknown, at: string): unknown[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new UsageError(`${at}: a list`);
  return v;
}

/** Fields are read strictly, as kube-apiserver reads the file: an unknown field is an error, not ignored. */
function onlyFields(o: Obj, allowed: readonly string[], at: string): void {
  for (const k of Object.keys(o)) {
    if (allowed.includes(k)) continue;
    throw new UsageError(`${at}.${k}: ${EXPRESSIONS.includes(k) ? 'CEL expressions are not supported by svc-auth; map a claim (claim and prefix)' : 'unknown field'}`);
  }
}

const EXPRESSIONS = ['expression', 'valueExpression', 'userValidationRules', 'extra'];

/** A claim mapping of the file: `claim` with its `prefix`, which kube-apiserver requires spelled out ("" for none). */
function claimMapping(v: unknown, at: string): ClaimMapping {
  const o = object(v, at);
  onlyFields(o, ['claim', 'prefix'], at);
  const claim = string(o.claim, `${at}.claim`);
  checkClaimName(`${at}.claim`, claim);
  if (o.prefix === undefined) throw new UsageError(`${at}.prefix: required with claim ("" for none), as kube-apiserver requires`);
  return { claim, prefix: string(o.prefix, `${at}.prefix`, true) };
}

function issuerOf(v: unknown, at: string): Pick<IssuerConfig, 'url' | 'audiences' | 'discoveryUrl' | 'certificateAuthority'> {
  const o = object(v, at);
  onlyFields(o, ['url', 'discoveryURL', 'audiences', 'audienceMatchPolicy', 'certificateAuthority'], at);
  const url = string(o.url, `${at}.url`);
  checkIssuerUrl(url, `${at}.url`);
  const audiences = list(o.audiences, `${at}.audiences`).map((a, i) => string(a, `${at}.audiences[${i}]`));
  if (audiences.length === 0) throw new UsageError(`${at}.audiences: at least one (the client id the provider puts in aud)`);
  // kube-apiserver: several audiences need the policy spelled out, and MatchAny is the only one.
  if (audiences.length > 1 && o.audienceMatchPolicy !== 'MatchAny') throw new UsageError(`${at}.audienceMatchPolicy: MatchAny is required with several audiences`);
  const discoveryUrl = o.discoveryURL === undefined ? undefined : string(o.discoveryURL, `${at}.discoveryURL`);
  if (discoveryUrl !== undefined) checkIssuerUrl(discoveryUrl.replace(/\/\.well-known\/openid-configuration$/, ''), `${at}.discoveryURL`);
  const ca = o.certificateAuthority === undefined ? undefined : string(o.certificateAuthority, `${at}.certificateAuthority`);
  return { url, audiences, ...(discoveryUrl !== undefined ? { discoveryUrl } : {}), ...(ca !== undefined ? { certificateAuthority: ca } : {}) };
}

function requiredClaimOf(v: unknown, at: string): RequiredClaim {
  const o = object(v, at);
  onlyFields(o, ['claim', 'requiredValue'], at);
  const claim = string(o.claim, `${at}.claim`);
  checkClaimName(`${at}.claim`, claim);
  return { claim, requiredValue: string(o.requiredValue ?? '', `${at}.requiredValue`, true) };
}

function jwtAuthenticator(v: unknown, at: string): IssuerConfig {
  const o = object(v, at);
  onlyFields(o, ['issuer', 'claimMappings', 'claimValidationRules'], at);
  const mappings = object(o.claimMappings, `${at}.claimMappings`);
  // uid is accepted for a file shared with kube-apiserver; svc-auth names no one by it.
  onlyFields(mappings, ['username', 'groups', 'uid'], `${at}.claimMappings`);
  if (mappings.uid !== undefined) onlyFields(object(mappings.uid, `${at}.claimMappings.uid`), ['claim'], `${at}.claimMappings.uid`);
  const groups = mappings.groups === undefined ? undefined : claimMapping(mappings.groups, `${at}.claimMappings.groups`);
  return {
    ...issuerOf(o.issuer, `${at}.issuer`),
    username: claimMapping(mappings.username, `${at}.claimMappings.username`),
    ...(groups ? { groups } : {}),
    requiredClaims: list(o.claimValidationRules, `${at}.claimValidationRules`).map((r, i) => requiredClaimOf(r, `${at}.claimValidationRules[${i}]`)),
  };
}

/** kube-apiserver's `AuthenticationConfiguration` (YAML or JSON): its `jwt` authenticators as issuers. */
export function parseAuthenticationConfiguration(text: string, file: string): IssuerConfig[] {
  let doc: unknown;
  try {
    doc = load(text);
  } catch (e) {
    throw new UsageError(`${file}: not YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  const o = object(doc, file);
  onlyFields(o, ['apiVersion', 'kind', 'jwt', 'anonymous'], file);
  if (!API_VERSIONS.includes(o.apiVersion as string) || o.kind !== 'AuthenticationConfiguration') {
    throw new UsageError(`${file}: not an AuthenticationConfiguration of ${API_VERSIONS.join(', ')}`);
  }
  // Anonymous requests are already what svc-auth answers without a credential; enabling it here would be a surprise.
  if (o.anonymous !== undefined && object(o.anonymous, `${file}.anonymous`).enabled === true) throw new UsageError(`${file}.anonymous: not supported by svc-auth`);
  const issuers = list(o.jwt, `${file}.jwt`).map((j, i) => jwtAuthenticator(j, `jwt[${i}]`));
  if (issuers.length === 0) throw new UsageError(`${file}.jwt: at least one issuer`);
  checkDistinctIdentities(issuers, 'Give each issuer its own claimMappings prefix (kube-apiserver\'s own advice).');
  return issuers;
}
