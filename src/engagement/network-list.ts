import ipaddr from 'ipaddr.js';

/**
 * A set of networks (CIDR prefixes), each with a label, asked whether an address falls in one.
 * Apple's egress list alone has tens of thousands of prefixes, so lookups are a binary search
 * over ranges sorted by their first address, not a scan.
 */
export class NetworkList {
  private readonly v4: Ranges<number>;
  private readonly v6: Ranges<bigint>;

  constructor(entries: ReadonlyArray<{ cidr: string; label: string }>) {
    const v4: Array<Range<number>> = [];
    const v6: Array<Range<bigint>> = [];
    for (const { cidr, label } of entries) {
      const [address, bits] = ipaddr.parseCIDR(cidr);
      if (address.kind() === 'ipv4') {
        const start = (v4Number(address as ipaddr.IPv4) & maskV4(bits)) >>> 0;
        v4.push({ start, end: (start | ~maskV4(bits)) >>> 0, label });
      } else {
        const size = 1n << BigInt(128 - bits);
        const start = (v6Number(address as ipaddr.IPv6) / size) * size;
        v6.push({ start, end: start + size - 1n, label });
      }
    }
    this.v4 = new Ranges(v4);
    this.v6 = new Ranges(v6);
  }

  get size(): number {
    return this.v4.size + this.v6.size;
  }

  /** The label of a network holding `ip`, or null (also for text that is no address). */
  find(ip: string | null | undefined): string | null {
    if (!ip || !ipaddr.isValid(ip)) return null;
    // An IPv4 client seen on a dual-stack socket arrives as ::ffff:a.b.c.d.
    const address = ipaddr.process(ip);
    return address.kind() === 'ipv4'
      ? this.v4.find(v4Number(address as ipaddr.IPv4))
      : this.v6.find(v6Number(address as ipaddr.IPv6));
  }
}

/** Checks a CIDR prefix as the data files write it; returns an error message or null. */
export function checkCidr(text: string): string | null {
  try {
    ipaddr.parseCIDR(text);
    return null;
  } catch {
    return `"${text}" is not a network in CIDR notation (e.g. 192.0.2.0/24 or 2001:db8::/32)`;
  }
}

interface Range<T> {
  start: T;
  end: T;
  label: string;
}

class Ranges<T extends number | bigint> {
  private readonly ranges: Array<Range<T>>;
  /** The highest end among ranges[0..i]: where a backward walk for nested ranges can stop. */
  private readonly reach: T[];

  constructor(ranges: Array<Range<T>>) {
    this.ranges = ranges.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
    this.reach = [];
    for (const [i, r] of this.ranges.entries())
      this.reach.push(i === 0 || r.end > this.reach[i - 1]! ? r.end : this.reach[i - 1]!);
  }

  get size(): number {
    return this.ranges.length;
  }

  find(value: T): string | null {
    let lo = 0;
    let hi = this.ranges.length - 1;
    let last = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.ranges[mid]!.start <= value) {
        last = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    for (let i = last; i >= 0 && this.reach[i]! >= value; i--) {
      if (this.ranges[i]!.end >= value) return this.ranges[i]!.label;
    }
    return null;
  }
}

const maskV4 = (bits: number): number => (bits === 0 ? 0 : (~0 << (32 - bits)) | 0);
const v4Number = (a: ipaddr.IPv4): number => a.octets.reduce((n, o) => n * 256 + o, 0);
const v6Number = (a: ipaddr.IPv6): bigint => a.parts.reduce((n, p) => (n << 16n) | BigInt(p), 0n);
