import ipaddr from 'ipaddr.js';

/**
 * The labels of an address in reverse order, as PTR names (RFC 1035 §3.5, RFC 3596 §2.5) and
 * DNS blocklists use them: `192.0.2.1` -> `1.2.0.192`, an IPv6 address -> its 32 nibbles
 * reversed. Pure.
 */
export function reversedLabels(ip: string): string {
  const address = ipaddr.process(ip);
  if (address.kind() === 'ipv4') return address.toByteArray().reverse().join('.');
  return address
    .toByteArray()
    .flatMap((byte) => [byte >> 4, byte & 15])
    .reverse()
    .map((nibble) => nibble.toString(16))
    .join('.');
}

/** The PTR name of an address: `1.2.0.192.in-addr.arpa` or `….ip6.arpa`. */
export const ptrName = (ip: string): string =>
  `${reversedLabels(ip)}.${ipaddr.process(ip).kind() === 'ipv4' ? 'in-addr' : 'ip6'}.arpa`;
