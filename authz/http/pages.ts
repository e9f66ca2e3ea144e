/**
 * The few pages a browser sees from svc-auth: who is signed in, no access, signed out, sign-in errors. Small,
 * rendered on the server, every value escaped, no script and no external asset, and sent with a Content-Security-
 * Policy that allows exactly the one inline style (by its hash) and forms posting to svc-auth (and the provider's
 * origin, where sign-out continues). The 403 page also travels through ForwardAuth, whose deployments read at most
 * 4096 bytes of an answer: every page stays well below that.
 */
import { createHash } from 'node:crypto';

const STYLE = 'body{font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em;color:#222}h1{font-size:1.3em}button{font:inherit;padding:.3em 1em}code{background:#eee;padding:0 .2em;word-break:break-all}';
const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');

/** The HTML-escaped form of `s`: safe as element text and as a quoted attribute value. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The pages' Content-Security-Policy; `formActions`: origins a form may post to besides svc-auth's own. */
export function contentSecurityPolicy(formActions: readonly string[] = []): string {
  return `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; form-action 'self'${formActions.map((o) => ` ${o}`).join('')}; frame-ancestors 'none'; base-uri 'none'`;
}

export interface Page {
  readonly status: number;
  /** Header names and values, alternating (the auth front's form), Content-Length included. */
  readonly headers: readonly string[];
  readonly body: Buffer;
}

/** A whole page: `main` is HTML already escaped where it holds values. */
export function page(status: number, title: string, main: string, formActions: readonly string[] = []): Page {
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><h1>${escapeHtml(title)}</h1>${main}</body></html>`;
  const body = Buffer.from(html, 'utf8');
  return { status, body, headers: pageHeaders(body.length, formActions) };
}

export function pageHeaders(length: number, formActions: readonly string[] = []): string[] {
  return [
    'Content-Type', 'text/html; charset=utf-8', 'Cache-Control', 'no-store', 'Content-Security-Policy', contentSecurityPolicy(formActions),
    'X-Content-Type-Options', 'nosniff', 'X-Frame-Options', 'DENY', 'Referrer-Policy', 'no-referrer', 'Content-Length', String(length),
  ];
}

const SIGN_OUT_FORM = '<form method="post" action="/authz/sign-out"><button type="submit">Sign out</button></form>';
const p = (html: string): string => `<p>${html}</p>`;
const code = (s: string): string => `<code>${escapeHtml(s)}</code>`;

/** Who is signed in (`GET /authz/v1/session` in a browser). */
export function sessionPage(s: { readonly issuer: string; readonly user: string; readonly groups: readonly string[]; readonly expiresAt: number }, formActions: readonly string[]): Page {
  const shown = s.groups.slice(0, 50).map(code).join(', ');
  const groups = s.groups.length === 0 ? 'none' : `${shown}${s.groups.length > 50 ? ` and ${s.groups.length - 50} more` : ''}`;
  return page(200, 'Signed in', p(`You are signed in as ${code(s.user)} (provider ${code(s.issuer)}).`) + p(`Groups: ${groups}.`) +
    p(`The session ends at ${escapeHtml(new Date(s.expiresAt).toISOString())}.`) + SIGN_OUT_FORM, formActions);
}

export function notSignedInPage(signIn: string): Page {
  return page(401, 'Not signed in', p(`You are not signed in. <a href="${escapeHtml(signIn)}">Sign in</a>.`));
}

/** A signed-in person refused a dataset, topic or path (403): who they are, what they lack, how to switch accounts. */
export function deniedPage(user: string, what: string | undefined, formActions: readonly string[]): Page {
  const target = what === undefined ? 'this dataset or topic' : `this dataset or topic (${code(what.length > 300 ? `${what.slice(0, 300)}…` : what)})`;
  return page(403, 'No access', p(`You are signed in as ${code(user)}, and your account has no access to ${target}.`) +
    p('Ask the data owner to grant it to you or to one of your groups, or sign out and sign in with another account.') + SIGN_OUT_FORM, formActions);
}

export function errorPage(status: number, title: string, message: string, retry?: string): Page {
  return page(status, title, p(escapeHtml(message)) + (retry === undefined ? '' : p(`<a href="${escapeHtml(retry)}">Try again</a>.`)));
}

export function signOutPage(user: string | undefined, formActions: readonly string[]): Page {
  const who = user === undefined ? 'You are not signed in.' : `You are signed in as ${code(user)}.`;
  return page(200, 'Sign out', p(who) + SIGN_OUT_FORM, formActions);
}

export function signedOutPage(): Page {
  return page(200, 'Signed out', p('You are signed out. <a href="/">Home</a>.'));
}
