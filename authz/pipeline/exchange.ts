/**
 * One auth request on its way through the pipeline (./auth-pipeline.ts), and the one shape of its decision:
 * made now, or later when a verification must run first (a JWT's signature, an imported token's PBKDF2 hash).
 */
import type { Decision } from '../../core/index.js';
import type { AnswerSet } from '../http/answers.js';
import type { EndpointName, Reading } from '../endpoints/index.js';
import type { HeadResponse } from '../http/http-front.js';
import type { BrowserRequest } from '../sign-in/browser-request.js';

/** What the answer to a browser's request needs of it: a navigation is sent to sign in, or to the 403 page. */
export interface BrowserView {
  readonly navigation: boolean;
  readonly endpoint: EndpointName;
  readonly headers: BrowserRequest;
  readonly target: string;
}

/**
 * A request to a closed scope without an explicit credential, as its answer may need it: its browser headers are
 * read into a BrowserView only when the answer is a refusal (./browser-check.ts), never for a grant.
 */
export interface BrowserAsk {
  readonly endpoint: EndpointName;
  readonly rawHeaders: readonly string[];
  readonly method: string | null;
  readonly target: string;
}

/** A request the endpoint's contract could read as one original request. */
export type Described = Extract<Reading, { ok: true }>;

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
  /** Set when sign-in is configured and a request to a closed scope carried no explicit credential (./browser-check.ts). */
  browser?: BrowserAsk;
  /** A session cookie not opened before: decided once it is (./browser-check.ts). */
  unopened?: { readonly value: string; readonly sameOrigin: boolean };
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
