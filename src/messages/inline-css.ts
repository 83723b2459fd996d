import { lazyImport } from '../shared/lazy-import.js';

const juice = lazyImport(async () => (await import('juice')).default);

/**
 * Moves the CSS of `<style>` elements into `style` attributes, for clients that drop or
 * ignore `<style>` (Gmail without a Google account, old Outlook): juice, the inliner MJML
 * uses. Media queries and rules that cannot be inlined stay in `<style>`.
 */
export const inlineCss = async (html: string): Promise<string> =>
  (await juice())(html, { preserveMediaQueries: true, removeStyleTags: true, applyStyleTags: true });
