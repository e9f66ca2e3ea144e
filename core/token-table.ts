/**
 * The token records of a decision index: (SHA-256 digest, owner, expiry) in an open-addressing hash table
 * held in typed arrays, so 100,000 tokens are a few ArrayBuffers outside the GC heap instead of hundreds of
 * thousands of strings and Map entries the collector has to trace and move on every reload.
 *
 * Records are stored densely, in the order added: record r has its digest in keys[32r, 32r+32), the index
 * of its owner in `scopes` in owners[r], and its expiry in ms since the epoch in expires[r] (Infinity:
 * never). The hash table itself, `slots`, holds record numbers (-1: an empty slot); its capacity is a power
 * of two at least twice the number of records, so a probe always reaches an empty slot and stays short.
 * (The first design kept the 32 key bytes, owner and expiry in the slots themselves; slots of 4 bytes
 * pointing at dense records take less than half the memory at that load factor, and growing the table
 * rehashes record numbers instead of moving 44 bytes per record.)
 *
 * One digest may have several records, one per owner (a token granted in several scopes); they all share
 * the digest's home slot, so `first` / `next` walk them along one probe sequence. There is no deletion: a
 * changed snapshot gets a new table.
 *
 * The home slot is simply the first 4 digest bytes: the keys are SHA-256 digests, uniformly distributed,
 * and nobody can pick a token whose digest lands in a given slot without SHA-256 preimages. Hash flooding
 * is impossible by construction anyway: records come only from the snapshot (written from ProtectedScopes,
 * i.e. by those who may grant access already), and a request can only look up, never insert.
 */

const DIGEST_BYTES = 32;
const MIN_CAPACITY = 16;

/** One record as plain data, for tests and diagnostics (not for the request path: it allocates). */
export interface TokenTableRecord<Owner> {
  readonly hex: string;
  readonly owner: Owner;
  readonly expiresAt: number;
}

function capacityFor(records: number): number {
  let cap = MIN_CAPACITY;
  while (cap < records * 2) cap *= 2;
  return cap;
}

/** The home slot of the digest at `bytes[offset..]`: its first 4 bytes as a uint32, masked. */
function homeOf(bytes: Uint8Array, offset: number, mask: number): number {
  return ((bytes[offset]! << 24) | (bytes[offset + 1]! << 16) | (bytes[offset + 2]! << 8) | bytes[offset + 3]!) & mask;
}

/** Compares 32 bytes of `keys` at `at` with those of `digest` at `from`, in place (no subarray, no allocation). */
function sameDigest(keys: Uint8Array, at: number, digest: Uint8Array, from: number): boolean {
  for (let i = 0; i < DIGEST_BYTES; i++) if (keys[at + i] !== digest[from + i]) return false;
  return true;
}

/** Value of a lowercase hex digit by char code (below 128), 16 for anything else. */
const HEX_VALUE = new Uint8Array(128).fill(16);
for (let i = 0; i < 16; i++) HEX_VALUE['0123456789abcdef'.charCodeAt(i)] = i;

/**
 * Decodes the 64 lowercase hex characters at `s[from..]`, which must end the string, into `out` (when
 * given); false when they are not exactly that. Branch-free per character: run 100,000 times a reload on
 * random hex, this is about twice as fast as a regex test followed by Buffer.write.
 */
function decodeDigestHex(s: string, from: number, out: Uint8Array | undefined): boolean {
  if (s.length !== from + DIGEST_BYTES * 2) return false;
  let bad = 0;
  for (let i = 0; i < DIGEST_BYTES; i++) {
    const a = s.charCodeAt(from + 2 * i);
    const b = s.charCodeAt(from + 2 * i + 1);
    const hi = HEX_VALUE[a & 127]!;
    const lo = HEX_VALUE[b & 127]!;
    bad |= ((a | b) & 0xff80) | ((hi | lo) & 16);
    if (out) out[i] = (hi << 4) | lo;
  }
  return bad === 0;
}

/** Whether `s` from index `from` on is exactly 64 lowercase hex characters. */
export function isDigestHex(s: string, from = 0): boolean {
  return decodeDigestHex(s, from, undefined);
}

export class TokenTable<Owner> {
  private readonly mask: number;

  /** Use TokenTableBuilder; the arrays are owned by the table from here on and never change. */
  constructor(
    private readonly slots: Int32Array,
    private readonly keys: Uint8Array,
    private readonly owners: Int32Array,
    private readonly expires: Float64Array,
    /** The owners, indexed by a record's owner number. */
    readonly scopes: readonly Owner[],
    /** The number of records. */
    readonly size: number,
  ) {
    this.mask = slots.length - 1;
  }

  static empty<Owner>(): TokenTable<Owner> {
    return new TokenTableBuilder<Owner>().build();
  }

  get capacity(): number {
    return this.slots.length;
  }

  /** The slot of the digest's first record, or -1 when the digest has none. */
  first(digest: Uint8Array): number {
    if (digest.length !== DIGEST_BYTES) return -1;
    return this.probe(digest, homeOf(digest, 0, this.mask));
  }

  /** The slot of the digest's next record after the one at `slot`, or -1 when there is none. */
  next(digest: Uint8Array, slot: number): number {
    return this.probe(digest, (slot + 1) & this.mask);
  }

  private probe(digest: Uint8Array, from: number): number {
    const { slots, keys, mask } = this;
    for (let s = from, r = slots[s]!; r !== -1; s = (s + 1) & mask, r = slots[s]!) {
      if (sameDigest(keys, r * DIGEST_BYTES, digest, 0)) return s;
    }
    return -1;
  }

  ownerAt(slot: number): Owner {
    return this.scopes[this.owners[this.slots[slot]!]!]!;
  }

  expiresAt(slot: number): number {
    return this.expires[this.slots[slot]!]!;
  }

  /**
   * Adds this table's records number `start` to `end` (in the order added) whose owner passes `keep` to
   * `builder`, as bytes: nothing is parsed again. For a snapshot that changed a few scopes, the next table
   * starts as this one minus their records; in ranges, so the caller can yield between them.
   */
  copyInto(builder: TokenTableBuilder<Owner>, keep: (owner: Owner) => boolean, start = 0, end = this.size): void {
    let lastOwner = -1;
    let kept = false;
    for (let r = start; r < end && r < this.size; r++) {
      const o = this.owners[r]!;
      if (o !== lastOwner) {
        lastOwner = o;
        kept = keep(this.scopes[o]!);
      }
      if (kept) builder.addDigest(this.keys, r * DIGEST_BYTES, this.scopes[o]!, this.expires[r]!);
    }
  }

  /** Every record, in the order added. */
  records(): TokenTableRecord<Owner>[] {
    const out: TokenTableRecord<Owner>[] = [];
    const bytes = Buffer.from(this.keys.buffer, this.keys.byteOffset, this.keys.byteLength);
    for (let r = 0; r < this.size; r++) {
      out.push({ hex: bytes.toString('hex', r * DIGEST_BYTES, (r + 1) * DIGEST_BYTES), owner: this.scopes[this.owners[r]!]!, expiresAt: this.expires[r]! });
    }
    return out;
  }
}

/**
 * Collects records, then hands its arrays to a TokenTable. Sized from `expectedRecords` when the caller
 * knows it; otherwise (or when more come) the records double and the slots are rehashed (record numbers
 * only, which costs little next to parsing the snapshot).
 */
export class TokenTableBuilder<Owner> {
  private slots: Int32Array;
  private keys: Uint8Array;
  private owners: Int32Array;
  private expires: Float64Array;
  private count = 0;
  private readonly scopes: Owner[] = [];
  private readonly ownerIds = new Map<Owner, number>();
  private lastOwner: Owner | undefined;
  private lastOwnerId = -1;
  private readonly scratch = new Uint8Array(DIGEST_BYTES);
  private built = false;

  constructor(expectedRecords = 0) {
    this.slots = new Int32Array(capacityFor(expectedRecords)).fill(-1);
    const records = Math.max(expectedRecords, MIN_CAPACITY);
    this.keys = new Uint8Array(records * DIGEST_BYTES);
    this.owners = new Int32Array(records);
    this.expires = new Float64Array(records);
  }

  get size(): number {
    return this.count;
  }

  /**
   * Adds a record for the digest written as 64 lowercase hex, from index `from` of `hex` on (7 reads a
   * `sha256:<hex>` hash without slicing it). When the owner already has a record for the digest, that
   * record takes the new expiry (the last one wins, as Map.set did) and false is returned; true means a
   * new record.
   */
  add(hex: string, owner: Owner, expiresAt: number, from = 0): boolean {
    if (this.built) throw new Error('TokenTableBuilder: add after build');
    if (!decodeDigestHex(hex, from, this.scratch)) throw new RangeError('a token digest must be 64 lowercase hex characters');
    return this.insert(this.scratch, 0, this.ownerId(owner), expiresAt);
  }

  /** `add` for a digest given as the 32 bytes of `bytes` at `offset`. */
  addDigest(bytes: Uint8Array, offset: number, owner: Owner, expiresAt: number): boolean {
    if (this.built) throw new Error('TokenTableBuilder: add after build');
    if (offset < 0 || offset + DIGEST_BYTES > bytes.length) throw new RangeError('a token digest is 32 bytes');
    return this.insert(bytes, offset, this.ownerId(owner), expiresAt);
  }

  /** The table; its arrays are trimmed to the records (one copy) unless they fit already. */
  build(): TokenTable<Owner> {
    this.built = true;
    const n = this.count;
    const fit = <T extends Uint8Array | Int32Array | Float64Array>(a: T, len: number): T => (a.length === len ? a : (a.slice(0, len) as T));
    return new TokenTable(this.slots, fit(this.keys, n * DIGEST_BYTES), fit(this.owners, n), fit(this.expires, n), this.scopes, n);
  }

  private ownerId(owner: Owner): number {
    if (owner === this.lastOwner && this.lastOwnerId >= 0) return this.lastOwnerId;
    let id = this.ownerIds.get(owner);
    if (id === undefined) {
      id = this.scopes.length;
      this.scopes.push(owner);
      this.ownerIds.set(owner, id);
    }
    this.lastOwner = owner;
    this.lastOwnerId = id;
    return id;
  }

  private insert(digest: Uint8Array, from: number, owner: number, expiresAt: number): boolean {
    // Every record of this digest sits between its home slot and the next empty one: an existing record of
    // the same owner is found on the way.
    let mask = this.slots.length - 1;
    let s = homeOf(digest, from, mask);
    for (let r = this.slots[s]!; r !== -1; s = (s + 1) & mask, r = this.slots[s]!) {
      if (this.owners[r] === owner && sameDigest(this.keys, r * DIGEST_BYTES, digest, from)) {
        this.expires[r] = expiresAt;
        return false;
      }
    }
    const r = this.count;
    if ((r + 1) * 2 > this.slots.length) {
      this.rehash(this.slots.length * 2);
      mask = this.slots.length - 1;
      for (s = homeOf(digest, from, mask); this.slots[s] !== -1; s = (s + 1) & mask);
    }
    if (r === this.owners.length) this.growRecords(r * 2);
    for (let i = 0; i < DIGEST_BYTES; i++) this.keys[r * DIGEST_BYTES + i] = digest[from + i]!;
    this.owners[r] = owner;
    this.expires[r] = expiresAt;
    this.slots[s] = r;
    this.count = r + 1;
    return true;
  }

  private rehash(capacity: number): void {
    const slots = new Int32Array(capacity).fill(-1);
    const mask = capacity - 1;
    for (let r = 0; r < this.count; r++) {
      let s = homeOf(this.keys, r * DIGEST_BYTES, mask);
      while (slots[s] !== -1) s = (s + 1) & mask;
      slots[s] = r;
    }
    this.slots = slots;
  }

  private growRecords(records: number): void {
    const keys = new Uint8Array(records * DIGEST_BYTES);
    keys.set(this.keys);
    const owners = new Int32Array(records);
    owners.set(this.owners);
    const expires = new Float64Array(records);
    expires.set(this.expires);
    this.keys = keys;
    this.owners = owners;
    this.expires = expires;
  }
}
