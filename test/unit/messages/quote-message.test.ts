import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  forwardBodies,
  prefixedSubject,
  replyBodies,
  type QuotedMessage,
} from '../../../src/messages/quote-message.js';

const original: QuotedMessage = {
  from: 'Ann <ann@sender.test>',
  to: ['support@acme.test'],
  cc: ['boss@sender.test'],
  subject: 'Order 42',
  at: Date.parse('2026-11-20T10:00:00Z'),
  text: 'Line one\n\nLine <three>',
  html: null,
};

describe('quoting a message in a reply or forward', () => {
  it('quotes each line of the text with "> " after an attribution line; blank lines become ">"', () => {
    const { text, html } = replyBodies(original, 'Thanks.', undefined);
    assert.equal(
      text,
      'Thanks.\n\nOn Fri, 20 Nov 2026 10:00:00 GMT, Ann <ann@sender.test> wrote:\n> Line one\n>\n> Line <three>\n',
    );
    assert.equal(html, undefined, 'a body the caller left out stays out');
  });

  it('quotes HTML in a blockquote; a text-only original is escaped, never injected', () => {
    const { html } = replyBodies(original, undefined, '<p>Thanks.</p>');
    assert.match(
      html!,
      /^<p>Thanks\.<\/p>\n<div class="mailsvc-quote"><p>On Fri, 20 Nov 2026 10:00:00 GMT, Ann &lt;ann@sender\.test&gt; wrote:<\/p><blockquote[^>]*><pre[^>]*>Line one\n\nLine &lt;three&gt;<\/pre><\/blockquote><\/div>$/,
    );
  });

  it('quotes the text of an HTML-only original without its tags, scripts or styles', () => {
    const { text } = replyBodies(
      { ...original, text: null, html: '<style>p{}</style><p>Hi &amp; bye</p><script>x()</script>' },
      'ok',
      undefined,
    );
    assert.match(text!, /wrote:\n> Hi & bye\n$/);
    const empty = replyBodies({ ...original, text: '\n', html: '<p>From HTML</p>' }, 'ok', undefined);
    assert.match(empty.text!, /wrote:\n> From HTML\n$/, 'an empty text part is no text');
  });

  it('forwards with the header block, the note and the original, in both parts', () => {
    const { text, html } = forwardBodies(original, 'FYI', undefined);
    assert.equal(
      text,
      'FYI\n\n---------- Forwarded message ---------\nFrom: Ann <ann@sender.test>\nDate: Fri, 20 Nov 2026 10:00:00 GMT\nSubject: Order 42\nTo: support@acme.test\nCc: boss@sender.test\n\nLine one\n\nLine <three>\n',
    );
    assert.match(
      html,
      /^<p>FYI<\/p>\n<div class="mailsvc-forward"><p>---------- Forwarded message ---------<br>From: Ann &lt;ann@sender\.test&gt;/,
    );
    const bare = forwardBodies({ ...original, cc: [] }, undefined, undefined);
    assert.match(bare.text, /^---------- Forwarded message ---------\n/);
    assert.doesNotMatch(bare.text, /Cc:/);
  });

  it('prefixes a subject once', () => {
    assert.equal(prefixedSubject('Re', 'Order 42'), 'Re: Order 42');
    assert.equal(prefixedSubject('Re', 'RE: Order 42'), 'RE: Order 42');
    assert.equal(prefixedSubject('Re', 'Fwd: Order 42'), 'Re: Fwd: Order 42');
    assert.equal(prefixedSubject('Fwd', 'Fw: Order 42'), 'Fw: Order 42');
    assert.equal(prefixedSubject('Fwd', 'Re: Order 42'), 'Fwd: Re: Order 42');
    assert.equal(prefixedSubject('Re', null), 'Re:');
  });
});
