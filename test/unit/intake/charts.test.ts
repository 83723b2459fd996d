import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lineChart, niceMax, ratioBars } from '../../../src/intake/http/dashboard/charts.js';

describe('dashboard charts (server-drawn SVG)', () => {
  it('rounds the y axis up to 1, 2 or 5 times a power of ten', () => {
    assert.deepEqual([0, 1, 3, 7, 10, 11, 260, 999].map(niceMax), [1, 1, 5, 10, 10, 20, 500, 1000]);
  });
  it('draws one polyline per series, scaled to the axis, with a title and the figures', () => {
    const svg = lineChart('Mail <per> hour', ['00:00', '01:00', '02:00'], [
      { name: 'sent', cls: 's-sent', values: [0, 5, 10] },
      { name: 'bounced', cls: 's-bounced', values: [0, 0, 1] },
    ]).value;
    assert.equal(svg.match(/<polyline /g)?.length, 2);
    assert.match(svg, /<title id="chart-\d+">Mail &lt;per&gt; hour<\/title>/, 'text is escaped');
    // x from 34 to 412, y from 146 (0) to 10 (10).
    assert.match(svg, /class="line s-sent" points="34\.0,146\.0 223\.0,78\.0 412\.0,10\.0"/);
    assert.match(svg, /sent <b>15<\/b>/);
    assert.match(svg, /<td>02:00<\/td><td>10<\/td><td>1<\/td>/);
    assert.doesNotMatch(svg, /style=|https?:/, 'no inline styles, nothing loaded');
  });
  it('draws ratio bars clamped to 0..1', () => {
    const svg = ratioBars('Delivery', [
      { label: 'gmail', value: 0.5, cls: 's-delivered', text: '50%' },
      { label: 'other', value: 2, cls: 's-delivered', text: 'x' },
    ]).value;
    assert.match(svg, /class="bar s-delivered" x="80" y="4" width="100\.0"/);
    assert.match(svg, /class="bar s-delivered" x="80" y="30" width="200\.0"/);
  });
});
