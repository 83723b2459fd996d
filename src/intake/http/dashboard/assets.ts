import { createHash } from 'node:crypto';

/**
 * The dashboard's only assets, kept in the module so that they ship with the package and
 * the build needs no copy step. Mobile first: one column, tables scroll sideways.
 */
const CSS = `
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#1d2330;background:#f5f6f8}
a{color:#1f5fbf}
header{background:#1d2330;color:#fff;padding:.6rem 1rem;display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center}
header .brand{font-weight:700;color:#fff;text-decoration:none;margin-right:auto}
header nav{display:flex;flex-wrap:wrap;gap:.25rem .9rem;width:100%}
header nav a{color:#cfd8e6;text-decoration:none;padding:.2rem 0}
header nav a[aria-current=page]{color:#fff;border-bottom:2px solid #6ea8fe}
header form{margin:0;display:flex;gap:.4rem;align-items:center}
header select,header button{font-size:.85rem}
header .ws-name{color:#cfd8e6;font-size:.85rem}
header a.account{color:#cfd8e6;font-size:.85rem;text-decoration:none}
header a.account[aria-current=page]{color:#fff;border-bottom:2px solid #6ea8fe}
.qr svg{display:block;margin:.5rem 0}
ol.codes{columns:2;font-size:1rem}
main{max-width:72rem;margin:0 auto;padding:1rem}
h1{font-size:1.4rem;margin:.2rem 0 1rem;overflow-wrap:anywhere}
h2{font-size:1.1rem;margin:1.5rem 0 .6rem}
.card h2:first-child{margin-top:0}
.card{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:1rem;margin-bottom:1rem}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:.45rem .6rem;border-bottom:1px solid #e8ebf0;vertical-align:top}
th{font-size:.8rem;text-transform:uppercase;letter-spacing:.03em;color:#5b6475;white-space:nowrap}
td.wrap{overflow-wrap:anywhere;min-width:10rem}
pre{white-space:pre-wrap;overflow-wrap:anywhere}
code,pre{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:#f0f2f5;padding:.6rem;border-radius:6px;margin:0;max-height:24rem;overflow:auto}
form.inline{display:inline}
form.row{display:flex;flex-wrap:wrap;gap:.5rem;align-items:flex-end}
label{display:flex;flex-direction:column;gap:.2rem;font-size:.85rem;color:#444}
label.check{flex-direction:row;align-items:center}
input,select,button{font:inherit;padding:.45rem .6rem;border:1px solid #b9c0cc;border-radius:6px;background:#fff;max-width:100%}
button{background:#1f5fbf;color:#fff;border-color:#1f5fbf;cursor:pointer}
button.secondary{background:#fff;color:#1f5fbf}
button.danger{background:#b42318;border-color:#b42318}
.badge{display:inline-block;padding:.05rem .45rem;border-radius:999px;font-size:.78rem;background:#e8ebf0;white-space:nowrap}
.badge.good{background:#d1fadf;color:#05603a}.badge.bad{background:#fee4e2;color:#912018}.badge.wait{background:#fef0c7;color:#93370d}
.notice,.error,dl.facts dd{overflow-wrap:anywhere}
.records{display:grid;gap:1rem}
.record{display:grid;gap:.4rem;padding-bottom:.8rem;border-bottom:1px solid #e8ebf0}
.record:last-child{border-bottom:0;padding-bottom:0}
.record .badge{justify-self:start}
.notice{background:#d1fadf;border:1px solid #a6f4c5;padding:.6rem .8rem;border-radius:6px;margin-bottom:1rem}
.error{background:#fee4e2;border:1px solid #fecdca;padding:.6rem .8rem;border-radius:6px;margin-bottom:1rem}
.secret{display:flex;gap:.5rem;flex-wrap:wrap;align-items:center}
.secret input{flex:1 1 16rem;font-family:ui-monospace,monospace}
.muted{color:#5b6475;font-size:.85rem}
.timeline{list-style:none;padding:0;margin:0}
.timeline li{border-left:3px solid #6ea8fe;padding:.2rem .7rem;margin-bottom:.4rem}
iframe.preview{width:100%;height:28rem;border:1px solid #dde1e7;border-radius:6px;background:#fff}
.studio{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:1rem}
@media (max-width:60rem){.studio{grid-template-columns:minmax(0,1fr)}}
iframe.preview.desktop{width:100%;max-width:640px}
iframe.preview.mobile{width:375px;max-width:100%}
ol.source{font-size:.75rem;max-height:40rem;overflow:auto;background:#f6f8fa;border:1px solid #dde1e7;border-radius:6px;padding-left:3rem;margin:0}
ol.source li{white-space:pre-wrap;word-break:break-all}
ol.source li.hit{background:#fff3cd}
.finding-note{display:block;color:#8a5a00;font-size:.75rem}
ul.findings{padding-left:1.2rem}
li.finding.error strong{color:#b42318}li.finding.warning strong{color:#8a5a00}li.finding.info strong{color:#5b6475}
.login{max-width:24rem;margin:4rem auto}
.login form{display:flex;flex-direction:column;gap:.8rem}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.3rem .9rem;margin:0}
dl.facts dt{color:#5b6475}dl.facts dd{margin:0}
.tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(7rem,1fr));gap:.6rem;margin-bottom:1rem}
.tile{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:.6rem .8rem;display:flex;flex-direction:column}
.tile b{font-size:1.4rem}
.chart-box{margin:0 0 1rem;background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:.6rem}
.chart-title{font-weight:600;margin:0 0 .4rem}
.chart{display:block;overflow:visible}
.chart .grid{stroke:#e8ebf0;stroke-width:1}
.chart text{font-size:12px;fill:#5b6475}
.chart .line{fill:none;stroke-width:2;stroke-linejoin:round;vector-effect:non-scaling-stroke}
table.bars{background:none}
table.bars th{text-transform:none;letter-spacing:0;font-size:.85rem;color:#1d2330;width:6rem;padding:.3rem .4rem .3rem 0}
table.bars td{border:0;padding:.3rem .4rem;vertical-align:middle}
table.bars td.value{white-space:nowrap;font-size:.85rem;width:1%}
.bar{display:block}.bar .track{fill:#f0f2f5}
.legend{list-style:none;display:flex;flex-wrap:wrap;gap:.3rem 1rem;padding:0;margin:.4rem 0;font-size:.85rem}
.swatch{display:inline-block;width:.8rem;height:.8rem;border-radius:2px;margin-right:.3rem;vertical-align:-1px}
.s-sent{stroke:#1f5fbf;fill:#1f5fbf;background:#1f5fbf}.s-delivered{stroke:#12b76a;fill:#12b76a;background:#12b76a}
.s-deferred{stroke:#f79009;fill:#f79009;background:#f79009}.s-bounced{stroke:#d92d20;fill:#d92d20;background:#d92d20}
.s-complained{stroke:#7a2e0e;fill:#7a2e0e;background:#7a2e0e}.s-opened{stroke:#7f56d9;fill:#7f56d9;background:#7f56d9}
.s-clicked{stroke:#0ba5ec;fill:#0ba5ec;background:#0ba5ec}
.checks{display:flex;flex-wrap:wrap;gap:.2rem .6rem}.check{white-space:nowrap;font-size:.85rem}
.check-list{list-style:none;padding:0;margin:0;display:grid;gap:.8rem}
.check-list li{border-bottom:1px solid #e8ebf0;padding-bottom:.6rem}.check-list li:last-child{border-bottom:0}
textarea{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;padding:.45rem .6rem;border:1px solid #b9c0cc;border-radius:6px;width:100%;min-height:8rem}
form.stack{display:grid;gap:.7rem}
form.stack .row{display:flex;flex-wrap:wrap;gap:.5rem}
form.stack .row label{flex:1 1 12rem}
label.wide{flex-basis:100%}
.actions{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;margin:.6rem 0 0}
pre.json{max-height:16rem}
.groups{display:grid;gap:1rem}
.group h3{font-size:1rem;margin:0 0 .3rem;display:inline}
.group summary{cursor:pointer}
.group>h3{display:block}
.group .who{font-size:.8rem;text-transform:uppercase;letter-spacing:.03em;color:#5b6475}
.cols{display:grid;gap:1rem}
@media (min-width:48rem){header nav{width:auto}.cols{grid-template-columns:1fr 1fr}}
`;

/** Copy buttons: `data-copy="<id of an input or element>"`. */
const JS = `document.addEventListener('click',function(e){var b=e.target.closest&&e.target.closest('[data-copy]');if(!b)return;var el=document.getElementById(b.getAttribute('data-copy'));if(!el)return;var text='value' in el?el.value:el.textContent;function done(){var t=b.textContent;b.textContent='Copied';setTimeout(function(){b.textContent=t},1500)}if(navigator.clipboard&&window.isSecureContext){navigator.clipboard.writeText(text).then(done)}else if(el.select){el.select();document.execCommand('copy');done()}});`;

const version = (body: string) => createHash('sha256').update(body).digest('hex').slice(0, 12);

interface Asset {
  path: string;
  type: string;
  body: string;
}

/** Paths carry a content hash, so browsers may cache them for good. */
export const assets = {
  css: { path: `/dashboard/assets/app-${version(CSS)}.css`, type: 'text/css; charset=utf-8', body: CSS },
  js: { path: `/dashboard/assets/app-${version(JS)}.js`, type: 'text/javascript; charset=utf-8', body: JS },
} satisfies Record<string, Asset>;
