/**
 * A loopback SMTP sink for benches when Postfix's smtp-sink is not installed: accepts and
 * drains every message and prints running counters in smtp-sink's `-c` format (`sess=N quit=N
 * mesg=N`, carriage-return separated). Like smtp-sink it offers no STARTTLS: smtp-server's
 * built-in certificate has expired, which a relay that verifies (delivery.relay) refuses.
 * Usage: node --import tsx bench/sink.ts PORT
 */
import { SMTPServer } from 'smtp-server';

const port = Number(process.argv[2] ?? 0);
let sessions = 0;
let messages = 0;
const report = () => process.stdout.write(`sess=${sessions} quit=0 mesg=${messages}\r`);
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['AUTH'],
  hideSTARTTLS: true,
  logger: false,
  onConnect(_session, cb) {
    sessions++;
    cb();
  },
  onData(stream, _session, cb) {
    stream.on('data', () => {});
    stream.on('end', () => {
      messages++;
      report();
      cb(null);
    });
  },
});
server.on('error', () => {});
server.listen(port, '127.0.0.1', report);
process.on('SIGTERM', () => server.close(() => process.exit(0)));
