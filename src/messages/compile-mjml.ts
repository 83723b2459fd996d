import { validationError } from '../shared/errors.js';

/**
 * Compiles an MJML template to the HTML mail is sent with, under strict validation: a
 * component where it may not be, an unknown attribute, a document that is not MJML are 400s
 * naming their lines, never a 500 or a silently different email. `mj-include` is ignored (a
 * template never reads the server's files). mjml is loaded on first use: most servers never
 * compile one, and it takes a second to load.
 */
let loaded: Promise<typeof import('mjml').default> | undefined;

export async function compileMjml(source: string, field = 'mjml'): Promise<string> {
  loaded ??= import('mjml').then((m) => m.default);
  const mjml2html = await loaded;
  if (!/^\s*(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*<mjml[\s>]/i.test(source))
    throw validationError(field, 'is not MJML: it must start with <mjml>');
  try {
    const { html } = await mjml2html(source, { validationLevel: 'strict', ignoreIncludes: true, keepComments: false });
    return html;
  } catch (err) {
    const errors = (err as { errors?: Array<{ line: number; message: string; tagName: string }> }).errors;
    if (Array.isArray(errors) && errors.length > 0) {
      throw validationError(field, errors.map((e) => `line ${e.line}: <${e.tagName}> ${e.message}`).join('; '));
    }
    throw validationError(field, `does not compile: ${(err as Error).message}`);
  }
}
