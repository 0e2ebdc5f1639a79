// rmbench-client's pages (the report page, the leaderboard): what every page's script uses. No network.
'use strict';
const $ = (sel) => document.querySelector(sel);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;',
  "'": '&#39;' }[c]));
const pct = (v) => (v === null || v === undefined ? '–' : (100 * v).toFixed(1));
const num = (v) => (v === null || v === undefined ? '–' : Number.isInteger(v) ? String(v)
  : Math.abs(v) >= 100 ? v.toFixed(1) : v.toFixed(3));

async function loadData() {
  const raw = atob($('#data').textContent.trim());
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return JSON.parse(await new Response(stream).text());
}

// what made a result (its stamp): the client's version, the Python, the libraries, when, and how
function stampHtml(stamp) {
  if (!stamp) {
    return '<p class="help stamp" id="stamp">Made by an rmbench-client from before stamps: its version is not recorded.</p>';
  }
  const libs = Object.entries(stamp.libraries || {}).map(([k, v]) => ` · ${esc(k)} ${esc(v)}`).join('');
  const how = stamp.command || stamp.call;
  const again = stamp.reproduces ? ` · a reproduction of ${esc(stamp.reproduces)}` : '';
  return `<p class="help stamp" id="stamp">Made by rmbench-client ${esc(stamp.version)} · Python ${esc(stamp.python)}`
    + `${libs} · ${esc(stamp.written)}${again}${how ? `<br><code>${esc(how)}</code>` : ''}</p>`;
}
