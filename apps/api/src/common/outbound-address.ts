import { BlockList, isIP } from 'node:net';

/**
 * Which addresses an outbound connection Prospect makes on someone's say-so may reach (an
 * identity provider's issuer, federation/provider-network.ts; a webhook or back-channel logout
 * URL, webhooks/outbound-url.ts): one list of loopback and private ranges for both.
 */

/** How an address is treated. */
export type AddressKind = 'loopback' | 'private' | 'public';

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

const PRIVATE = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network": 0.0.0.0 connects to the host itself
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT (RFC 6598)
  ['169.254.0.0', 16], // link-local, the cloud metadata services among them
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv4');
}
PRIVATE.addAddress('::', 'ipv6');
PRIVATE.addSubnet('fc00::', 7, 'ipv6'); // unique local
PRIVATE.addSubnet('fe80::', 10, 'ipv6'); // link-local

const THIS_HOST = new BlockList();
THIS_HOST.addSubnet('0.0.0.0', 8, 'ipv4');
THIS_HOST.addAddress('::', 'ipv6');

/** Whether a connection to `address` (a private one by addressKind) reaches the host itself, as loopback does: 0.0.0.0/8, `::`. */
export function reachesThisHost(address: string): boolean {
  return THIS_HOST.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
}

/** Whether `address` (an IP literal, without brackets) is loopback, private or link-local, or public. */
export function addressKind(address: string): AddressKind {
  const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
  // BlockList checks an IPv4-mapped IPv6 address (::ffff:10.0.0.1) against the IPv4 rules too.
  if (LOOPBACK.check(address, family)) return 'loopback';
  if (PRIVATE.check(address, family)) return 'private';
  return 'public';
}

