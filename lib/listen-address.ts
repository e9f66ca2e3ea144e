/**
 * Listen addresses on command lines, one grammar for every program: `HOST:PORT`, `[IPv6]:PORT`, `:PORT` or
 * a bare `PORT`; the last two name no host, which a server takes as every interface. A host is an IPv4
 * address or a host name, or, in brackets, an IPv6 address. Port 0 lets the system pick a free one.
 *
 * Checked here, before any socket exists, so a typo is a usage error that names the flag rather than an
 * EADDRNOTAVAIL or getaddrinfo failure at start-up.
 */
interface ListenAddress {
  /** Undefined: no host was named (every interface). */
  readonly host: string | undefined;
  readonly port: number;
}

const GRAMMAR = /^(?:(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]*)):)?(\d+)$/;
const HOST_NAME = /^[A-Za-z0-9.-]+$/;
const MAX_PORT = 65535;

/** The address, or a RangeError whose message quotes the text and says what is wrong with it. */
export function parseListenAddress(text: string): ListenAddress {
  const quoted = JSON.stringify(text);
  const m = GRAMMAR.exec(text.trim());
  if (!m) throw new RangeError(`${quoted} is not a listen address: expected HOST:PORT, [IPv6]:PORT, :PORT or PORT, such as 127.0.0.1:8080, [::]:8080 or :8080`);
  const [, ipv6, name, digits] = m;
  const port = Number(digits);
  if (port > MAX_PORT) throw new RangeError(`${quoted}: port ${digits} is above ${MAX_PORT}`);
  if (ipv6 !== undefined && !isIpv6(ipv6)) throw new RangeError(`${quoted}: ${ipv6} is not an IPv6 address`);
  if (name && !HOST_NAME.test(name)) throw new RangeError(`${quoted}: ${name} is neither an IP address nor a host name`);
  return { host: ipv6 ?? (name || undefined), port };
}

/** The WHATWG URL parser holds the one complete IPv6 grammar that needs no import. */
function isIpv6(text: string): boolean {
  try {
    new URL(`http://[${text}]/`);
    return true;
  } catch {
    return false;
  }
}
