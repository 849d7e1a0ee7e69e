import net from 'node:net';

/**
 * Which network addresses the service may fetch from on a caller's behalf (input URLs): only
 * ordinary public unicast ones. Every range of the IANA IPv4 and IPv6 Special-Purpose Address
 * Registries is refused (loopback, private, link-local, unique-local, carrier-grade NAT,
 * documentation, benchmarking, translation, anycast service and reserved ranges), and so are
 * multicast, broadcast and cloud metadata addresses, unless an entry of the allow-list
 * (`FETCH_ALLOW_PRIVATE`, for development) admits them. The few special-purpose ranges the
 * registries call globally reachable (anycast PCP/TURN, AS112, AMT) are refused too: no input
 * file lives there. IPv6 forms that carry an IPv4 address are judged by that address
 * (`::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`) or refused outright (deprecated forms).
 */

/** A blocked range: its network, prefix length, family, and the words that explain it. */
interface BlockedRange {
  network: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
  what: string;
}

const v4 = (network: string, prefix: number, what: string): BlockedRange => ({ network, prefix, family: 'ipv4', what });
const v6 = (network: string, prefix: number, what: string): BlockedRange => ({ network, prefix, family: 'ipv6', what });

/** Checked in order: the first match names the reason, so narrower ranges come first. */
const BLOCKED: BlockedRange[] = [
  v4('169.254.169.254', 32, 'a cloud metadata address'),
  v6('fd00:ec2::254', 128, 'a cloud metadata address'),
  // IANA IPv4 Special-Purpose Address Registry.
  v4('0.0.0.0', 8, 'a "this network" address'),
  v4('10.0.0.0', 8, 'a private address'),
  v4('100.64.0.0', 10, 'a carrier-grade NAT address'),
  v4('127.0.0.0', 8, 'a loopback address'),
  v4('169.254.0.0', 16, 'a link-local address'),
  v4('172.16.0.0', 12, 'a private address'),
  v4('192.0.0.0', 24, 'a reserved (IETF protocol) address'),
  v4('192.0.2.0', 24, 'a documentation (TEST-NET-1) address'),
  v4('192.31.196.0', 24, 'an AS112 (DNS sink) address'),
  v4('192.52.193.0', 24, 'an AMT (multicast tunnelling) address'),
  v4('192.88.99.0', 24, 'a 6to4 relay anycast address'),
  v4('192.168.0.0', 16, 'a private address'),
  v4('192.175.48.0', 24, 'an AS112 (DNS sink) address'),
  v4('198.18.0.0', 15, 'a benchmarking address'),
  v4('198.51.100.0', 24, 'a documentation (TEST-NET-2) address'),
  v4('203.0.113.0', 24, 'a documentation (TEST-NET-3) address'),
  v4('224.0.0.0', 4, 'a multicast address'),
  v4('240.0.0.0', 4, 'a reserved address'),
  // IANA IPv6 Special-Purpose Address Registry, and the deprecated forms beside it.
  v6('::', 128, 'the unspecified address'),
  v6('::1', 128, 'a loopback address'),
  v6('::', 96, 'an IPv4-compatible address (deprecated)'),
  v6('::ffff:0:0:0', 96, 'an IPv4-translated address'),
  v6('64:ff9b:1::', 48, 'a local-use IPv4/IPv6 translation address'),
  v6('100::', 64, 'a discard-only address'),
  v6('100:0:0:1::', 64, 'a dummy IPv6 prefix address'),
  v6('2001:db8::', 32, 'a documentation address'),
  v6('2001::', 23, 'a reserved (IETF protocol) address'),
  v6('2002::', 16, 'a 6to4 address'),
  v6('2620:4f:8000::', 48, 'an AS112 (DNS sink) address'),
  v6('3fff::', 20, 'a documentation address'),
  v6('5f00::', 16, 'a segment routing (SRv6 SID) address'),
  v6('fc00::', 7, 'a unique-local (private) address'),
  v6('fe80::', 10, 'a link-local address'),
  v6('fec0::', 10, 'a site-local address (deprecated)'),
  v6('ff00::', 8, 'a multicast address'),
];

const RANGES = BLOCKED.map((range) => {
  const list = new net.BlockList();
  list.addSubnet(range.network, range.prefix, range.family);
  return { ...range, list };
});

function familyOf(address: string): 'ipv4' | 'ipv6' | null {
  const version = net.isIP(address);
  return version === 4 ? 'ipv4' : version === 6 ? 'ipv6' : null;
}

/** Expands an IPv6 address to its eight 16-bit groups. */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const fill = tail === undefined ? [] : new Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...fill, ...right].map((g) => parseInt(g, 16));
}

/**
 * The IPv4 address an IPv6 one carries, when it is IPv4-mapped (`::ffff:a.b.c.d`) or NAT64
 * (`64:ff9b::a.b.c.d`): those reach the IPv4 address, so they are judged as it.
 */
export function embeddedIpv4(address: string): string | null {
  if (familyOf(address) !== 'ipv6') return null;
  const g = ipv6Groups(address);
  const mapped = g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff;
  const nat64 = g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0);
  if (!mapped && !nat64) return null;
  return [g[6]! >> 8, g[6]! & 0xff, g[7]! >> 8, g[7]! & 0xff].join('.');
}

/**
 * Why the service must not connect to `address` (e.g. "a loopback address"), or null for a public
 * address. An address that is not an IP literal is refused too.
 */
export function blockedReason(address: string): string | null {
  const ip = embeddedIpv4(address) ?? address;
  const family = familyOf(ip);
  if (!family) return 'not an IP address';
  if (family === 'ipv4' && ip === '255.255.255.255') return 'the broadcast address';
  for (const range of RANGES) {
    if (range.family === family && range.list.check(ip, family)) return range.what;
  }
  return null;
}

type AllowEntry =
  | { kind: 'subnet'; list: net.BlockList; port: null }
  | { kind: 'address'; address: string; port: number | null }
  | { kind: 'host'; host: string; port: number | null };

const HOSTNAME = /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/i;

function parsePort(raw: string, entry: string): number {
  const port = Number(raw);
  if (!/^\d{1,5}$/.test(raw) || port < 1 || port > 65535) throw new Error(`"${entry}" has an invalid port`);
  return port;
}

function parseEntry(entry: string): AllowEntry {
  const slash = entry.indexOf('/');
  if (slash >= 0) {
    const network = entry.slice(0, slash);
    const family = familyOf(network);
    const prefix = Number(entry.slice(slash + 1));
    const max = family === 'ipv4' ? 32 : 128;
    if (!family || !/^\d{1,3}$/.test(entry.slice(slash + 1)) || prefix > max) throw new Error(`"${entry}" is not a valid CIDR range`);
    const list = new net.BlockList();
    list.addSubnet(network, prefix, family);
    return { kind: 'subnet', list, port: null };
  }
  if (familyOf(entry)) return { kind: 'address', address: entry, port: null };
  const v6WithPort = /^\[([^\]]+)\]:(\d+)$/.exec(entry);
  if (v6WithPort) {
    if (familyOf(v6WithPort[1]!) !== 'ipv6') throw new Error(`"${entry}" is not a valid [IPv6]:port`);
    return { kind: 'address', address: v6WithPort[1]!, port: parsePort(v6WithPort[2]!, entry) };
  }
  const withPort = /^([^:]+):(\d+)$/.exec(entry);
  const host = withPort ? withPort[1]! : entry;
  const port = withPort ? parsePort(withPort[2]!, entry) : null;
  if (familyOf(host)) return { kind: 'address', address: host, port };
  if (!HOSTNAME.test(host)) throw new Error(`"${entry}" is not a CIDR range, an IP address or a host name (each optionally with :port)`);
  return { kind: 'host', host: host.toLowerCase().replace(/\.$/, ''), port };
}

/**
 * Exceptions to the address rules, for development (`FETCH_ALLOW_PRIVATE`): CIDR ranges
 * (`10.0.0.0/8`), addresses (`127.0.0.1`, `::1`), host names (`minio.local`), the last two
 * optionally with a port (`127.0.0.1:9000`, `[::1]:9000`, `assets.local:8443`), which then
 * admit only that port. A host name entry admits whatever that name resolves to.
 */
export class AddressAllowList {
  private readonly entries: AllowEntry[];

  /** Throws an `Error` naming the first malformed entry. */
  constructor(entries: readonly string[] = []) {
    this.entries = entries.map((e) => e.trim()).filter((e) => e !== '').map(parseEntry);
  }

  /** Parses a comma-separated list, e.g. the value of `FETCH_ALLOW_PRIVATE`. */
  static parse(list: string): AddressAllowList {
    return new AddressAllowList(list.split(','));
  }

  get isEmpty(): boolean {
    return this.entries.length === 0;
  }

  /** Whether a connection to `address`:`port`, reached through the URL host `host`, is admitted. */
  allows(host: string, address: string, port: number): boolean {
    const name = host.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
    const family = familyOf(address);
    return this.entries.some((entry) => {
      if (entry.port !== null && entry.port !== port) return false;
      if (entry.kind === 'host') return entry.host === name;
      if (entry.kind === 'address') return family !== null && net.isIP(entry.address) === net.isIP(address) && sameAddress(entry.address, address);
      return family !== null && entry.list.check(address, family);
    });
  }
}

function sameAddress(a: string, b: string): boolean {
  if (net.isIPv4(a)) return a === b;
  const ga = ipv6Groups(a);
  const gb = ipv6Groups(b);
  return ga.every((x, i) => x === gb[i]);
}

/**
 * What is wrong with `raw` as a URL the service would fetch, or null: it must be an absolute
 * `http:` or `https:` URL with a host and without user name or password. A cheap check (no DNS):
 * the address rules are applied when the URL is fetched.
 */
export function fetchableUrlProblem(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not a valid URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `uses "${url.protocol.replace(/:$/, '')}"; the service fetches only http and https URLs`;
  if (url.username !== '' || url.password !== '') return 'carries a user name or password; put no credentials in input URLs';
  if (url.hostname === '') return 'has no host';
  return null;
}
