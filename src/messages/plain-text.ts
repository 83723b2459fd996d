import { lazyImport } from '../shared/lazy-import.js';

const htmlToText = lazyImport(() => import('html-to-text'));

/** The plain-text part of an HTML body, as the composer derives it when a message gives none (messages/compose.ts). */
export const plainTextOf = async (html: string): Promise<string> =>
  (await htmlToText()).convert(html, { wordwrap: 78, selectors: [{ selector: 'img', format: 'skip' }] });
