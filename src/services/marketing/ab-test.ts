import { validationError } from '../../shared/errors.js';
import { MAX_DURATION_MS, parseDuration } from '../../shared/duration.js';
import { hasLineBreak, singleLine } from '../../messages/addresses.js';
import type { CampaignVariant } from '../../store/ab-tests.js';
import type { Campaign, WinnerMetric } from '../../store/campaigns.js';
import { contentOf, type Content } from '../../messages/campaign-content.js';
import { WINNER_METRICS } from '../../store/campaigns.js';
import { isOneOf } from '../../shared/one-of.js';

/**
 * The A/B test of a campaign as it is asked for and checked: 2 to 5 variants (each changing
 * the subject, preview text, from name, HTML or text, or taking a template), the share of the
 * recipients they go to, the metric and the time that decide the winner, and the share held
 * out. Pure but for the template look-up the caller passes.
 */

const VARIANT_KEYS = ['A', 'B', 'C', 'D', 'E'] as const;
const MIN_VARIANTS = 2;
const MAX_VARIANTS = VARIANT_KEYS.length;
/** Shorter than a minute, no reader could have opened anything. */
const MIN_TEST_MS = 60_000;
/** More than half the list held out measures the list, not the campaign. */
const MAX_HOLDOUT_PERCENTAGE = 50;
const MAX_VARIANT_NAME = 100;
const MAX_PREVIEW_TEXT = 500;

interface VariantInput {
  name?: string | undefined;
  subject?: string | undefined;
  previewText?: string | undefined;
  fromName?: string | undefined;
  html?: string | undefined;
  text?: string | undefined;
  templateId?: string | undefined;
}

export interface AbTestInput {
  /** null removes the test (a draft being changed). */
  variants?: VariantInput[] | null | undefined;
  testPercentage?: number | undefined;
  winnerMetric?: WinnerMetric | undefined;
  /** As people write it: `4 hours`, `1 day`. */
  testDuration?: string | undefined;
  holdoutPercentage?: number | undefined;
}

type AbFields = Pick<Campaign, 'holdout_percentage' | 'test_percentage' | 'winner_metric' | 'test_duration_ms'>;
export type VariantRow = Omit<CampaignVariant, 'campaign_id'>;

const isPercentage = (n: number, min: number, max: number): boolean => Number.isInteger(n) && n >= min && n <= max;

/**
 * Checks the test and returns the campaign's fields and the variant rows. `base` is the
 * campaign's content (a variant's duplicate of it is refused); `template` reads a template's
 * content or throws.
 */
export async function checkAbTest(
  input: AbTestInput,
  base: Content,
  template: (field: string, id: string) => Promise<{ html: string; text: string | null }>,
  /** The variants a draft has, kept when `input.variants` is absent. */
  kept: readonly VariantRow[] = [],
): Promise<{ fields: AbFields; variants: VariantRow[] }> {
  const holdout = input.holdoutPercentage ?? 0;
  if (!isPercentage(holdout, 0, MAX_HOLDOUT_PERCENTAGE))
    throw validationError('holdout_percentage', `must be a whole number from 0 to ${MAX_HOLDOUT_PERCENTAGE}`);
  const given = input.variants ?? [];
  if (given.length === 0 && (input.variants !== undefined || kept.length === 0)) {
    for (const [field, value] of [
      ['test_percentage', input.testPercentage],
      ['winner_metric', input.winnerMetric],
      ['test_duration', input.testDuration],
    ] as const) {
      if (value !== undefined) throw validationError(field, 'applies only to an A/B test: give 2 to 5 variants');
    }
    return {
      fields: { holdout_percentage: holdout, test_percentage: null, winner_metric: null, test_duration_ms: null },
      variants: [],
    };
  }
  const count = input.variants === undefined ? kept.length : given.length;
  if (count < MIN_VARIANTS || count > MAX_VARIANTS)
    throw validationError('variants', `an A/B test has ${MIN_VARIANTS} to ${MAX_VARIANTS} variants, got ${count}`);
  const test = input.testPercentage;
  if (test === undefined)
    throw validationError(
      'test_percentage',
      'is required with variants: the share of the recipients the variants go to (1 to 100)',
    );
  if (!isPercentage(test, 1, 100)) throw validationError('test_percentage', 'must be a whole number from 1 to 100');
  if (test + holdout > 100)
    throw validationError('test_percentage', `and holdout_percentage add up to ${test + holdout}: at most 100`);
  const metric = input.winnerMetric ?? 'human_click_rate';
  if (!isOneOf(WINNER_METRICS, metric))
    throw validationError('winner_metric', `must be one of ${WINNER_METRICS.join(', ')}`);
  if (input.testDuration === undefined)
    throw validationError(
      'test_duration',
      'is required with variants: how long the test runs before the winner is chosen, e.g. "4 hours"',
    );
  const duration = parseDuration('test_duration', input.testDuration, MAX_DURATION_MS);
  if (duration < MIN_TEST_MS) throw validationError('test_duration', 'must be at least 1 minute');

  const fields: AbFields = {
    holdout_percentage: holdout,
    test_percentage: test,
    winner_metric: metric,
    test_duration_ms: duration,
  };
  if (input.variants === undefined) return { fields, variants: [...kept] };
  const variants: VariantRow[] = [];
  const seen = new Map<string, string>();
  for (const [i, v] of given.entries()) {
    const at = (field: string) => `variants[${i}].${field}`;
    if (v.name !== undefined && (v.name.length > MAX_VARIANT_NAME || hasLineBreak(v.name)))
      throw validationError(at('name'), `must be one line of at most ${MAX_VARIANT_NAME} characters`);
    if (v.subject !== undefined) {
      singleLine(at('subject'), v.subject);
      if (v.subject.trim() === '' || v.subject.length > 998)
        throw validationError(at('subject'), 'must be 1 to 998 characters');
    }
    if (v.fromName !== undefined) {
      singleLine(at('from_name'), v.fromName);
      if (v.fromName.length > 200) throw validationError(at('from_name'), 'must be at most 200 characters');
    }
    if (v.previewText !== undefined && (v.previewText.length > MAX_PREVIEW_TEXT || hasLineBreak(v.previewText)))
      throw validationError(at('preview_text'), `must be one line of at most ${MAX_PREVIEW_TEXT} characters`);
    if (v.html !== undefined && v.templateId !== undefined)
      throw validationError(at('template_id'), 'cannot be combined with html: give one');
    if (v.html !== undefined && v.html.trim() === '') throw validationError(at('html'), 'must not be empty');
    if (v.text !== undefined && v.text.trim() === '') throw validationError(at('text'), 'must not be empty');
    const copied = v.templateId === undefined ? undefined : await template(at('template_id'), v.templateId);
    const row: VariantRow = {
      variant: VARIANT_KEYS[i]!,
      position: i,
      name: v.name?.trim() || null,
      subject: v.subject ?? null,
      preview_text: v.previewText ?? null,
      from_name: v.fromName ?? null,
      html: copied?.html ?? v.html ?? null,
      text: v.text ?? copied?.text ?? null,
      template_id: v.templateId ?? null,
    };
    // Two variants that send the same message test nothing.
    const key = JSON.stringify(
      contentOf(
        {
          subject: base.subject,
          from_name: base.fromName,
          preview_text: base.previewText,
          html: base.html,
          text: base.text,
        },
        row,
      ),
    );
    const same = seen.get(key);
    if (same)
      throw validationError(
        `variants[${i}]`,
        `sends the same message as variant ${same}: change its subject, preview text, from name or content`,
      );
    seen.set(key, row.variant);
    variants.push(row);
  }
  return { fields, variants };
}

/** A campaign's test settings as the input that would make them (a draft being changed keeps what is not given). */
export const abSettingsOf = (c: Campaign): AbTestInput => ({
  holdoutPercentage: c.holdout_percentage,
  testPercentage: c.test_percentage ?? undefined,
  winnerMetric: c.winner_metric ?? undefined,
  testDuration: c.test_duration_ms === null ? undefined : `${Math.round(c.test_duration_ms / 1000)} seconds`,
});
