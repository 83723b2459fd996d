import { z } from 'zod';
import type { AbTestInput } from '../../../../services/marketing/ab-test.js';
import type { CampaignView } from '../../../../services/marketing/campaigns.js';
import type { WinnerMetric } from '../../../../store/campaigns.js';
import { defineRoute } from '../../route.js';

/**
 * A/B tests and holdouts, ours on both campaign shapes: the request fields a broadcast (or a
 * SPEC campaign) takes beside its content, how they are rendered, and the route that chooses
 * the winner by hand. The service checks the values (services/marketing/ab-test.ts).
 */

const variantBody = z.strictObject({
  name: z.string().optional(),
  subject: z.string().optional(),
  preview_text: z.string().optional(),
  from_name: z.string().optional(),
  html: z.string().optional(),
  text: z.string().optional(),
  template_id: z.string().optional(),
});

export const abTestFields = {
  /** 2 to 5; null on a draft removes the test. */
  variants: z.array(variantBody).nullable().optional(),
  test_percentage: z.number().optional(),
  winner_metric: z.string().optional(),
  test_duration: z.string().optional(),
  holdout_percentage: z.number().optional(),
};

type AbBody = { [K in keyof typeof abTestFields]?: z.infer<(typeof abTestFields)[K]> };

/** The request's test fields as service input (only those given). */
export const toAbInput = (body: AbBody): AbTestInput => {
  const input: AbTestInput = {
    variants:
      body.variants === null
        ? null
        : body.variants?.map((v) => ({
            name: v.name,
            subject: v.subject,
            previewText: v.preview_text,
            fromName: v.from_name,
            html: v.html,
            text: v.text,
            templateId: v.template_id,
          })),
    testPercentage: body.test_percentage,
    winnerMetric: body.winner_metric as WinnerMetric | undefined,
    testDuration: body.test_duration,
    holdoutPercentage: body.holdout_percentage,
  };
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
};

/** The test as a broadcast shows it (a campaign shows the same fields as they are). */
export const renderAbTest = (c: CampaignView) => ({
  holdout_percentage: c.holdout_percentage,
  test_percentage: c.test_percentage,
  winner_metric: c.winner_metric,
  test_duration: c.test_duration,
  winner_due_at: c.winner_due_at,
  winner: c.winner,
  ...(c.variants ? { variants: c.variants } : {}),
});

const winnerBody = z.object({ variant: z.string() });

/** `POST …/{id}/winner`: the variant chosen by hand goes to the rest at once, in the shape of the resource. */
export const abTestRoutes = (
  resource: 'broadcasts' | 'campaigns',
  render: (c: CampaignView, now: number) => unknown,
) => [
  defineRoute({
    method: 'POST',
    path: `/v1/${resource}/:id/winner`,
    summary: `Choose an A/B test's winner by hand, before its test_duration is over: the variant goes to the rest of the recipients now`,
    operation: 'api',
    scope: 'campaigns:write',
    body: winnerBody,
    handler: async ({ deps, workspace, params, body }) => {
      await deps.services.campaigns.chooseWinner(workspace.id, params.id!, body.variant.trim().toUpperCase());
      return render(await deps.services.campaigns.get(workspace.id, params.id!), deps.clock.now());
    },
  }),
];
