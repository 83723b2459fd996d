import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addTracking } from '../../../src/messages/add-tracking.js';

const clickUrl = (url: string) => `https://t.example/c/${encodeURIComponent(url)}`;

describe('addTracking', () => {
  it('rewrites http(s) links, decoding character references first', () => {
    const html = `<p><a class="btn" href="https://shop.example/o?id=1&amp;ref=mail" target="_blank">Order</a> <A HREF='http://x.example/'>x</A></p>`;
    assert.equal(
      addTracking(html, { openUrl: null, clickUrl }),
      `<p><a class="btn" href="https://t.example/c/${encodeURIComponent('https://shop.example/o?id=1&ref=mail')}" target="_blank">Order</a> <A HREF='https://t.example/c/${encodeURIComponent('http://x.example/')}'>x</A></p>`,
    );
  });

  it('leaves other links, and links the caller declines, as they are', () => {
    const html =
      '<a href="mailto:a@b.example">m</a><a href="tel:+1">t</a><a href="#top">a</a><a href="{{url}}">v</a><a name="x">n</a><link href="https://css.example/a.css">';
    assert.equal(addTracking(html, { openUrl: null, clickUrl }), html);
    const declined = '<a href="https://long.example/">l</a>';
    assert.equal(addTracking(declined, { openUrl: null, clickUrl: () => null }), declined);
  });

  it('puts the pixel before the last </body>, or at the end without one', () => {
    const withBody = addTracking('<html><body><p>Hi</p></BODY></html>', {
      openUrl: 'https://t.example/o/x',
      clickUrl: null,
    });
    assert.match(
      withBody,
      /^<html><body><p>Hi<\/p><img src="https:\/\/t\.example\/o\/x" width="1" height="1" alt="" style="[^"]+" \/><\/BODY><\/html>$/,
    );
    assert.match(
      addTracking('<p>Hi</p>', { openUrl: 'https://t.example/o/x', clickUrl: null }),
      /^<p>Hi<\/p><img src="https:\/\/t\.example\/o\/x"/,
    );
  });

  it('changes nothing when neither is tracked', () => {
    const html = '<a href="https://a.example/">a</a>';
    assert.equal(addTracking(html, { openUrl: null, clickUrl: null }), html);
  });
});
