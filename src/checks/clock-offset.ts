import { createSocket } from 'node:dgram';

/**
 * How far this machine's clock is from an NTP server's, by one SNTP exchange (RFC 4330 §5):
 * a 48-byte client request, the server's receive and transmit times, and the round trip.
 * Receivers distrust mail dated in the future and DKIM signatures whose time is off.
 */

/** Seconds between 1900 (NTP's epoch) and 1970. */
const NTP_EPOCH_OFFSET = 2_208_988_800;

const readTimestamp = (packet: Buffer, offset: number): number =>
  (packet.readUInt32BE(offset) - NTP_EPOCH_OFFSET) * 1000 + (packet.readUInt32BE(offset + 4) / 2 ** 32) * 1000;

interface ClockSample {
  /** Milliseconds the local clock is ahead of the server's (negative: behind). */
  offsetMs: number;
  roundTripMs: number;
}

export function measureClockOffset(
  address: string,
  port: number,
  timeoutMs = 3000,
  now: () => number = Date.now,
): Promise<ClockSample> {
  return new Promise((resolve, reject) => {
    const socket = createSocket(address.includes(':') ? 'udp6' : 'udp4');
    const request = Buffer.alloc(48);
    request[0] = 0x23; // LI 0, version 4, mode 3 (client)
    let sentAt = 0;
    const timer = setTimeout(
      () => finish(new Error(`no answer from ${address}:${port} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    function finish(err: Error | null, sample?: ClockSample) {
      clearTimeout(timer);
      socket.close();
      if (err) reject(err);
      else resolve(sample!);
    }
    socket.on('error', (err) => finish(err));
    socket.on('message', (packet) => {
      const receivedAt = now();
      if (packet.length < 48 || (packet[0]! & 0x07) !== 4) return finish(new Error('not an NTP server answer'));
      if (packet[1] === 0) return finish(new Error("the server is not synchronised (kiss-o'-death)"));
      const serverReceived = readTimestamp(packet, 32);
      const serverSent = readTimestamp(packet, 40);
      finish(null, {
        offsetMs: (sentAt - serverReceived + (receivedAt - serverSent)) / 2,
        roundTripMs: receivedAt - sentAt - (serverSent - serverReceived),
      });
    });
    sentAt = now();
    socket.send(request, port, address);
  });
}
