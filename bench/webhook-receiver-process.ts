// A webhook receiver in its own process (as smtp-sink is for the SMTP benches): answers 200
// at once, notes when each event id arrived, and sends the arrivals to its parent on request.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const arrivals: Array<[string, number]> = [];
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    arrivals.push([(JSON.parse(body) as { id: string }).id, Date.now()]);
    res.end('ok');
  });
});
server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
process.on('message', (msg: { get?: number }) => {
  if (msg.get !== undefined)
    process.send!({ count: arrivals.length, arrivals: arrivals.length >= msg.get ? arrivals : undefined });
});
process.on('disconnect', () => process.exit(0));
