// A bare smtp-server that drains each message and answers 250: the ceiling our submission
// listener is compared with. Prints its port on stdout.
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  disableReverseLookup: true,
  logger: false,
  onData(stream, _session, callback) {
    stream.on('data', () => undefined);
    stream.on('end', () => callback());
  },
});
server.listen(0, '127.0.0.1', () => console.log((server.server.address() as AddressInfo).port));
