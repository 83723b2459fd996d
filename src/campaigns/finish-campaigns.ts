import { recordEvent } from '../events/record-event.js';
import { campaignReport } from '../services/marketing/campaign-report.js';
import { toIso, type Clock } from '../shared/clock.js';
import { countUnfinished, listSendingCampaigns, markCampaignSent } from '../store/campaigns.js';
import type { Db, Dialect } from '../store/infra/db.js';

/**
 * A periodic task: campaigns whose every message has an outcome are marked sent, with their
 * `campaign.sent` event and final counts. Run on one node at a time; marking is a
 * compare-and-set, so a campaign is finished once whoever runs it.
 */
export async function finishCampaigns({
  db,
  dialect,
  clock,
}: {
  db: Db;
  dialect: Dialect;
  clock: Clock;
}): Promise<number> {
  let finished = 0;
  for (const campaign of await listSendingCampaigns(db, 50)) {
    if ((await countUnfinished(db, campaign.id)) > 0) continue;
    const now = clock.now();
    const done = await db.transaction().execute(async (trx) => {
      if (!(await markCampaignSent(trx, campaign.id, now))) return false;
      const { counts } = await campaignReport(trx, dialect, campaign);
      await recordEvent(trx, {
        workspaceId: campaign.workspace_id,
        type: 'campaign.sent',
        data: {
          campaign_id: campaign.id,
          name: campaign.name,
          recipients: campaign.queued,
          counts,
          timestamp: toIso(now),
        },
        at: now,
      });
      return true;
    });
    if (done) finished++;
  }
  return finished;
}
