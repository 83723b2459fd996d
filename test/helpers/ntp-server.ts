import { createSocket } from 'node:dgram';

/** An NTP server on 127.0.0.1 (UDP, SNTP server mode) whose clock is `offsetMs` away from ours. */
export interface TestNtp {
  /** "127.0.0.1:PORT", ready for deliverability.ntpServers. */
  server: string;
  offsetMs: number;
  close(): Promise<void>;
}

const NTP_EPOCH_OFFSET = 2_208_988_800;

function writeTimestamp(packet: Buffer, offset: number, ms: number): void {
  const seconds = Math.floor(ms / 1000);
  packet.writeUInt32BE(seconds + NTP_EPOCH_OFFSET, offset);
  packet.writeUInt32BE(Math.floor(((ms % 1000) / 1000) * 2 ** 32), offset + 4);
}

export async function startNtpServer(offsetMs = 0): Promise<TestNtp> {
  const socket = createSocket('udp4');
  const state: TestNtp = {
    server: '',
    offsetMs,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
  socket.on('message', (request, rinfo) => {
    if (request.length < 48) return;
    const received = Date.now() + state.offsetMs;
    const reply = Buffer.alloc(48);
    reply[0] = 0x24; // LI 0, version 4, mode 4 (server)
    reply[1] = 2; // stratum 2: synchronised
    request.copy(reply, 24, 40, 48); // originate timestamp: the client's transmit time
    writeTimestamp(reply, 16, received);
    writeTimestamp(reply, 32, received);
    writeTimestamp(reply, 40, Date.now() + state.offsetMs);
    socket.send(reply, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  state.server = `127.0.0.1:${socket.address().port}`;
  return state;
}
