/**
 * The key under which svc-auth caches a credential that comes back request after request (a session cookie, a
 * JWT): five characters near its end, six bits each, in one small integer. Those characters are an AEAD tag's or a
 * signature's, which differ between any two values, so the entry is found without slicing the value or having V8
 * hash a fresh string of hundreds of characters on every request; the entry is then compared whole. Two values with
 * one key only cost the older one its place in the cache.
 */
export function tailKey(value: string): number {
  const n = value.length;
  let key = 0;
  // The very last character of a base64url signature or tag carries only a few bits: it is left out.
  for (let i = Math.max(0, n - 6); i < n - 1; i++) key = key * 64 + (value.charCodeAt(i) & 63);
  return key;
}
