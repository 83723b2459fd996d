/**
 * The API property (test/helpers/api-fuzz.ts) for longer than `npm test` runs it:
 *
 *   npm run fuzz -- [--runs N] [--seeds K] [--seed S]
 *
 * Starts a real server on loopback (temporary SQLite database, loopback DNS server, nothing
 * delivered), then runs N generated requests for each of K seeds (from S, or random) and
 * prints the statuses seen. A failure prints fast-check's report: the seed and the shrunk
 * request, to replay with `MAILSVC_FUZZ_SEED=S MAILSVC_FUZZ_RUNS=N npm test`-style runs.
 */
import { parseArgs } from 'node:util';
import { fuzzApi, fuzzFixtures } from '../test/helpers/api-fuzz.js';
import { startDnsServer } from '../test/helpers/dns-server.js';
import { addVerifiedDomain } from '../test/helpers/domains.js';
import { manualClock, startTestServer } from '../test/helpers/server.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5000' },
    seeds: { type: 'string', default: '3' },
    seed: { type: 'string' },
  },
});
const runs = Number(values.runs);
const first = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);

const dns = await startDnsServer();
const clock = manualClock();
const server = await startTestServer(
  {
    delivery: { dnsServers: [dns.server], enabled: false },
    webhooks: { enabled: false },
    http: { bodyLimit: 1024 * 1024 },
  },
  { clock },
);
let failed = false;
try {
  await addVerifiedDomain(server, dns, 'sender.test');
  const fixtures = await fuzzFixtures(server);
  for (let i = 0; i < Number(values.seeds); i++) {
    const seed = first + i;
    const started = Date.now();
    try {
      const statuses = await fuzzApi(server, fixtures, {
        seed,
        numRuns: runs,
        beforeEach: () => clock.advance(61_000),
      });
      const seen = [...statuses]
        .sort(([a], [b]) => a - b)
        .map(([s, n]) => `${s}×${n}`)
        .join(' ');
      console.log(
        `seed ${seed}: ${runs} requests in ${((Date.now() - started) / 1000).toFixed(1)} s, all held; statuses ${seen}`,
      );
    } catch (err) {
      failed = true;
      console.error(`seed ${seed}: FAILED\n${(err as Error).message}`);
    }
  }
} finally {
  await server.close();
  await dns.close();
}
process.exit(failed ? 1 : 0);
