import { convert } from 'html-to-text';

/** The plain-text part of an HTML body, as the composer derives it when a message gives none (messages/compose.ts). */
export const plainTextOf = (html: string): string =>
  convert(html, { wordwrap: 78, selectors: [{ selector: 'img', format: 'skip' }] });
