import { createSocket, type Socket } from 'node:dgram';
import dnsPacket from 'dns-packet';

export type RecordType = 'A' | 'AAAA' | 'MX' | 'TXT' | 'CNAME' | 'PTR';
export type RecordData = string | { preference: number; exchange: string };

/**
 * A real authoritative DNS server on 127.0.0.1 (UDP) for tests: mailsvc is pointed at it
 * through `delivery.dnsServers`. It answers from an in-memory zone, follows CNAMEs within
 * the zone like a recursive resolver would, and answers NXDOMAIN for unknown names.
 */
export interface TestDns {
  /** "127.0.0.1:PORT", ready for delivery.dnsServers. */
  server: string;
  port: number;
  set(name: string, type: RecordType, values: RecordData[]): void;
  remove(name: string, type?: RecordType): void;
  /** Names asked so far, in order, e.g. "MX example.com". */
  queries: string[];
  /**
   * Makes questions about `name` fail as a broken resolver would: `servfail` answers SERVFAIL,
   * `silent` never answers (the client times out); null answers from the zone again.
   */
  fail(name: string, how: 'servfail' | 'silent' | null): void;
  close(): Promise<void>;
}

const key = (name: string) => name.toLowerCase().replace(/\.$/, '');
/** A TXT record is a list of strings of at most 255 bytes each; long DKIM keys are split. */
const chunk = (text: string): string[] => text.match(/.{1,255}/g) ?? [''];

export async function startDnsServer(): Promise<TestDns> {
  const zone = new Map<string, Map<RecordType, RecordData[]>>();
  const queries: string[] = [];
  const failing = new Map<string, 'servfail' | 'silent'>();
  const socket: Socket = createSocket('udp4');

  const answersFor = (name: string, type: RecordType, depth = 0): dnsPacket.Answer[] => {
    const records = zone.get(key(name));
    if (!records || depth > 8) return [];
    const direct = records.get(type);
    if (direct)
      return direct.map(
        (data) =>
          ({
            type,
            name,
            ttl: 60,
            class: 'IN',
            data: type === 'TXT' ? chunk(data as string) : data,
          }) as dnsPacket.Answer,
      );
    const cname = records.get('CNAME');
    if (cname && type !== 'CNAME') {
      const target = cname[0] as string;
      return [{ type: 'CNAME', name, ttl: 60, class: 'IN', data: target }, ...answersFor(target, type, depth + 1)];
    }
    return [];
  };

  socket.on('message', (message, rinfo) => {
    let query: dnsPacket.Packet;
    try {
      query = dnsPacket.decode(message);
    } catch {
      return;
    }
    const question = query.questions?.[0];
    if (!question) return;
    queries.push(`${question.type} ${key(question.name)}`);
    const failure = failing.get(key(question.name));
    if (failure === 'silent') return;
    if (failure === 'servfail') {
      socket.send(
        dnsPacket.encode({
          id: query.id,
          type: 'response',
          flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | 2 /* SERVFAIL */,
          questions: query.questions,
        }),
        rinfo.port,
        rinfo.address,
      );
      return;
    }
    const answers = answersFor(question.name, question.type as RecordType);
    const known = zone.has(key(question.name));
    let response: Buffer;
    try {
      response = dnsPacket.encode({
        id: query.id,
        type: 'response',
        flags:
          dnsPacket.AUTHORITATIVE_ANSWER |
          dnsPacket.RECURSION_DESIRED |
          dnsPacket.RECURSION_AVAILABLE |
          (known ? 0 : 3) /* NXDOMAIN */,
        questions: query.questions,
        answers,
      });
    } catch {
      response = dnsPacket.encode({
        id: query.id,
        type: 'response',
        flags: 2 /* SERVFAIL */,
        questions: query.questions,
      });
    }
    socket.send(response, rinfo.port, rinfo.address);
  });

  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const port = socket.address().port;
  return {
    server: `127.0.0.1:${port}`,
    port,
    queries,
    set(name, type, values) {
      const records = zone.get(key(name)) ?? new Map<RecordType, RecordData[]>();
      records.set(type, values);
      zone.set(key(name), records);
    },
    fail(name, how) {
      if (how) failing.set(key(name), how);
      else failing.delete(key(name));
    },
    remove(name, type) {
      if (type) zone.get(key(name))?.delete(type);
      else zone.delete(key(name));
    },
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
