/**
 * `npm run bench [name ...]`: runs the named benchmarks (all by default) against the built
 * program and prints their figures. Loopback only. BENCH_SECONDS and BENCH_RUNS shorten or
 * lengthen the measured runs.
 */
import { apiLatency } from './api-latency.js';
import { backlog } from './backlog.js';
import { deliveryEndToEnd } from './delivery.js';
import { campaignDelivery } from './campaign-delivery.js';
import { campaignQueue } from './campaign-queue.js';
import { contactImport } from './contact-import.js';
import { clusterDelivery } from './cluster-delivery.js';
import { memoryProfile } from './memory.js';
import { sideBySide } from './side-by-side.js';
import { sendAcceptance } from './send-acceptance.js';
import { smtpSubmission } from './smtp-submission.js';
import { webhookFanout } from './webhooks.js';
import { workflowRuns } from './workflows.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const runs = Number(process.env.BENCH_RUNS ?? 3);
const messages = Number(process.env.BENCH_MESSAGES ?? 5000);

const benches: Record<string, () => Promise<void>> = {
  'send-acceptance': () => sendAcceptance({ seconds, runs }),
  delivery: () => deliveryEndToEnd({ runs, messages }),
  webhooks: () => webhookFanout(),
  'smtp-submission': () => smtpSubmission({ messages: Number(process.env.BENCH_MESSAGES ?? 20_000), runs }),
  'campaign-queue': () => campaignQueue({ subscribers: Number(process.env.BENCH_SUBSCRIBERS ?? 100_000) }),
  'cluster-delivery': () => clusterDelivery({ messages, runs }),
  'contact-import': () => contactImport({ rows: Number(process.env.BENCH_IMPORT_ROWS ?? 50_000), runs }),
  'campaign-delivery': () => campaignDelivery({ subscribers: Number(process.env.BENCH_CAMPAIGN ?? 10_000) }),
  backlog: () => backlog({ messages: Number(process.env.BENCH_BACKLOG ?? 5000), runs }),
  'api-latency': () =>
    apiLatency({
      seconds: Number(process.env.BENCH_SECONDS ?? 30),
      runs,
      rates: (process.env.BENCH_RATES ?? '300,500').split(',').map(Number),
    }),
  'side-by-side': () =>
    sideBySide({
      messages: Number(process.env.BENCH_MESSAGES ?? 10_000),
      each: Number(process.env.BENCH_EACH ?? 2000),
      runs,
    }),
  memory: () =>
    memoryProfile({
      messages: Number(process.env.BENCH_MESSAGES ?? 6000),
      campaign: Number(process.env.BENCH_CAMPAIGN ?? 100_000),
    }),
  workflows: () =>
    workflowRuns({
      events: Number(process.env.BENCH_EVENTS ?? 2000),
      waiting: Number(process.env.BENCH_WAITING ?? 10_000),
      runs,
    }),
};

const wanted = process.argv.slice(2);
for (const name of wanted.length ? wanted : Object.keys(benches)) {
  const bench = benches[name];
  if (!bench) {
    console.error(`unknown bench ${name}; known: ${Object.keys(benches).join(', ')}`);
    process.exit(2);
  }
  console.log(`\n== ${name}`);
  await bench();
}
