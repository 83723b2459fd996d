/**
 * What the studio asks a model for, and reading its answer: one JSON object with a name, a
 * subject, the body in MJML and the variables it uses. Anything else is refused whole, so a
 * model that rambles saves nothing.
 */

export const generationPrompt = (): string =>
  [
    'You write email templates in MJML 4/5 (https://mjml.io): <mjml><mj-body> with mj-section, mj-column, mj-text, mj-button, mj-image (always with alt), no custom CSS that email clients lack (no flex, grid or position).',
    'Variables are written {{name}} (letters, digits, underscores). A marketing email links {{{unsubscribe_url}}}.',
    'Answer with one JSON object and nothing else: {"name": string, "subject": string, "mjml": string, "variables": [{"key": string, "type": "string" | "number", "fallback_value": string | number | null, "sample_value": string | number}]}.',
  ].join('\n');

interface GeneratedTemplate {
  name: string;
  subject: string;
  mjml: string;
  variables: Array<{
    key: string;
    type: 'string' | 'number';
    fallback_value: string | number | null;
    sample_value?: string | number | null;
  }>;
}

export function parseGeneratedTemplate(content: unknown): GeneratedTemplate | { error: string } {
  if (typeof content !== 'string') return { error: 'the model gave no answer' };
  let answer: Partial<GeneratedTemplate>;
  try {
    // Some models wrap JSON in a code fence even in JSON mode.
    answer = JSON.parse(content.trim().replace(/^```(?:json)?\s*|\s*```$/g, '')) as Partial<GeneratedTemplate>;
  } catch {
    return { error: 'the model did not answer with JSON' };
  }
  if (typeof answer?.mjml !== 'string' || typeof answer.subject !== 'string')
    return { error: "the model's answer lacks mjml or subject" };
  const variables = Array.isArray(answer.variables)
    ? answer.variables.filter((v) => v && typeof v.key === 'string' && (v.type === 'string' || v.type === 'number'))
    : [];
  return {
    name: typeof answer.name === 'string' && answer.name.trim() ? answer.name.slice(0, 200) : 'Generated template',
    subject: answer.subject,
    mjml: answer.mjml,
    variables,
  };
}
