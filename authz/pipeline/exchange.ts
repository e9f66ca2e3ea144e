/**
 * One auth request on its way through the pipeline (./auth-pipeline.ts), and the one shape of its decision:
 * made now, or later when a verification must run first (a JWT's signature, an imported token's PBKDF2 hash).
 */
import type { Decision, ResolvedCredential } from '../../core/index.js';
import type { AnswerSet } from '../http/answers.js';
import type { EndpointName, Reading } from '../endpoints/index.js';
import type { HeadResponse } from '../http/head.js';
import type { BrowserAsk } from '../http/browser-answers.js';

/** A request the endpoint's contract could read as one original request. */
export type Described = Extract<Reading, { ok: true }>;

/** The request as core is asked about it: the contract's reading, and for an unsafe method its cross-site evidence. */
export type Asked = Described & { readonly crossSite?: boolean };

/** What the pipeline knows of one request, from its endpoint to its answer, and the bookkeeping after it. */
export interface Exchange {
  readonly endpoint: EndpointName;
  /** The answers in the flavour of the proxy that asked. */
  readonly answers: AnswerSet;
  readonly res: HeadResponse;
  /** performance.now() when the request arrived (the decision duration). */
  readonly started: number;
  /** Date.now() of the decision, then of the answer (a grant's expiry headers, usage counts). */
  at: number;
  /** The original request, once the contract has read it; undefined when it could not be. */
  reading: Described | undefined;
  /**
   * Set when sign-in is configured and a request to a closed scope carried no explicit credential (./session-source.ts):
   * its browser headers are read into a view only when the answer is a refusal (../http/browser-answers.ts).
   */
  browser?: BrowserAsk;
}

/**
 * A decision answered now, or one that answers later. null: it cannot be made (no index, no keys for the
 * issuer, no free slot to derive a hash), answered as unavailable and never as a grant.
 */
export type Deciding =
  | { readonly kind: 'now'; readonly decision: Decision | null }
  | { readonly kind: 'later'; readonly promise: Promise<Decision | null> };

export const decidedNow = (decision: Decision | null): Deciding => ({ kind: 'now', decision });
export const decidedLater = (promise: Promise<Decision | null>): Deciding => ({ kind: 'later', promise });

/** The credential road's sources that may answer later (./credential-road.ts). */
export type Source = 'jwt' | 'session' | 'imported';

/**
 * A credential resolved later: null when it cannot be had now (answered as unavailable, never a grant); `failure`, the
 * verification check a JWT failed (for svc_auth_jwt_decisions_total).
 */
export interface Later {
  readonly credential: ResolvedCredential | null;
  readonly failure?: string;
}

/** A source's answer: a credential now, or one later. */
export type Resolution =
  | { readonly now: ResolvedCredential }
  | { readonly later: Promise<Later>; readonly source: Source };
