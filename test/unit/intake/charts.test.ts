import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dayLabel, hourLabel, lineChart, niceMax, ratioBars } from '../../../src/intake/http/dashboard/charts.js';

describe('dashboard charts (server-drawn SVG)', () => {
  it('rounds the y axis up to 1, 2 or 5 times a power of ten', () => {
    assert.deepEqual([0, 1, 3, 7, 10, 11, 260, 999].map(niceMax), [1, 1, 5, 10, 10, 20, 500, 1000]);
  });
  it('draws one polyline per series, scaled to the axis, with a visible title and the figures', () => {
    const svg = lineChart(
      'Mail <per> hour',
      ['12 Jun 00:00', '12 Jun 01:00', '12 Jun 02:00'],
      [
        { name: 'sent', cls: 's-sent', values: [0, 5, 10] },
        { name: 'bounced', cls: 's-bounced', values: [0, 0, 1] },
      ],
    ).value;
    assert.equal(svg.match(/<polyline /g)?.length, 2);
    assert.match(
      svg,
      /<figcaption class="chart-title" id="chart-\d+">Mail &lt;per&gt; hour<\/figcaption>/,
      'a visible title, escaped',
    );
    // The lines stretch (x from 4 to 996 of 1000); y from 142 (0) to 0 (10) in pixels.
    assert.match(svg, /class="line s-sent" points="4\.0,142\.0 500\.0,71\.0 996\.0,0\.0"/);
    assert.match(svg, /sent <b>15<\/b>/);
    assert.match(svg, /<td>12 Jun 02:00<\/td><td>10<\/td><td>1<\/td>/);
    assert.doesNotMatch(svg, /style=|https?:/, 'no inline styles, nothing loaded');
  });
  it('draws text at its size: the outer SVG has no viewBox, only the lines stretch', () => {
    const svg = lineChart('t', ['a', 'b', 'c'], [{ name: 's', cls: 's-sent', values: [1, 2, 3] }]).value;
    const outer = /<svg class="chart"[^>]*>/.exec(svg)![0];
    assert.doesNotMatch(outer, /viewBox/);
    assert.match(outer, /width="100%" height="180"/);
    assert.match(svg, /<svg class="plot"[^>]*preserveAspectRatio="none"/);
    assert.match(svg, /<text class="tick" x="0\.40%"[^>]*text-anchor="start">a<\/text>/);
    assert.match(svg, /<text class="tick" x="99\.60%"[^>]*text-anchor="end">c<\/text>/);
  });
  it('draws ratio bars clamped to 0..1, each row labelled', () => {
    const bars = ratioBars('Delivery', [
      { label: 'gmail', value: 0.5, cls: 's-delivered', text: '50%' },
      { label: 'other', value: 2, cls: 's-delivered', text: 'x' },
    ]).value;
    assert.match(bars, /<figcaption class="chart-title"[^>]*>Delivery<\/figcaption>/);
    assert.match(bars, /<th scope="row">gmail<\/th>.*class="fill s-delivered" width="50\.00%"/);
    assert.match(bars, /<th scope="row">other<\/th>.*class="fill s-delivered" width="100\.00%"/);
  });
  it('dates the axis labels', () => {
    const t = Date.UTC(2024, 5, 14, 9, 30);
    assert.equal(hourLabel(t), '14 Jun 09:00');
    assert.equal(dayLabel(t), '14 Jun');
  });
});
