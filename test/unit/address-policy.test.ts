import { AddressAllowList, blockedReason, embeddedIpv4, fetchableUrlProblem } from '../../services/platform/address-policy';
import { sniffMimeType } from '../../services/nodes';

describe('the address rules of input fetching', () => {
  it.each([
    ['127.0.0.1', 'a loopback address'],
    ['127.255.0.9', 'a loopback address'],
    ['0.0.0.0', 'a "this network" address'],
    ['10.1.2.3', 'a private address'],
    ['100.64.0.1', 'a carrier-grade NAT address'],
    ['169.254.169.254', 'a cloud metadata address'],
    ['169.254.10.1', 'a link-local address'],
    ['172.16.0.1', 'a private address'],
    ['172.31.255.255', 'a private address'],
    ['192.0.0.8', 'a reserved (IETF protocol) address'],
    ['192.168.1.1', 'a private address'],
    ['198.19.0.1', 'a benchmarking address'],
    ['224.0.0.1', 'a multicast address'],
    ['240.0.0.1', 'a reserved address'],
    ['255.255.255.255', 'the broadcast address'],
    ['::', 'the unspecified address'],
    ['::1', 'a loopback address'],
    ['fc00::1', 'a unique-local (private) address'],
    ['fd12:3456::1', 'a unique-local (private) address'],
    ['fd00:ec2::254', 'a cloud metadata address'],
    ['fe80::1', 'a link-local address'],
    ['ff02::1', 'a multicast address'],
    ['::ffff:127.0.0.1', 'a loopback address'],
    ['::ffff:a9fe:a9fe', 'a cloud metadata address'],
    ['64:ff9b::10.0.0.1', 'a private address'],
    ['not-an-ip', 'not an IP address'],
    // Fuzzing found connections attempted to these.
    ['::7f00:1', 'an IPv4-compatible address (deprecated)'],
    ['::8.8.8.8', 'an IPv4-compatible address (deprecated)'],
    ['::ffff:0:7f00:1', 'an IPv4-translated address'],
    ['::ffff:0:127.0.0.1', 'an IPv4-translated address'],
    ['192.0.2.10', 'a documentation (TEST-NET-1) address'],
    ['198.51.100.7', 'a documentation (TEST-NET-2) address'],
    ['203.0.113.200', 'a documentation (TEST-NET-3) address'],
    // The rest of the IANA special-purpose registries.
    ['192.0.0.9', 'a reserved (IETF protocol) address'],
    ['192.31.196.1', 'an AS112 (DNS sink) address'],
    ['192.52.193.1', 'an AMT (multicast tunnelling) address'],
    ['192.88.99.1', 'a 6to4 relay anycast address'],
    ['192.175.48.6', 'an AS112 (DNS sink) address'],
    ['198.18.0.1', 'a benchmarking address'],
    ['64:ff9b:1::a00:1', 'a local-use IPv4/IPv6 translation address'],
    ['100::1', 'a discard-only address'],
    ['100:0:0:1::1', 'a dummy IPv6 prefix address'],
    ['2001:db8::1', 'a documentation address'],
    ['3fff::1', 'a documentation address'],
    ['2001::1', 'a reserved (IETF protocol) address'],
    ['2001:2::1', 'a reserved (IETF protocol) address'],
    ['2001:20::1', 'a reserved (IETF protocol) address'],
    ['2002:7f00:1::1', 'a 6to4 address'],
    ['2620:4f:8000::1', 'an AS112 (DNS sink) address'],
    ['5f00::1', 'a segment routing (SRv6 SID) address'],
    ['fec0::1', 'a site-local address (deprecated)'],
    ['::ffff:192.0.2.1', 'a documentation (TEST-NET-1) address'],
    ['64:ff9b::203.0.113.1', 'a documentation (TEST-NET-3) address'],
  ])('refuses %s as %s', (address, reason) => {
    expect(blockedReason(address)).toBe(reason);
  });

  it.each(['8.8.8.8', '172.32.0.1', '100.128.0.1', '1.1.1.1', '192.0.3.1', '198.20.0.1', '2606:4700:4700::1111', '2001:200::1', '2001:4860::8888', '::ffff:8.8.8.8', '64:ff9b::808:808'])('admits the public address %s', (address) => {
    expect(blockedReason(address)).toBeNull();
  });

  it('reads the IPv4 address inside mapped and NAT64 IPv6 addresses', () => {
    expect(embeddedIpv4('::ffff:7f00:1')).toBe('127.0.0.1');
    expect(embeddedIpv4('64:ff9b::a00:1')).toBe('10.0.0.1');
    expect(embeddedIpv4('2001:db8::1')).toBeNull();
    expect(embeddedIpv4('10.0.0.1')).toBeNull();
  });

  it('allow-lists ranges, addresses, host names and ports', () => {
    const allow = AddressAllowList.parse('10.0.0.0/8, ::1, 127.0.0.1:9000, assets.local, minio.local:9443, [fd00::5]:80');
    expect(allow.allows('x', '10.9.9.9', 80)).toBe(true);
    expect(allow.allows('x', '11.0.0.1', 80)).toBe(false);
    expect(allow.allows('x', '0:0:0:0:0:0:0:1', 1234)).toBe(true);
    expect(allow.allows('x', '127.0.0.1', 9000)).toBe(true);
    expect(allow.allows('x', '127.0.0.1', 9001)).toBe(false);
    expect(allow.allows('Assets.Local.', '127.0.0.1', 1)).toBe(true);
    expect(allow.allows('minio.local', '127.0.0.1', 9443)).toBe(true);
    expect(allow.allows('minio.local', '127.0.0.1', 80)).toBe(false);
    expect(allow.allows('x', 'fd00::5', 80)).toBe(true);
    expect(new AddressAllowList().isEmpty).toBe(true);
  });

  it.each(['10.0.0.0/33', 'bad host!', '127.0.0.1:0', '127.0.0.1:99999', 'nothost/8'])('rejects the allow-list entry %s', (entry) => {
    expect(() => new AddressAllowList([entry])).toThrow(entry);
  });

  it('checks URL syntax cheaply', () => {
    expect(fetchableUrlProblem('https://example.com/a.png')).toBeNull();
    expect(fetchableUrlProblem('http://[::1]:8080/x')).toBeNull();
    expect(fetchableUrlProblem('ftp://example.com/a')).toContain('only http and https');
    expect(fetchableUrlProblem('data:image/png;base64,AAAA')).toContain('only http and https');
    expect(fetchableUrlProblem('https://u:p@example.com/')).toContain('user name or password');
    expect(fetchableUrlProblem('nope')).toBe('is not a valid URL');
  });
});

describe('sniffing media types', () => {
  const withHead = (head: number[] | string, size = 32) => {
    const bytes = Buffer.alloc(size);
    (typeof head === 'string' ? Buffer.from(head, 'latin1') : Buffer.from(head)).copy(bytes);
    return bytes;
  };
  it.each<[string, Buffer, string | null]>([
    ['PNG', withHead([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), 'image/png'],
    ['JPEG', withHead([0xff, 0xd8, 0xff, 0xe0]), 'image/jpeg'],
    ['GIF', withHead('GIF89a'), 'image/gif'],
    ['WebP', withHead('RIFF\0\0\0\0WEBPVP8 '), 'image/webp'],
    ['WAV', withHead('RIFF\0\0\0\0WAVEfmt '), 'audio/wav'],
    ['OGG', withHead('OggS'), 'audio/ogg'],
    ['PDF', withHead('%PDF-1.7'), 'application/pdf'],
    ['AVIF', withHead('\0\0\0\x1cftypavif'), 'image/avif'],
    ['MP4', withHead('\0\0\0\x18ftypisom'), 'video/mp4'],
    ['MOV', withHead('\0\0\0\x14ftypqt  '), 'video/quicktime'],
    ['MP3 with ID3', withHead('ID3\x04'), 'audio/mpeg'],
    ['an MP3 frame', withHead([0xff, 0xfb, 0x90]), 'audio/mpeg'],
    ['text', withHead('hello world'), null],
    ['nothing', Buffer.alloc(0), null],
  ])('%s', (_name, bytes, expected) => {
    expect(sniffMimeType(bytes)).toBe(expected);
  });
});
