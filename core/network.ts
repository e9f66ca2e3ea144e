/**
 * Networks a scope grants by client address (`spec.networks`, docs/wis2.md): their one text form, and the matcher
 * the decision runs for a request's address.
 *
 * One text form. A network is written `ADDRESS/PREFIX` in the form Go's net/netip prints it, which is what the CRD's
 * CEL rule compares against (`string(cidr(self).masked()) == self`): the network address with no host bit set, IPv4
 * as four decimal parts without leading zeros, IPv6 in lower case with the longest run of two or more zero groups
 * (the first of equal runs) written `::` (RFC 5952). Anything else is refused with the form to use instead
 * (`203.0.113.9/24` → `use 203.0.113.0/24`), so one network has one spelling, and a list of them is a set of strings.
 * An IPv4-mapped IPv6 address (`::ffff:203.0.113.7`) is the IPv4 address it maps: as a network it is refused in
 * favour of its IPv4 form, and as a request's address it is matched as IPv4. An IPv6 network never holds an IPv4
 * address, mapped or not. A bare address is refused too, naming its single-address network (`use 203.0.113.7/32`):
 * what the object says is always a network, as the CRD's `cidr()` requires.
 *
 * The matcher. Node's net.BlockList does the matching part, but it lives in node:net (core/ imports no I/O module),
 * it parses its string argument on every check, and it answers only yes or no where svc-auth must log which network
 * granted. Here an address is parsed once per request into a reused array of 32-bit words without allocating, and
 * matched with integer operations, no BigInt: an IPv4 address by one Map lookup per prefix length present, an IPv6
 * one against each network's four (base, mask) words.
 */
import { err, ok, type Result } from './result.js';

export type AddressFamily = 4 | 6;

/** A network in its canonical form. */
export interface Network {
  readonly family: AddressFamily;
  /** 0 to 32 for IPv4, 0 to 128 for IPv6. */
  readonly prefix: number;
  /** The network address as unsigned 32-bit words, most significant first: one for IPv4, four for IPv6. */
  readonly words: readonly number[];
  /** The canonical text, `203.0.113.0/24`, `2001:db8::/32`. */
  readonly cidr: string;
}

/** The longest canonical network (`ffff:…:ffff/128`, 43 characters) with room for a non-canonical spelling to be named. */
export const MAX_CIDR_LENGTH = 64;
/** The longest address text parseAddressInto reads: eight groups, or six and an IPv4 tail (45 characters). */
const MAX_ADDRESS_LENGTH = 45;

const DOT = 0x2e;
const COLON = 0x3a;

/** An IPv4 address in s[start, end): its value (0 to 2^32 - 1), or -1. Four decimal parts of 0-255, no leading zero. */
function parseV4(s: string, start: number, end: number): number {
  let value = 0;
  let part = 0;
  let digits = 0;
  let parts = 0;
  for (let i = start; i <= end; i++) {
    const c = i < end ? s.charCodeAt(i) : DOT;
    if (c === DOT) {
      if (digits === 0 || parts === 4) return -1;
      value = value * 256 + part;
      parts++;
      part = 0;
      digits = 0;
    } else if (c >= 0x30 && c <= 0x39) {
      if (digits > 0 && part === 0) return -1; // a leading zero: octal to some readers
      part = part * 10 + (c - 0x30);
      digits++;
      if (part > 255) return -1;
    } else return -1;
  }
  return parts === 4 ? value : -1;
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

/** The eight 16-bit groups of the IPv6 address being parsed (one parse at a time: the event loop has one thread). */
const groups = new Uint16Array(8);

/** Where the `::` of the address readGroups read last stood, in groups (-1: none). */
let gapAt = -1;

/**
 * Reads the groups of an IPv6 address in s[start, end) into `groups` and where its `::` stood into `gapAt`; returns
 * how many groups were written, or -1 for a malformed address. An IPv4 tail counts as two groups. Allocates nothing.
 */
function readGroups(s: string, start: number, end: number): number {
  let n = 0;
  let gap = -1;
  let i = start;
  if (s.charCodeAt(i) === COLON) {
    if (s.charCodeAt(i + 1) !== COLON) return -1;
    gap = 0;
    i += 2;
  }
  while (i < end) {
    let j = i;
    let v = 0;
    for (let h = hexValue(s.charCodeAt(j)); h >= 0 && j < end && j - i < 5; h = hexValue(s.charCodeAt(++j))) v = v * 16 + h;
    if (j < end && s.charCodeAt(j) === DOT) {
      const v4 = n <= 6 ? parseV4(s, i, end) : -1;
      if (v4 < 0) return -1;
      groups[n++] = v4 >>> 16;
      groups[n++] = v4 & 0xffff;
      break;
    }
    if (j === i || j - i > 4 || n === 8) return -1;
    groups[n++] = v;
    if (j === end) break;
    if (s.charCodeAt(j) !== COLON || j + 1 === end) return -1;
    i = j + 1;
    if (s.charCodeAt(i) === COLON) {
      if (gap >= 0) return -1;
      gap = n;
      i++;
    }
  }
  gapAt = gap;
  return (gap < 0 ? n === 8 : n <= 7) ? n : -1;
}

/** An IPv6 address in s[start, end) into out[0..3]; false when malformed. */
function parseV6(s: string, start: number, end: number, out: Uint32Array): boolean {
  const n = readGroups(s, start, end);
  if (n === -1) return false;
  const gap = gapAt;
  if (gap >= 0) {
    const tail = n - gap;
    for (let k = 0; k < tail; k++) groups[7 - k] = groups[n - 1 - k]!;
    for (let k = gap; k < 8 - tail; k++) groups[k] = 0;
  }
  for (let w = 0; w < 4; w++) out[w] = ((groups[2 * w]! << 16) | groups[2 * w + 1]!) >>> 0;
  return true;
}

/**
 * Parses an address as a proxy's header carries it (`203.0.113.7`, `2001:db8::7`, `::ffff:203.0.113.7`; no port, no
 * brackets, no zone) into `out` (at least four words): word 0 for IPv4, words 0-3 for IPv6. Returns the family, 4 for
 * an IPv4-mapped IPv6 address (its IPv4 address in word 0), or 0 when the text is not an address. Allocates nothing.
 */
export function parseAddressInto(text: string, out: Uint32Array): AddressFamily | 0 {
  const end = text.length;
  if (end === 0 || end > MAX_ADDRESS_LENGTH) return 0;
  if (text.indexOf(':') < 0) {
    const v4 = parseV4(text, 0, end);
    if (v4 < 0) return 0;
    out[0] = v4;
    return 4;
  }
  if (!parseV6(text, 0, end, out)) return 0;
  if (out[0] === 0 && out[1] === 0 && out[2] === 0xffff) {
    out[0] = out[3]!;
    return 4;
  }
  return 6;
}

/** Bits of word `i` that a prefix of `prefix` bits covers, as a signed 32-bit mask. */
function maskWord(prefix: number, i: number): number {
  const bits = prefix - 32 * i;
  return bits <= 0 ? 0 : bits >= 32 ? -1 : -1 << (32 - bits);
}

function formatV4(w: number): string {
  return `${w >>> 24}.${(w >>> 16) & 255}.${(w >>> 8) & 255}.${w & 255}`;
}

/** RFC 5952: lower case, no leading zeros, the first longest run of two or more zero groups as `::`. */
function formatV6(words: readonly number[]): string {
  const g: number[] = [];
  for (const w of words) g.push(w >>> 16, w & 0xffff);
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLength) [best, bestLength] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  const hex = (from: number, to: number) => g.slice(from, to).map((x) => x.toString(16)).join(':');
  return best < 0 ? hex(0, 8) : `${hex(0, best)}::${hex(best + bestLength, 8)}`;
}

/** The canonical text of an address (words as parseAddressInto writes them). */
export function formatAddress(family: AddressFamily, words: ArrayLike<number>): string {
  return family === 4 ? formatV4(words[0]!) : formatV6(Array.from({ length: 4 }, (_, i) => words[i]! >>> 0));
}

/** The network of `prefix` bits holding the address: host bits cleared, canonical text. */
export function networkOf(family: AddressFamily, words: ArrayLike<number>, prefix: number): Network {
  const count = family === 4 ? 1 : 4;
  const masked = Array.from({ length: count }, (_, i) => (words[i]! & maskWord(prefix, i)) >>> 0);
  return { family, prefix, words: masked, cidr: `${formatAddress(family, masked)}/${prefix}` };
}

const NOT_A_NETWORK = 'write ADDRESS/PREFIX, e.g. 203.0.113.0/24 or 2001:db8::/32 (IPv4 parts without leading zeros; no zone, no brackets)';

/** Parses a network that must be in canonical form; the refusal names the form to use when there is one. */
export function parseNetwork(text: string): Result<Network> {
  if (text.length > MAX_CIDR_LENGTH) return err(`${JSON.stringify(text.slice(0, MAX_CIDR_LENGTH))}... is longer than any network: ${NOT_A_NETWORK}`);
  const shown = JSON.stringify(text);
  const slash = text.indexOf('/');
  const words = new Uint32Array(4);
  const family = parseAddressInto(slash < 0 ? text : text.slice(0, slash), words);
  if (family === 0) return err(`${shown} is not a network: ${NOT_A_NETWORK}`);
  if (slash < 0) {
    const single = networkOf(family, words, family === 4 ? 32 : 128);
    return err(`${shown} is an address, not a network: use ${single.cidr} for this one address`);
  }
  const digits = text.slice(slash + 1);
  if (!/^[0-9]{1,3}$/.test(digits)) return err(`${shown} has no prefix length after "/": ${NOT_A_NETWORK}`);
  const writtenAs6 = text.lastIndexOf(':', slash) >= 0;
  let prefix = Number(digits);
  if (prefix > (writtenAs6 ? 128 : 32)) return err(`${shown}: the prefix length must be 0 to ${writtenAs6 ? 128 : 32}`);
  const mapped = family === 4 && writtenAs6;
  // A mapped address under a prefix shorter than the mapped range is an IPv6 network (with host bits set).
  const asIPv6 = mapped && prefix < 96;
  if (mapped && !asIPv6) prefix -= 96;
  const source = asIPv6 ? [0, 0, 0xffff, words[0]!] : Array.from(words.subarray(0, family === 4 ? 1 : 4));
  const n = networkOf(asIPv6 ? 6 : family, source, prefix);
  if (n.cidr === text) return ok(n);
  const hostBits = n.words.some((w, i) => w !== source[i]);
  const why = mapped && !asIPv6 ? 'is an IPv4 network written as IPv6' : hostBits ? 'has host bits set' : 'is not written in canonical form';
  return err(`${shown} ${why}: use ${n.cidr}`);
}

/** Canonical network texts sort as strings: one order for the snapshot, show and the manifests the CLI writes. */
export function compareNetworks(a: Pick<Network, 'cidr'>, b: Pick<Network, 'cidr'>): number {
  return a.cidr < b.cidr ? -1 : a.cidr > b.cidr ? 1 : 0;
}

/**
 * Network records as a grant reads them (the operator's assessment of an object, the snapshot compiler's merge of a
 * scope's objects): each readable one (a canonical CIDR) once, in canonical order, and whether any was unreadable. An
 * unreadable network grants nothing and closes the scope, so a record the API server should have refused never opens
 * what it closed: the one place that rule is written.
 */
export function readNetworks(records: readonly unknown[]): { readonly networks: readonly Network[]; readonly unreadable: boolean } {
  const byCidr = new Map<string, Network>();
  let unreadable = false;
  for (const x of records) {
    const cidr = typeof x === 'object' && x !== null ? (x as { cidr?: unknown }).cidr : undefined;
    const parsed = typeof cidr === 'string' ? parseNetwork(cidr) : undefined;
    if (parsed?.ok) byCidr.set(parsed.value.cidr, parsed.value);
    else unreadable = true;
  }
  return { networks: [...byCidr.values()].sort(compareNetworks), unreadable };
}

/**
 * The networks of a scope, compiled for matching, most specific first, so the first match is the narrowest grant (the
 * one a log names). IPv4: a Map from network address to network per prefix length present, so an address costs one
 * mask and one lookup per distinct prefix length (a list of 256 /32s is one lookup). IPv6: a flat array of (base, mask)
 * words scanned in order, four integer comparisons a network.
 */
export class NetworkSet {
  readonly networks: readonly Network[];
  private readonly v4: readonly { readonly mask: number; readonly byAddress: ReadonlyMap<number, Network> }[];
  private readonly v6: Int32Array;
  private readonly v6Networks: readonly Network[];

  constructor(networks: readonly Network[]) {
    const byCidr = new Map(networks.map((n) => [n.cidr, n]));
    this.networks = [...byCidr.values()].sort(compareNetworks);
    const specificFirst = [...this.networks].sort((a, b) => b.prefix - a.prefix || compareNetworks(a, b));
    const v4 = new Map<number, Map<number, Network>>();
    for (const n of specificFirst) if (n.family === 4) (v4.get(n.prefix) ?? v4.set(n.prefix, new Map()).get(n.prefix)!).set(n.words[0]!, n);
    this.v4 = [...v4].map(([prefix, byAddress]) => ({ mask: maskWord(prefix, 0), byAddress }));
    this.v6Networks = specificFirst.filter((n) => n.family === 6);
    this.v6 = new Int32Array(this.v6Networks.length * 8);
    this.v6Networks.forEach((n, i) => {
      for (let w = 0; w < 4; w++) {
        this.v6[8 * i + w] = n.words[w]!;
        this.v6[8 * i + 4 + w] = maskWord(n.prefix, w);
      }
    });
  }

  get size(): number {
    return this.networks.length;
  }

  /** The most specific network holding the address (as parseAddressInto wrote it), or undefined. Allocates nothing. */
  find(family: AddressFamily, words: Uint32Array): Network | undefined {
    if (family === 4) {
      const a = words[0]!;
      for (let i = 0; i < this.v4.length; i++) {
        const level = this.v4[i]!;
        const n = level.byAddress.get((a & level.mask) >>> 0);
        if (n !== undefined) return n;
      }
      return undefined;
    }
    const i = this.nextV6(words, 0);
    return i < 0 ? undefined : this.v6Networks[i];
  }

  /** Every network holding the address, most specific first. */
  findAll(family: AddressFamily, words: Uint32Array): Network[] {
    const out: Network[] = [];
    if (family === 4) {
      for (const level of this.v4) {
        const n = level.byAddress.get((words[0]! & level.mask) >>> 0);
        if (n !== undefined) out.push(n);
      }
      return out;
    }
    for (let i = this.nextV6(words, 0); i >= 0; i = this.nextV6(words, i + 1)) out.push(this.v6Networks[i]!);
    return out;
  }

  /** The index of the first IPv6 network at or after `from` holding the address, or -1. */
  private nextV6(words: Uint32Array, from: number): number {
    const a0 = words[0]!;
    const a1 = words[1]!;
    const a2 = words[2]!;
    const a3 = words[3]!;
    const t = this.v6;
    for (let i = from, o = 8 * from; o < t.length; i++, o += 8) {
      if ((a0 & t[o + 4]!) === t[o] && (a1 & t[o + 5]!) === t[o + 1] && (a2 & t[o + 6]!) === t[o + 2] && (a3 & t[o + 7]!) === t[o + 3]) return i;
    }
    return -1;
  }
}

/** Every network of `set` holding the address text, most specific first (the CLI's question; allocates). */
export function networksHolding(set: NetworkSet, address: string): Network[] {
  const words = new Uint32Array(4);
  const family = parseAddressInto(address, words);
  return family === 0 ? [] : set.findAll(family, words);
}

/**
 * What a client is told where a scope grants networks, in the `description` of the OpenAPI security scheme objects
 * (`svc auth show -o wcmp2`, the public list): OpenAPI has no scheme for client addresses, so the words say that a
 * download is limited to the networks the provider grants, the WIS2 Global Services among them, and how anyone else
 * gets in. `what`: `data under the topic ...`, `the dataset ...`.
 */
export function networkLimitNote(what: string): string {
  return `Download of ${what} is limited to the networks the data provider grants, such as the WIS2 Global Services: fetch it from a WIS2 Global Cache, or present a token as described here.`;
}

/**
 * The widest network a scope grants unless the data owner says that it admits a large part of the Internet on purpose
 * (the CLI's `--allow-wide-network`; docs/cli-safety.md). IPv4: a /8, 16,777,216 addresses, the largest block ever
 * assigned to one organisation; a shorter prefix spans several organisations' networks. IPv6: a /32, the usual
 * allocation of a regional registry to a whole provider (every customer of it); a shorter prefix spans several
 * providers. A WIS2 Global Service or a partner's gateway is a handful of addresses, so a wider network is a mistake
 * (`0.0.0.0/0` typed for "any") far more often than a decision. The CRD does not enforce the bound: a hand-written
 * object may grant any network, and every view then says what it admits (networkReach).
 */
export const WIDEST_PREFIX: Readonly<Record<AddressFamily, number>> = { 4: 8, 6: 32 };

/** `IPv4` or `IPv6`. */
export function familyName(family: AddressFamily): string {
  return family === 4 ? 'IPv4' : 'IPv6';
}

/** How many addresses a network holds, in words: `16,777,216` (IPv4), `2^96` (IPv6). */
export function addressCount(n: Pick<Network, 'family' | 'prefix'>): string {
  const bits = (n.family === 4 ? 32 : 128) - n.prefix;
  return n.family === 4 ? (2 ** bits).toLocaleString('en-US') : `2^${bits}`;
}

/**
 * Why a network is too wide to grant without `--allow-wide-network`, or undefined when it is within WIDEST_PREFIX. A
 * network of prefix 0 holds every address of its family: granted, it admits everyone while the scope would read closed.
 */
export function wideNetworkRefusal(n: Pick<Network, 'family' | 'prefix' | 'cidr'>): string | undefined {
  const family = familyName(n.family);
  if (n.prefix === 0) return `${n.cidr} holds every ${family} address: granted, it would let everyone in without a token`;
  const bound = WIDEST_PREFIX[n.family];
  if (n.prefix < bound) return `${n.cidr} holds ${addressCount(n)} ${family} addresses, more than one organisation's network (the widest granted is a /${bound})`;
  return undefined;
}

/** Which addresses a scope's networks let in, all of them: every address of both families, or of one. */
export type EveryAddress = 'all' | AddressFamily;

/** What a scope's networks admit beyond "a few known clients" (networkReach). */
export interface NetworkReach {
  /** A network holds every address of both families (`all`) or of one (4, 6): those clients need nothing else. */
  readonly every?: EveryAddress;
  /** Networks wider than WIDEST_PREFIX that do not hold a whole family, canonical text, in text order. */
  readonly wide: readonly string[];
}

/** What the canonical networks `cidrs` admit (malformed ones are ignored: they grant nothing). */
export function networkReach(cidrs: Iterable<string>): NetworkReach {
  let v4 = false;
  let v6 = false;
  const wide: string[] = [];
  for (const cidr of cidrs) {
    const parsed = parseNetwork(cidr);
    if (!parsed.ok) continue;
    const n = parsed.value;
    if (n.prefix === 0) {
      if (n.family === 4) v4 = true;
      else v6 = true;
    } else if (n.prefix < WIDEST_PREFIX[n.family]) wide.push(n.cidr);
  }
  const every: EveryAddress | undefined = v4 && v6 ? 'all' : v4 ? 4 : v6 ? 6 : undefined;
  return { ...(every !== undefined ? { every } : {}), wide: [...new Set(wide)].sort() };
}

/** `every address`, `every IPv4 address`. */
export function everyAddressWords(every: EveryAddress): string {
  return every === 'all' ? 'every address' : `every ${familyName(every)} address`;
}

/**
 * What a client is told where a scope's networks hold every address of a family (the public list, `-o wcmp2`): `what`
 * is open to those clients without a credential, and the others present one as described.
 */
export function everyAddressNote(what: string, every: EveryAddress): string {
  if (every === 'all') return `Download of ${what} is open to every address: the data provider grants a network that holds them all.`;
  const other = familyName(every === 4 ? 6 : 4);
  return `Download of ${what} is open to ${everyAddressWords(every)} (the data provider grants a network that holds them all); ${other} clients present a token as described here.`;
}
