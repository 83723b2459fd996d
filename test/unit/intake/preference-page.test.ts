import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  chooseLanguage,
  loadPreferenceMessages,
  MESSAGE_KEYS,
} from '../../../src/intake/http/routes/public/preference-messages.js';
import { preferencePage } from '../../../src/intake/http/routes/public/preference-page.js';
import type { PreferenceState } from '../../../src/services/marketing/preferences.js';

const messages = loadPreferenceMessages();

describe('preference centre words', () => {
  it('ships English, German, French and Spanish, each with every message and the same placeholders', () => {
    assert.deepEqual([...messages.keys()].sort(), ['de', 'en', 'es', 'fr']);
    const raw = (lang: string) => messages.get(lang)!;
    const placeholders = (text: string) =>
      [...text.matchAll(/\{(\w+)\}/g)]
        .map((m) => m[1])
        .sort()
        .join(',');
    for (const lang of messages.keys()) {
      for (const key of MESSAGE_KEYS) {
        assert.equal(typeof raw(lang)[key], 'string', `${lang}.${key}`);
        assert.equal(
          placeholders(raw(lang)[key]),
          placeholders(raw('en')[key]),
          `${lang}.${key} has the placeholders of English`,
        );
        if (lang !== 'en' && key !== 'language')
          assert.notEqual(raw(lang)[key], raw('en')[key], `${lang}.${key} is translated`);
      }
    }
  });

  it('chooses a language: ?lang=, the contact, Accept-Language by q, English', () => {
    const available = new Set(messages.keys());
    const table: Array<[Parameters<typeof chooseLanguage>[1], string]> = [
      [{}, 'en'],
      [{ acceptLanguage: '*' }, 'en'],
      [{ acceptLanguage: 'de-CH, fr;q=0.9' }, 'de'],
      [{ acceptLanguage: 'pt-BR, fr;q=0.5, es;q=0.6' }, 'es'],
      [{ acceptLanguage: 'es;q=0, fr' }, 'fr'],
      [{ acceptLanguage: 'fr;q=0.5, de;q=0.5' }, 'fr'],
      [{ acceptLanguage: ';;, ,q=, de;q=abc' }, 'de'],
      [{ contact: 'es_MX', acceptLanguage: 'fr' }, 'es'],
      [{ contact: 'it', acceptLanguage: 'fr' }, 'fr'],
      [{ query: 'DE', contact: 'es' }, 'de'],
      [{ query: 'zz', contact: 'es' }, 'es'],
    ];
    for (const [wanted, expected] of table)
      assert.equal(chooseLanguage(available, wanted), expected, JSON.stringify(wanted));
  });

  it('escapes everything it shows and links forms beside the page', () => {
    const state: PreferenceState = {
      workspace: { name: '<b>Shop</b> & "Co"', logoUrl: 'https://cdn.example/logo.png?a=1&b="2"' },
      address: 'x"<y>@example.org',
      contact: {
        status: 'subscribed',
        language: null,
        topics: [{ id: 't1', name: '<i>News</i>', description: '"quoted" & more', subscription: 'opt_in' }],
      },
      formToken: 'abc"def',
    };
    const html = preferencePage('en', messages.get('en')!, state, 'tok.en', null);
    for (const raw of ['<b>Shop</b>', '<i>News</i>', 'x"<y>', 'abc"def', '"quoted"', 'b="2"'])
      assert.ok(!html.includes(raw), raw);
    assert.ok(html.includes('&lt;b&gt;Shop&lt;/b&gt; &amp; &quot;Co&quot;'));
    assert.ok(html.includes('<form method="post" action="tok.en/preferences">'));
    assert.ok(
      html.includes(
        '<form method="post" action="tok.en"><input type="hidden" name="List-Unsubscribe" value="One-Click">',
      ),
    );
    assert.ok(!/<script/i.test(html));
  });
});
