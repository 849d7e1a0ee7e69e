/**
 * The SSRF corpus of scenario S3: URLs that must never make the service connect to its own
 * network. Each aims at the canary's port, so that any of them reaching a local address would
 * be counted by the canary; the private ranges that the machine does not own are refused by the
 * same rule, and would show as a connection attempt (an `unavailable` error) if they were not.
 */

/** One URL of the corpus and what it tries. */
export interface SsrfCase {
  name: string;
  url: string;
}

/** Host names that the test's resolver answers (see `LOOPBACK_NAMES`). */
export const RESOLVER_DOMAIN = 'ssrf.test';

/**
 * What the test's resolver answers for its names: loopback in each family, and one name with a
 * public and a loopback address (any private address among several must refuse the host).
 */
export const LOOPBACK_NAMES: Record<string, { address: string; family: 4 | 6 }[]> = {
  [`canary.${RESOLVER_DOMAIN}`]: [{ address: '127.0.0.1', family: 4 }],
  [`v6.${RESOLVER_DOMAIN}`]: [{ address: '::1', family: 6 }],
  [`mixed.${RESOLVER_DOMAIN}`]: [{ address: '93.184.216.34', family: 4 }, { address: '127.0.0.1', family: 4 }],
  [`metadata.${RESOLVER_DOMAIN}`]: [{ address: '169.254.169.254', family: 4 }],
};

const hosts = (group: string, list: readonly string[]): [string, string][] => list.map((host) => [`${group} ${host}`, host]);

/** Hosts (as written in a URL, before `:port`) and the idea behind each. */
const HOSTS: [string, string][] = [
  // 127.0.0.1 in every IPv4 spelling the WHATWG parser accepts.
  ...hosts('loopback', ['127.0.0.1', '2130706433', '0177.0.0.1', '017700000001', '0x7f.0x0.0x0.0x1', '0x7f000001', '0x7f.1', '127.1', '127.0.1', '127.255.255.254', '0000177.0.0.01']),
  ...hosts('10/8', ['10.0.0.1', '012.0.0.1', '0xa000001', '167772161', '10.255.255.255']),
  ...hosts('172.16/12', ['172.16.0.1', '172.31.255.254', '0xac100001', '2886729729']),
  ...hosts('192.168/16', ['192.168.0.1', '192.168.255.255', '0xc0a80001', '3232235521', '0300.0250.0.1']),
  ...hosts('metadata', ['169.254.169.254', '2852039166', '0xa9fea9fe', '0251.0376.0251.0376', '169.254.0.1']),
  ...hosts('this-network', ['0.0.0.0', '0', '0x0', '0.1.2.3']),
  ...hosts('100.64/10', ['100.64.0.1', '100.127.255.254']),
  ...hosts('198.18/15', ['198.18.0.1', '198.19.255.254']),
  ...hosts('224/4', ['224.0.0.1', '239.255.255.250']),
  ...hosts('240/4', ['240.0.0.1', '255.255.255.254']),
  ...hosts('broadcast', ['255.255.255.255', '4294967295']),
  ...hosts('ipv6', [
    '[::1]', '[0:0:0:0:0:0:0:1]', '[::]', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[0:0:0:0:0:ffff:127.0.0.1]',
    '[64:ff9b::7f00:1]', '[64:ff9b::127.0.0.1]', '[::ffff:a00:1]', '[::ffff:a9fe:a9fe]', '[fd00:ec2::254]',
    '[fc00::1]', '[fd12:3456::1]', '[fe80::1]', '[fec0::1]', '[ff02::1]', '[::127.0.0.1]', '[::7f00:1]',
    '[2002:7f00:1::]', '[2002:7f00:1::1]', '[2002:a9fe:a9fe::]', '[64:ff9b:1::7f00:1]', '[100::1]',
  ]),
  // Encodings the URL parser undoes before the address rules see the host.
  ...hosts('encoded', ['%31%32%37.0.0.1', '127%2E0%2E0%2E1', '%6c%6f%63%61%6c%68%6f%73%74', '①②⑦.⓪.⓪.①', '１２７．０．０．１', 'ⓛⓞⓒⓐⓛⓗⓞⓢⓣ', 'LOCALHOST', 'loc%61lhost']),
  ...hosts('trailing dot', ['127.0.0.1.', 'localhost.', `canary.${RESOLVER_DOMAIN}.`]),
  ...hosts('dns', ['localhost', 'sub.localhost', `canary.${RESOLVER_DOMAIN}`, `v6.${RESOLVER_DOMAIN}`, `mixed.${RESOLVER_DOMAIN}`, `metadata.${RESOLVER_DOMAIN}`]),
];

/** The whole corpus against a canary listening on `port` (of every local address). */
export function ssrfCorpus(port: number): SsrfCase[] {
  const direct = HOSTS.map(([name, host]): SsrfCase => ({ name, url: `http://${host}:${port}/ssrf/${encodeURIComponent(name)}` }));
  const tricks: SsrfCase[] = [
    { name: 'userinfo public@', url: `http://public@127.0.0.1:${port}/` },
    { name: 'userinfo user:pw@', url: `http://user:pw@127.0.0.1:${port}/` },
    { name: 'userinfo host@', url: `http://example.com@127.0.0.1:${port}/` },
    { name: 'userinfo encoded @', url: `http://example.com%40127.0.0.1:${port}/` },
    { name: 'backslash before @', url: `http://127.0.0.1:${port}\\@example.com/` },
    { name: 'https to loopback', url: `https://127.0.0.1:${port}/` },
    { name: 'upper-case scheme', url: `HTTP://127.0.0.1:${port}/` },
    { name: 'ipv6 zone id', url: `http://[fe80::1%25lo]:${port}/` },
    { name: 'scheme file', url: 'file:///etc/passwd' },
    { name: 'scheme ftp', url: `ftp://127.0.0.1:${port}/` },
    { name: 'scheme gopher', url: `gopher://127.0.0.1:${port}/_GET%20/%20HTTP/1.0%0d%0a` },
    { name: 'scheme dict', url: `dict://127.0.0.1:${port}/info` },
    { name: 'scheme ws', url: `ws://127.0.0.1:${port}/` },
    { name: 'scheme data', url: 'data:image/png;base64,iVBORw0KGgo=' },
    { name: 'scheme javascript', url: 'javascript:fetch("http://127.0.0.1")' },
    { name: 'scheme-relative', url: `//127.0.0.1:${port}/` },
    { name: 'no scheme', url: `127.0.0.1:${port}` },
  ];
  return [...direct, ...tricks];
}

/**
 * The short run's sample: the first case of every idea (group), so each form is still tried on
 * every URL input within make test's minute; one input gets the whole corpus either way.
 */
export function shortSubset(corpus: readonly SsrfCase[]): SsrfCase[] {
  const seen = new Set<string>();
  return corpus.filter((c) => {
    const group = c.name.split(' ')[0]!;
    if (seen.has(group)) return false;
    seen.add(group);
    return true;
  });
}

/**
 * Redirect targets tried from an allowed ("outside") server: the corpus's URLs a server can put
 * in a Location header (the scheme tricks and credentials aside, which `new URL` keeps as written).
 */
export function redirectTargets(corpus: readonly SsrfCase[]): SsrfCase[] {
  return corpus.filter((c) => !c.name.startsWith('scheme-relative') && !c.name.startsWith('no scheme')).map((c) => ({ name: `redirect to ${c.name}`, url: c.url }));
}
