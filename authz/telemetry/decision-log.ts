/**
 * The per-decision audit line, written to the logger's own destination in exactly the shape pino writes
 * (`{"level":"info","time":…,<the logger's bindings>,…fields…,"msg":"decision"}`), so it is one more line
 * of the same JSON log.
 *
 * Hand-serialized because it is written for every governed request: pino's generic serializer (walk the
 * object, stringify each value) cost about as much as the decision itself at bench rates; here the fields
 * are known, most values come from closed sets, and only the path and scope may need JSON escaping.
 * A test holds the lines equal to what pino itself writes for the same fields.
 */
import { pino, type Logger } from 'pino';

export interface DecisionFields {
  readonly endpoint: string;
  readonly method: string | undefined;
  readonly outcome: string;
  readonly path?: string | undefined;
  readonly scope?: string | undefined;
  readonly tokenId?: string | undefined;
  readonly tokenSource?: string | undefined;
  readonly why?: string | undefined;
  readonly reason?: string | undefined;
  /** An identity's issuer, username and granting group (JWT credentials): never the JWT itself. */
  readonly issuer?: string | undefined;
  readonly user?: string | undefined;
  readonly group?: string | undefined;
  /** A network grant: the network of the scope that held the client address, and that address. */
  readonly network?: string | undefined;
  readonly address?: string | undefined;
}

interface Destination {
  write(line: string): unknown;
}

/** Whether JSON.stringify would escape something in `s`: a quote, a backslash, a control, a surrogate. */
function needsEscape(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return true;
  }
  return false;
}

function str(s: string): string {
  return needsEscape(s) ? JSON.stringify(s) : `"${s}"`;
}

export class DecisionLog {
  private readonly stream: Destination;
  private readonly bindings: string;

  constructor(private readonly logger: Logger) {
    this.stream = (logger as unknown as Record<symbol, Destination>)[pino.symbols.streamSym]!;
    this.bindings = (logger as unknown as Record<symbol, string>)[pino.symbols.chindingsSym] ?? '';
  }

  /** Whether lines at `level` are written now (the level can change at run time). */
  enabled(level: 'info' | 'debug'): boolean {
    return this.logger.isLevelEnabled(level);
  }

  write(level: 'info' | 'debug', f: DecisionFields): void {
    let line = `{"level":"${level}","time":${Date.now()}${this.bindings},"endpoint":"${f.endpoint}"`;
    if (f.method !== undefined) line += `,"method":${str(f.method)}`;
    line += `,"outcome":"${f.outcome}"`;
    if (f.path !== undefined) line += `,"path":${str(f.path)}`;
    if (f.scope !== undefined) line += `,"scope":${str(f.scope)}`;
    if (f.tokenId !== undefined) line += `,"tokenId":"${f.tokenId}"`;
    if (f.tokenSource !== undefined) line += `,"tokenSource":"${f.tokenSource}"`;
    if (f.why !== undefined) line += `,"why":"${f.why}"`;
    if (f.reason !== undefined) line += `,"reason":${str(f.reason)}`;
    if (f.issuer !== undefined) line += `,"issuer":${str(f.issuer)}`;
    if (f.user !== undefined) line += `,"user":${str(f.user)}`;
    if (f.group !== undefined) line += `,"group":${str(f.group)}`;
    if (f.network !== undefined) line += `,"network":${str(f.network)}`;
    if (f.address !== undefined) line += `,"address":${str(f.address)}`;
    this.stream.write(`${line},"msg":"decision"}\n`);
  }
}
