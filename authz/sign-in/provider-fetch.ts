/**
 * The HTTP client openid-client uses for the provider when a CA is configured (`--oidc-ca-file`, an issuer's
 * `certificateAuthority`): Node's global fetch cannot take a CA without the undici package, so this is a small
 * fetch over node:https with the CA beside the system's roots (as authz/identity/oidc.ts fetches keys). Answers
 * are bounded (1 MiB); openid-client's timeout arrives as the request's abort signal.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { rootCertificates } from 'node:tls';
import type { CustomFetch } from 'openid-client';

const MAX_ANSWER_BYTES = 1024 * 1024;

/** A fetch trusting `ca` (PEM) besides the system's roots. */
export function fetchTrusting(ca: string): CustomFetch {
  return (url, options) =>
    new Promise<Response>((resolve, reject) => {
      const u = new URL(url);
      const body = options.body === undefined || options.body === null ? undefined : String(options.body);
      const send = u.protocol === 'https:' ? httpsRequest : httpRequest;
      const req = send(u, { method: options.method, headers: options.headers, ca: [ca, ...rootCertificates], ...(options.signal ? { signal: options.signal } : {}) }, (res) => {
        collect(res).then((bytes) => resolve(responseOf(res, bytes)), reject);
      });
      req.on('error', reject);
      req.end(body);
    });
}

function collect(res: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_ANSWER_BYTES) res.destroy(new Error('the provider answered more than 1 MiB'));
      else chunks.push(c);
    });
    res.on('end', () => resolve(Buffer.concat(chunks)));
    res.on('error', reject);
  });
}

function responseOf(res: IncomingMessage, bytes: Buffer): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, v);
  }
  const status = res.statusCode ?? 502;
  const empty = status === 204 || status === 304 || bytes.length === 0;
  return new Response(empty ? null : new Uint8Array(bytes), { status, headers });
}
