import { html, type SafeHtml } from './html.js';

/**
 * Charts drawn on the server as inline SVG: the page loads nothing from elsewhere and needs no
 * script, and the strict CSP holds (sizes are SVG attributes, colours come from the
 * stylesheet's classes). Each chart carries a visible title and a table of its figures for
 * screen readers and for people who want the numbers.
 *
 * Text is drawn at its size in CSS pixels whatever the width: the SVG has no viewBox, so a
 * unit is a pixel, positions along the x axis are percentages, and only the lines sit in an
 * inner SVG that stretches to the width (their strokes do not scale: `vector-effect`). A
 * scaled viewBox made the labels three times the body text on a desktop screen.
 */

export interface Series {
  name: string;
  /** A class of the stylesheet (`s-sent`, `s-delivered`, …) that colours it. */
  cls: string;
  values: number[];
}

const HEIGHT = 180;
const TOP = 16;
const BOTTOM = 22;
const PLOT = HEIGHT - TOP - BOTTOM;
/** Width of the inner SVG's coordinate space; it is stretched to the chart's width. */
const SPAN = 1000;

/** A round maximum for the y axis (1, 2, 5 × 10^n) at or above `max`. */
export function niceMax(max: number): number {
  if (max <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * power >= max) return step * power;
  return 10 * power;
}

const fmt = (n: number) =>
  n >= 10_000 ? `${Math.round(n / 1000)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n);
const pct = (n: number) => `${n.toFixed(2)}%`;

let chartSeq = 0;

/** A line chart of several series over the same `labels` (the x axis, dated). */
export function lineChart(title: string, labels: string[], series: Series[]): SafeHtml {
  const id = `chart-${++chartSeq}`;
  const max = niceMax(Math.max(0, ...series.flatMap((s) => s.values)));
  const n = Math.max(1, labels.length - 1);
  // A little room at both ends so that the first and last points are not cut in half.
  const x = (i: number) => 4 + ((SPAN - 8) * i) / n;
  const y = (v: number) => PLOT * (1 - v / max);
  const xTicks =
    labels.length > 2 ? [0, Math.floor((labels.length - 1) / 2), labels.length - 1] : labels.map((_, i) => i);
  const points = (values: number[]) => values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
  return html`<figure class="chart-box"><figcaption class="chart-title" id="${id}">${title}</figcaption>
<svg class="chart" width="100%" height="${HEIGHT}" role="img" aria-labelledby="${id}">
${[max, max / 2, 0].filter(Number.isInteger).map((t) => html`<line class="grid" x1="0" x2="100%" y1="${(TOP + y(t)).toFixed(1)}" y2="${(TOP + y(t)).toFixed(1)}"/><text class="tick" x="0" y="${(TOP + y(t) - 3).toFixed(1)}">${fmt(t)}</text>`)}
<svg class="plot" x="0" y="${TOP}" width="100%" height="${PLOT}" viewBox="0 0 ${SPAN} ${PLOT}" preserveAspectRatio="none">${series.map((s) => html`<polyline class="line ${s.cls}" points="${points(s.values)}"/>`)}</svg>
${xTicks.map((i) => html`<text class="tick" x="${pct((100 * x(i)) / SPAN)}" y="${HEIGHT - 5}" text-anchor="${i === 0 ? 'start' : i === labels.length - 1 ? 'end' : 'middle'}">${labels[i]}</text>`)}
</svg><ul class="legend">${series.map((s) => html`<li><span class="swatch ${s.cls}"></span>${s.name} <b>${s.values.reduce((a, b) => a + b, 0)}</b></li>`)}</ul>
<details><summary>Figures</summary><div class="scroll"><table><thead><tr><th></th>${series.map((s) => html`<th>${s.name}</th>`)}</tr></thead><tbody>${labels.map(
    (label, i) => html`<tr><td>${label}</td>${series.map((s) => html`<td>${s.values[i] ?? 0}</td>`)}</tr>`,
  )}</tbody></table></div></details></figure>`;
}

interface Bar {
  label: string;
  /** 0 to 1. */
  value: number;
  cls: string;
  /** Shown after the bar, e.g. "98.5% of 1,204". */
  text: string;
}

/** Horizontal bars of ratios (0 to 1), one row each, under a visible title. */
export function ratioBars(title: string, bars: Bar[]): SafeHtml {
  const id = `chart-${++chartSeq}`;
  return html`<figure class="chart-box"><figcaption class="chart-title" id="${id}">${title}</figcaption>
<table class="bars" aria-labelledby="${id}"><tbody>${bars.map(
    (b) =>
      html`<tr><th scope="row">${b.label}</th><td class="bar-cell"><svg class="bar" width="100%" height="14" aria-hidden="true"><rect class="track" width="100%" height="14" rx="3"/><rect class="fill ${b.cls}" width="${pct(100 * Math.max(0, Math.min(1, b.value)))}" height="14" rx="3"/></svg></td><td class="value">${b.text}</td></tr>`,
  )}</tbody></table></figure>`;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `14 Jun 10:00` (UTC): an hour on an axis that spans days. */
export const hourLabel = (ms: number): string => {
  const d = new Date(ms);
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${String(d.getUTCHours()).padStart(2, '0')}:00`;
};

/** `14 Jun` (UTC). */
export const dayLabel = (ms: number): string => {
  const d = new Date(ms);
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]}`;
};
