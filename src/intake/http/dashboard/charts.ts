import { html, type SafeHtml } from './html.js';

/**
 * Charts drawn on the server as inline SVG: the page loads nothing from elsewhere and needs no
 * script, and the strict CSP holds (sizes are SVG attributes, colours come from the
 * stylesheet's classes). Each chart carries a title and a table of its figures for screen
 * readers and for people who want the numbers.
 */

export interface Series {
  name: string;
  /** A class of the stylesheet (`s-sent`, `s-delivered`, …) that colours it. */
  cls: string;
  values: number[];
}

// Drawn small so that the text stays readable when a phone scales the chart down.
const W = 420;
const H = 170;
const PAD = { left: 34, right: 8, top: 10, bottom: 24 };

/** A round maximum for the y axis (1, 2, 5 × 10^n) at or above `max`. */
export function niceMax(max: number): number {
  if (max <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * power >= max) return step * power;
  return 10 * power;
}

const fmt = (n: number) => (n >= 10_000 ? `${Math.round(n / 1000)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n));

let chartSeq = 0;

/** A line chart of several series over the same `labels` (x axis). */
export function lineChart(title: string, labels: string[], series: Series[]): SafeHtml {
  const id = `chart-${++chartSeq}`;
  const max = niceMax(Math.max(0, ...series.flatMap((s) => s.values)));
  const n = Math.max(1, labels.length - 1);
  const x = (i: number) => PAD.left + ((W - PAD.left - PAD.right) * i) / n;
  const y = (v: number) => PAD.top + (H - PAD.top - PAD.bottom) * (1 - v / max);
  const ticks = [0, max / 2, max];
  const xTicks = labels.length > 2 ? [0, Math.floor(labels.length / 2), labels.length - 1] : labels.map((_, i) => i);
  const points = (values: number[]) => values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
  return html`<figure class="chart-box"><svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="${id}"><title id="${id}">${title}</title>
${ticks.map((t) => html`<line class="grid" x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(t).toFixed(1)}" y2="${y(t).toFixed(1)}"/><text class="tick" x="${PAD.left - 4}" y="${(y(t) + 3).toFixed(1)}" text-anchor="end">${fmt(t)}</text>`)}
${xTicks.map((i) => html`<text class="tick" x="${x(i).toFixed(1)}" y="${H - 6}" text-anchor="${i === 0 ? 'start' : i === labels.length - 1 ? 'end' : 'middle'}">${labels[i]}</text>`)}
${series.map((s) => html`<polyline class="line ${s.cls}" points="${points(s.values)}"/>`)}
</svg><figcaption><ul class="legend">${series.map((s) => html`<li><span class="swatch ${s.cls}"></span>${s.name} <b>${s.values.reduce((a, b) => a + b, 0)}</b></li>`)}</ul>
<details><summary>Figures</summary><div class="scroll"><table><thead><tr><th></th>${series.map((s) => html`<th>${s.name}</th>`)}</tr></thead><tbody>${labels.map(
    (label, i) => html`<tr><td>${label}</td>${series.map((s) => html`<td>${s.values[i] ?? 0}</td>`)}</tr>`,
  )}</tbody></table></div></details></figcaption></figure>`;
}

export interface Bar {
  label: string;
  /** 0 to 1. */
  value: number;
  cls: string;
  /** Shown after the bar, e.g. "98.5% of 1,204". */
  text: string;
}

/** Horizontal bars of ratios (0 to 1), one per row. */
export function ratioBars(title: string, bars: Bar[]): SafeHtml {
  const id = `chart-${++chartSeq}`;
  const rowH = 26;
  const labelW = 80;
  const barW = 200;
  const height = rowH * bars.length + 4;
  return html`<figure class="chart-box"><svg class="chart bars" viewBox="0 0 ${labelW + barW + 130} ${height}" role="img" aria-labelledby="${id}"><title id="${id}">${title}</title>
${bars.map((b, i) => {
    const top = i * rowH + 4;
    const width = Math.max(0, Math.min(1, b.value)) * barW;
    return html`<text class="label" x="0" y="${top + 14}">${b.label}</text><rect class="track" x="${labelW}" y="${top}" width="${barW}" height="18" rx="3"/><rect class="bar ${b.cls}" x="${labelW}" y="${top}" width="${width.toFixed(1)}" height="18" rx="3"/><text class="value" x="${labelW + barW + 8}" y="${top + 14}">${b.text}</text>`;
  })}
</svg></figure>`;
}
