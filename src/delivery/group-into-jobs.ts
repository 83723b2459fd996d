import type { Email, QueueItem } from '../store/emails.js';
import type { Job } from './transmit-job.js';

/** RFC 5321 §4.5.3.1.8: servers must take at least 100 recipients per transaction. */
const MAX_RECIPIENTS_PER_TRANSACTION = 100;

/** Claimed rows as jobs (one message, its recipients at one domain, at most 100 a transaction); rows whose email is gone are orphans. */
export function groupIntoJobs(items: QueueItem[], emails: Map<string, Email>): { jobs: Job[]; orphans: QueueItem[] } {
  const groups = new Map<string, Job>();
  const jobs: Job[] = [];
  const orphans: QueueItem[] = [];
  for (const item of items) {
    const email = emails.get(item.email_id);
    if (!email) {
      orphans.push(item);
      continue;
    }
    const key = `${item.email_id} ${item.recipient_domain}`;
    let job = groups.get(key);
    if (!job || job.items.length >= MAX_RECIPIENTS_PER_TRANSACTION) {
      job = { email, domain: item.recipient_domain, items: [] };
      groups.set(key, job);
      jobs.push(job);
    }
    job.items.push(item);
  }
  return { jobs, orphans };
}
