import { escapeHtml } from '../../../../messages/render-template.js';
import type { PreferenceState } from '../../../../services/marketing/preferences.js';
import { fill, type MessageKey, type Messages } from './preference-messages.js';

/**
 * The preference centre as HTML: plain forms, no script, inline styles, readable in any mail
 * app's browser at phone width. Forms post to paths relative to the page (`<token>` and
 * `<token>/preferences` beside `/u/<token>`), so the page works under any public URL prefix.
 */

export type Notice = 'saved' | 'resubscribed' | 'unsubscribed' | 'stale_form' | null;

const STYLE =
  'body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:34rem;margin:2rem auto;padding:0 1rem;color:#1d2939;line-height:1.5}' +
  'header{display:flex;align-items:center;gap:.75rem;margin-bottom:1.5rem}header img{max-height:48px;max-width:160px}header b{font-size:1.1rem}' +
  'h1{font-size:1.5rem;margin:.5rem 0}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}fieldset{border:1px solid #d0d5dd;border-radius:8px;padding:.75rem 1rem;margin:0}' +
  'label{display:flex;gap:.6rem;align-items:flex-start;padding:.4rem 0}label input{margin-top:.3rem;width:1.1rem;height:1.1rem}label small{display:block;color:#667085}' +
  'button{font-size:1rem;padding:.6rem 1.2rem;border-radius:6px;border:1px solid #1d2939;background:#1d2939;color:#fff;cursor:pointer;margin-top:.75rem}' +
  'button.quiet{background:#fff;color:#b42318;border-color:#b42318}.notice{background:#ecfdf3;border:1px solid #abefc6;border-radius:6px;padding:.6rem .9rem}' +
  '.notice.warn{background:#fffaeb;border-color:#fedf89}.muted{color:#667085;font-size:.9rem}';

export function preferencePage(
  lang: string,
  m: Messages,
  state: PreferenceState,
  token: string,
  notice: Notice,
): string {
  const values = { workspace: escapeHtml(state.workspace.name), address: escapeHtml(state.address) };
  const t = (key: MessageKey) => fill(escapeHtml(m[key]), values);
  // Left: by the contact's own choice earlier, or just now (an address that is no contact has no status).
  const unsubscribed = state.contact?.status === 'unsubscribed' || notice === 'unsubscribed';
  const formToken = `<input type="hidden" name="form" value="${escapeHtml(state.formToken)}">`;
  const link = escapeHtml(token);
  const header = `<header>${state.workspace.logoUrl ? `<img src="${escapeHtml(state.workspace.logoUrl)}" alt="${values.workspace}">` : ''}<b>${values.workspace}</b></header>`;
  const banner =
    notice && notice !== 'unsubscribed'
      ? `<p class="notice${notice === 'stale_form' ? ' warn' : ''}" role="status">${t(notice)}</p>`
      : '';

  let body: string;
  if (unsubscribed) {
    body =
      `<h1>${t('unsubscribed_title')}</h1>${banner}<p>${t('unsubscribed_text')}</p>` +
      (state.contact
        ? `<form method="post" action="${link}/preferences">${formToken}<button type="submit" name="action" value="resubscribe">${t('resubscribe_button')}</button></form>`
        : '');
  } else {
    const topics = state.contact?.topics ?? [];
    const choices =
      state.contact === null
        ? ''
        : topics.length === 0
          ? `<p class="muted">${t('no_topics')}</p>`
          : `<form method="post" action="${link}/preferences">${formToken}<h2>${t('topics')}</h2><p class="muted">${t('topics_hint')}</p><fieldset>` +
            topics
              .map(
                (topic) =>
                  `<label><input type="checkbox" name="topic" value="${escapeHtml(topic.id)}"${topic.subscription === 'opt_in' ? ' checked' : ''}><span>${escapeHtml(topic.name)}${topic.description ? `<small>${escapeHtml(topic.description)}</small>` : ''}</span></label>`,
              )
              .join('') +
            `</fieldset><button type="submit" name="action" value="save">${t('save')}</button></form>`;
    body =
      `<h1>${t('title')}</h1>${banner}<p>${t('intro')}</p>${choices}` +
      `<h2>${t('unsubscribe_heading')}</h2><p>${t('unsubscribe_text')}</p>` +
      // The RFC 8058 one-click POST, the same a mailbox provider's button sends.
      `<form method="post" action="${link}"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit" class="quiet">${t('unsubscribe_button')}</button></form>`;
  }
  return document(lang, t('title'), `${header}${body}<p class="muted">${t('account_note')}</p>`);
}

/** The page for a link that is not ours (cut, changed or made up). */
export const invalidLinkPage = (lang: string, m: Messages): string =>
  document(
    lang,
    escapeHtml(m.invalid_title),
    `<h1>${escapeHtml(m.invalid_title)}</h1><p>${escapeHtml(m.invalid_text)}</p>`,
  );

const document = (lang: string, title: string, body: string): string => `<!doctype html>
<html lang="${escapeHtml(lang)}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${title}</title><style>${STYLE}</style></head><body>${body}</body></html>`;
