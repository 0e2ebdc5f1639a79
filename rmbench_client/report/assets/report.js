// rmbench-client report page: everything is drawn here from the embedded data (gzip + base64 JSON); no network.
'use strict';
const PAGE = 30;              // prompts rendered at a time
const MAX_DIFF_CELLS = 4e6;   // word-diff table size; larger middles are marked as changed whole
let D = null;                 // the data
const S = { run: 0, mode: 'lost', group: '', sub: '', cell: '', mmin: '', mmax: '', q: '', sort: 'margin',
  limit: PAGE, pick: {} };

// --- scores -------------------------------------------------------------------------------------------------
const width = () => Math.max(1, D.labels.length);
const styleOf = (i) => (D.labels.length ? D.labels[i] : '');
// a prompt's numbers of chosen and rejected answers (RM-Bench 3 x 3, one pair 1 x 1, RMB's best-of-N 1 x its losers)
let DIMS = {};
// the comparisons of a prompt whose benchmark scores only some (PPE Correctness: the pairs some run lost or tied)
let PAIRS = {};
const dims = (id) => DIMS[id] || [width(), width()];
const allCells = (id) => { if (PAIRS[id]) return PAIRS[id]; const [a, b] = dims(id), out = []; for (let i = 0; i < a; i++) for (let j = 0; j < b; j++) out.push([i, j]); return out; };
// where a comparison's credit (and a judge's answer) stands in a prompt's lists: chosen-major, or its place in PAIRS
const cellIndex = (id, i, j) => (PAIRS[id] ? PAIRS[id].findIndex(([c, r]) => c === i && r === j) : i * dims(id)[1] + j);
const cellName = ([i, j]) => (D.labels.length ? `chosen ${styleOf(i)} vs rejected ${styleOf(j)}` : 'chosen vs rejected');

// Credit of chosen i over rejected j in run r: 1 won, 0 lost (a tie is lost, as the benchmark scores it), a
// judge's 0.5 for a tie; null where the run did not score the prompt.
function credit(r, id, i, j) {
  const run = D.runs[r], [a, b] = dims(id);
  if (run.results[id]) return run.results[id][cellIndex(id, i, j)];
  const s = run.scores[id];
  return s ? (s[i] > s[a + j] ? 1 : 0) : null;
}
function margin(r, id, [i, j]) { const s = D.runs[r].scores[id]; return s ? s[i] - s[dims(id)[0] + j] : null; }
const lostCells = (r, id) => allCells(id).filter(([i, j]) => { const c = credit(r, id, i, j); return c !== null && c < 1; });
function disagreeCells(id) {
  return allCells(id).filter(([i, j]) => {
    const cs = D.runs.map((_, r) => credit(r, id, i, j));
    return cs.every((c) => c !== null) && new Set(cs).size > 1;
  });
}
const candidates = (id) => (S.mode === 'disagree' ? disagreeCells(id) : lostCells(S.run, id));
// The comparison shown for a prompt: the filter's cell, the one picked on its chips, else a lost same-style pair
// (where the responses differ in substance only) with the lowest margin, else the lowest margin overall.
function shownCell(id, cands) {
  if (S.cell) return S.cell.split(',').map(Number);
  const picked = S.pick[id];
  if (picked && cands.some((c) => c.join() === picked)) return picked.split(',').map(Number);
  const byMargin = (a, b) => (margin(S.run, id, a) ?? 0) - (margin(S.run, id, b) ?? 0);
  const same = cands.filter(([i, j]) => i === j).sort(byMargin);
  return same.length ? same[0] : [...cands].sort(byMargin)[0];
}

function matches() {
  const out = [], q = S.q.toLowerCase();
  const lo = S.mmin === '' ? -Infinity : Number(S.mmin), hi = S.mmax === '' ? Infinity : Number(S.mmax);
  D.prompts.forEach((p, order) => {
    if ((S.group && p.g !== S.group) || (S.sub && p.s !== S.sub)) return;
    if (q && !p.p.toLowerCase().includes(q)) return;
    const cands = candidates(p.id);
    if (!cands.length || (S.cell && !cands.some((c) => c.join() === S.cell))) return;
    const cell = shownCell(p.id, cands), m = margin(S.run, p.id, cell);
    if ((S.mmin !== '' || S.mmax !== '') && (m === null || m < lo || m > hi)) return;
    out.push({ p, cands, cell, m, order });
  });
  if (S.sort === 'margin') out.sort((a, b) => (a.m ?? Infinity) - (b.m ?? Infinity) || a.order - b.order);
  return out;
}

// --- word diff ----------------------------------------------------------------------------------------------
const tokens = (text) => text.match(/\s+|\S+\s*/g) || [];
// Marks the words of a and b outside a longest common subsequence of words (whitespace ignored).
function wordDiff(a, b) {
  const ka = a.map((t) => t.trim()), kb = b.map((t) => t.trim());
  const ca = new Array(a.length).fill(false), cb = new Array(b.length).fill(false);
  let pre = 0;
  while (pre < ka.length && pre < kb.length && ka[pre] === kb[pre]) pre++;
  let suf = 0;
  while (suf < ka.length - pre && suf < kb.length - pre && ka[ka.length - 1 - suf] === kb[kb.length - 1 - suf]) suf++;
  const A = ka.slice(pre, ka.length - suf), B = kb.slice(pre, kb.length - suf), n = A.length, m = B.length;
  if (n * m > MAX_DIFF_CELLS) {
    for (let i = 0; i < n; i++) ca[pre + i] = true;
    for (let j = 0; j < m; j++) cb[pre + j] = true;
    return [ca, cb];
  }
  const W = m + 1, L = new Uint32Array((n + 1) * W);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      L[i * W + j] = A[i] === B[j] ? L[(i + 1) * W + j + 1] + 1 : Math.max(L[(i + 1) * W + j], L[i * W + j + 1]);
    }
  }
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (A[i] === B[j]) { i++; j++; } else if (L[(i + 1) * W + j] >= L[i * W + j + 1]) ca[pre + i++] = true; else cb[pre + j++] = true;
  }
  while (i < n) ca[pre + i++] = true;
  while (j < m) cb[pre + j++] = true;
  return [ca, cb];
}
// Changed words wrapped in <del>/<ins>; a run of changed words on one line shares one mark, line breaks and
// indentation stay unmarked.
function marked(toks, changed, tag) {
  let html = '', open = false;
  toks.forEach((t, k) => {
    const word = t.trimEnd(), ws = t.slice(word.length);
    if (!changed[k] || !word) { html += esc(t); return; }
    if (!open) { html += `<${tag}>`; open = true; }
    html += esc(word);
    const joins = changed[k + 1] && !ws.includes('\n') && k + 1 < toks.length && toks[k + 1].trim() !== '';
    if (joins) { html += esc(ws); return; }
    html += `</${tag}>${esc(ws)}`;
    open = false;
  });
  return html;
}

// --- sections -----------------------------------------------------------------------------------------------
const value = (v) => (v ? `${pct(v[0])}${v.length > 2 ? `<span class="ci">[${pct(v[1])}, ${pct(v[2])}]</span>` : ''}` : '–');

function renderSummary() {
  const run = D.runs[S.run];
  const notes = [...(run.undefined || []).map((u) => `undefined: ${u}`), ...run.partial.map((r) => `partial: ${r}`),
    ...run.warnings.map((w) => `warning: ${w}`), ...(run.facts || []).map((f) => `note: ${f}`)];
  $('#notes').innerHTML = notes.map((n) => `<p class="note">${esc(n)}</p>`).join('');
  const head = `<tr><th>${esc(D.group_field)}</th>${run.columns.map((c) => `<th>${esc(c)}</th>`).join('')}<th>n</th></tr>`;
  const rows = run.rows.map((r) => `<tr class="${r.total ? 'total' : ''}"><td>${esc(r.name)}</td>${r.values
    .map((v, i) => `<td${r.why?.[run.columns[i]] ? ` title="${esc(r.why[run.columns[i]])}"` : ''}>${value(v)}</td>`)
    .join('')}<td>${r.n ?? ''}</td></tr>`).join('');
  $('#summary').innerHTML = `<table id="summary-table">${head}${rows}</table><p class="help">Percent, with the 95% `
    + `bootstrap interval over prompts in brackets. ${esc(run.counts.scored ?? '?')} of ${esc(run.counts.prompts ?? '?')} `
    + `prompts scored, ${esc(run.counts.failed ?? 0)} failed.</p>${failedByEndpoint(run.failed_by_endpoint || {})}`
    + stampHtml(run.stamp);
}

// the failed prompts grouped by the endpoint of their last failed request (failures.jsonl's `endpoint`)
function failedByEndpoint(counts) {
  const rows = Object.entries(counts);
  if (!rows.length) return '';
  const row = ([url, n]) => `<tr><td>${esc(url || '(no endpoint named)')}</td><td>${esc(n)}</td></tr>`;
  return `<table id="failed-by-endpoint"><tr><th>failed at endpoint</th><th>prompts</th></tr>`
    + `${rows.map(row).join('')}</table>`;
}

const heat = (v) => `hsl(${Math.round(120 * v)}, 70%, ${78 - 18 * Math.abs(v - 0.5)}%)`;
function renderHeatmaps() {
  const panels = Object.entries(D.runs[S.run].matrices);
  $('#heatmap-section').hidden = !panels.length;
  $('#heatmaps').innerHTML = panels.map(([name, { matrix, n }]) => {
    let html = `<div class="hm-wrap"><div class="heatmap" data-group="${esc(name)}"><div class="title">${esc(name)} `
      + `<span class="tag">n = ${n}</span></div><div></div>`;
    html += D.labels.map((l) => `<div class="axis">${esc(l)}</div>`).join('');
    matrix.forEach((row, i) => {
      html += `<div class="axis row">${esc(D.labels[i])}</div>`;
      row.forEach((v, j) => {
        const sel = S.cell === `${i},${j}` && (S.group || 'overall') === name ? ' sel' : '';
        html += `<div class="cell${sel}" data-group="${esc(name)}" data-i="${i}" data-j="${j}" data-value="${v}" `
          + `data-n="${n}" style="background:${heat(v)}">${pct(v)}</div>`;
      });
    });
    return `${html}</div><div class="hm-foot">rows: chosen style · columns: rejected style</div></div>`;
  }).join('');
}

function tipText(cell) {
  const { group, i, j, value: v, n } = cell.dataset, c = [Number(i), Number(j)];
  const lost = D.prompts.filter((p) => (group === 'overall' || p.g === group)
    && lostCells(S.run, p.id).some((x) => x.join() === c.join())).length;
  return `${group} · ${cellName(c)}: chosen won ${pct(Number(v))}% (n = ${n}); lost or tied on ${lost} `
    + `prompt${lost === 1 ? '' : 's'} — click to list them`;
}

function renderStyleBias() {
  const bias = D.runs[S.run].style_bias;
  $('#style-section').hidden = !bias;
  if (!bias) return;
  const pairs = Object.keys(bias.pairs || {}), corr = bias.length_correlation;
  const groups = Object.keys(bias.groups || (corr && corr.groups) || {});
  const rho = (b) => (b && b.rho !== null ? `${b.rho.toFixed(2)}${b.ci ? `<span class="ci">[${b.ci[0].toFixed(2)}, ${b.ci[1].toFixed(2)}]</span>` : ''}` : '–');
  const cells = (block, c) => pairs.map((p) => `<td>${block && block[p] ? value([block[p].prefers, ...block[p].ci]) : '–'}</td>`).join('') + (corr ? `<td>${rho(c)}</td>` : '');
  const head = `<tr><th>${esc(D.group_field)}</th>${pairs.map((p) => `<th>${esc(p.replace('<', ' < '))}</th>`).join('')}${corr ? '<th>length ρ</th>' : ''}</tr>`;
  const rows = groups.map((g) => `<tr><td>${esc(g)}</td>${cells((bias.groups || {})[g], corr && corr.groups[g])}</tr>`).join('');
  let html = `<table id="style-table">${head}${rows}<tr class="total"><td>all</td>${cells(bias.pairs, corr)}</tr></table>`;
  if (D.runs.length > 1) {  // every run's pooled numbers side by side
    const each = D.runs.map((r) => `<tr><td>${esc(r.name)}</td>${r.style_bias ? pairs.map((p) => `<td>${r.style_bias.pairs && r.style_bias.pairs[p]
      ? value([r.style_bias.pairs[p].prefers, ...r.style_bias.pairs[p].ci]) : '–'}</td>`).join('') + (corr ? `<td>${rho(r.style_bias.length_correlation)}</td>` : '')
      : `<td colspan="${pairs.length + (corr ? 1 : 0)}">–</td>`}</tr>`).join('');
    html += `<h3>All runs</h3><table id="style-runs">${head.replace(esc(D.group_field), 'run')}${each}</table>`;
  }
  $('#style-bias').innerHTML = html;
  $('#style-help').textContent = (pairs.length ? 'a < b: percent of same-substance triples (each prompt\'s chosen three and '
    + 'rejected three) in which style b scored strictly higher than style a; a tie counts as not preferring. ' : '')
    + (corr ? 'length ρ: Spearman rank correlation of score and response length in characters over every scored response. '
      : '') + 'Brackets: 95% bootstrap intervals over prompts.';
}

function renderComparison() {
  const c = D.comparison;
  $('#comparison-section').hidden = !c;
  if (!c) return;
  const cols = c.header.slice(1);
  let html = `<table id="compare-table"><tr>${c.header.map((h) => `<th>${esc(h)}</th>`).join('')}</tr>`;
  c.rows.forEach((row, k) => {
    html += `<tr><td>${esc(row[0])}</td>${cols.map((col, x) => {
      const v = row[x + 1], ci = c.intervals[k][col];
      return `<td>${typeof v === 'number' ? value(ci ? [v, ...ci] : [v]) : esc(v ?? '–')}</td>`;
    }).join('')}</tr>`;
  });
  const d = c.differences;
  if (!d) {  // no prompt is the same in every run: the numbers side by side, untested
    $('#comparison').innerHTML = `${html}</table><p class="help">${esc(c.why_not.join(' '))}</p>`;
    return;
  }
  const names = [...new Set(d.differences.flatMap((x) => Object.keys(x)))];
  html += `</table><h3>Differences against ${esc(d.reference)}</h3><table id="diff-table"><tr><th>number</th>`
    + `${d.runs.map((r) => `<th>${esc(r)}</th>`).join('')}</tr>`;
  names.forEach((name) => {
    html += `<tr><td>${esc(name)}</td>${d.differences.map((x) => {
      const v = x[name];
      if (!v) return '<td>–</td>';
      const cls = v.significant ? ` class="sig${v.diff < 0 ? ' neg' : ''}"` : '';
      const p = v.p < 0.001 ? 'p<0.001' : `p=${v.p.toPrecision(2)}`;
      return `<td${cls} data-significant="${v.significant}">${v.diff >= 0 ? '+' : ''}${(100 * v.diff).toFixed(1)}`
        + `<span class="ci">[${(100 * v.ci[0]).toFixed(1)}, ${(100 * v.ci[1]).toFixed(1)}] ${p}</span>${v.significant ? ' *' : ''}</td>`;
    }).join('')}</tr>`;
  });
  const left = d.left_out.map((k, r) => (k ? `${D.runs[r].name}: ${k}` : '')).filter(Boolean);
  html += `</table><p class="help">Percent points, over the ${d.shared} prompts every run scored${left.length
    ? ` (left out, scored by only some runs: ${esc(left.join(', '))})` : ''}. Brackets: paired bootstrap 95% interval; `
    + `p: paired permutation test; * and bold: p &lt; 0.05. ${esc((c.why_not || []).join(' '))}</p>`;
  $('#comparison').innerHTML = html;
}

// --- the prompt list ----------------------------------------------------------------------------------------
function detailsHtml(id, [i, j]) {
  const [w] = dims(id), parts = [];
  if (D.runs.length > 1) {
    const rows = D.runs.map((run, r) => {
      const c = credit(r, id, i, j), m = margin(r, id, [i, j]), s = run.scores[id];
      const verdict = c === null ? 'not scored' : c === 1 ? 'won' : c === 0 ? 'lost' : 'tie';
      return `<tr><td>${esc(run.name)}</td><td>${s ? num(s[i]) : '–'}</td><td>${s ? num(s[w + j]) : '–'}</td>`
        + `<td>${num(m)}</td><td>${verdict}</td></tr>`;
    }).join('');
    parts.push(`<table class="runs"><tr><th>run</th><th>chosen</th><th>rejected</th><th>margin</th><th></th></tr>${rows}</table>`);
  }
  const det = D.runs[S.run].details[id];
  if (det && det.policy_logprob_sum) {
    const row = (label, key) => (det[key] ? `<tr><td>${label}</td><td>${num(det[key].chosen[i])}</td><td>${num(det[key].rejected[j])}</td></tr>` : '');
    parts.push(`<table class="dpo"><tr><th>DPO</th><th>chosen</th><th>rejected</th></tr>${row('policy log-prob sum', 'policy_logprob_sum')}`
      + `${row('reference log-prob sum', 'reference_logprob_sum')}${row('response tokens', 'response_tokens')}</table>`);
  }
  if (det && det.answers) {
    const a = det.answers;
    const texts = Array.isArray(a) ? [['judge answer', a[cellIndex(id, i, j)]]] : [['judge on chosen', a.chosen[i]], ['judge on rejected', a.rejected[j]]];
    texts.forEach(([label, t]) => parts.push(`<div class="answer"><h4>${label}</h4><pre>${esc(t ?? '(none)')}</pre></div>`));
  }
  return parts.length ? `<div class="extra">${parts.join('')}</div>` : '';
}

function itemHtml({ p, cands, cell, m }) {
  const [i, j] = cell, w = dims(p.id)[0], s = D.runs[S.run].scores[p.id];
  // which comparison to show: RM-Bench's style pairs by name; a best-of-K row's pairs by number (chosen vs rejected)
  const chipText = (c) => (D.labels.length ? `${esc(styleOf(c[0]))} vs ${esc(styleOf(c[1]))}` : `${c[0] + 1} vs ${c[1] + 1}`);
  const chips = D.labels.length || (PAIRS[p.id] && cands.length > 1) ? cands.map((c) => `<button type="button" class="chip${c.join() === cell.join() ? ' on' : ''}" `
    + `data-cell="${c.join()}" title="${esc(cellName(c))}">${chipText(c)}</button>`).join('') : '';
  const a = tokens(p.c[i]), b = tokens(p.r[j]), [ca, cb] = wordDiff(a, b);
  const score = (v) => (s ? ` · score ${num(v)}` : '');
  return `<article class="item" data-id="${esc(p.id)}" data-cell="${cell.join()}"><header><b>${esc(p.id)}</b>`
    + `<span class="tag">${esc(p.g)}${p.s && p.s !== p.g ? ` · ${esc(p.s)}` : ''}</span>`
    + `${chips ? `<span class="lost-label">${S.mode === 'disagree' ? 'disagree on' : 'lost'} (chosen vs rejected):</span>${chips}` : ''}`
    + `<span class="margin">margin ${num(m)}</span></header>`
    + `<details class="prompt"${p.p.length < 600 ? ' open' : ''}><summary>prompt</summary><pre>${esc(p.p)}</pre></details>`
    + `<div class="pair"><div class="side chosen"><h4>chosen${D.labels.length ? ` · ${esc(styleOf(i))}` : ''}${score(s && s[i])}</h4>`
    + `<pre>${marked(a, ca, 'del')}</pre></div><div class="side rejected"><h4>rejected${D.labels.length ? ` · ${esc(styleOf(j))}` : ''}`
    + `${score(s && s[w + j])}</h4><pre>${marked(b, cb, 'ins')}</pre></div></div>${detailsHtml(p.id, cell)}</article>`;
}

function renderList() {
  const found = matches();
  const what = S.mode === 'disagree' ? 'on which the runs disagree' : `${D.runs[S.run].name} lost or tied`;
  $('#list-count').textContent = `${found.length} prompt${found.length === 1 ? '' : 's'} ${what}`
    + `${S.cell ? ` (${cellName(S.cell.split(',').map(Number))})` : ''}`;
  $('#list').innerHTML = found.slice(0, S.limit).map(itemHtml).join('');
  $('#more').hidden = found.length <= S.limit;
  $('#more').textContent = `show more (${found.length - S.limit} left)`;
}

// --- controls -----------------------------------------------------------------------------------------------
const options = (items) => items.map(([v, t]) => `<option value="${esc(v)}">${esc(t)}</option>`).join('');
function setupFilters() {
  const groups = [...new Set(D.prompts.map((p) => p.g))], subs = [...new Set(D.prompts.map((p) => p.s))];
  $('#group-name').textContent = D.group_field;
  $('#f-group').innerHTML = options([['', 'all'], ...groups.map((g) => [g, g])]);
  $('#sub-label').hidden = !D.prompts.some((p) => p.s && p.s !== p.g);
  $('#sub-name').textContent = D.subgroup_field;
  $('#f-sub').innerHTML = options([['', 'all'], ...subs.filter(Boolean).map((g) => [g, g])]);
  $('#cell-label').hidden = !D.labels.length;
  $('#f-cell').innerHTML = options([['', 'any'], ...allCells().map((c) => [c.join(), cellName(c)])]);
  $('#mode-label').hidden = D.runs.length < 2;
  $('#f-mode').innerHTML = options([['lost', 'lost by the selected run'], ['disagree', 'runs disagree']]);
  $('#run-picker').hidden = D.runs.length < 2;
  $('#run-select').innerHTML = options(D.runs.map((r, k) => [k, r.name]));
  const bind = (sel, key, ev = 'change') => $(sel).addEventListener(ev, (e) => { S[key] = e.target.value; S.limit = PAGE; refresh(); });
  bind('#f-mode', 'mode'); bind('#f-group', 'group'); bind('#f-sub', 'sub'); bind('#f-cell', 'cell'); bind('#f-sort', 'sort');
  bind('#f-mmin', 'mmin', 'input'); bind('#f-mmax', 'mmax', 'input'); bind('#f-q', 'q', 'input');
  $('#run-select').addEventListener('change', (e) => { S.run = Number(e.target.value); S.limit = PAGE; renderRun(); });
  $('#f-reset').addEventListener('click', () => { Object.assign(S, { group: '', sub: '', cell: '', mmin: '', mmax: '', q: '', limit: PAGE }); syncFilters(); refresh(); });
  $('#more').addEventListener('click', () => { S.limit += PAGE; renderList(); });
  $('#list').addEventListener('click', (e) => {
    const chip = e.target.closest('.chip');
    if (!chip) return;
    S.pick[chip.closest('.item').dataset.id] = chip.dataset.cell;
    renderList();
  });
  const maps = $('#heatmaps'), tip = $('#tip');
  maps.addEventListener('mouseover', (e) => {
    const cell = e.target.closest('.cell');
    if (!cell) return;
    tip.textContent = tipText(cell);
    tip.hidden = false;
  });
  maps.addEventListener('mousemove', (e) => { tip.style.left = `${e.clientX + 14}px`; tip.style.top = `${e.clientY + 14}px`; });
  maps.addEventListener('mouseout', (e) => { if (e.target.closest('.cell')) tip.hidden = true; });
  window.addEventListener('scroll', () => { tip.hidden = true; }, { passive: true });
  maps.addEventListener('click', (e) => {
    const cell = e.target.closest('.cell');
    if (!cell) return;
    tip.hidden = true;
    const g = cell.dataset.group;
    Object.assign(S, { mode: 'lost', group: D.runs[S.run].matrices[g] && g !== 'overall' ? g : '', sub: '',
      cell: `${cell.dataset.i},${cell.dataset.j}`, limit: PAGE });
    syncFilters();
    refresh();
    $('#list-section').scrollIntoView({ behavior: 'instant', block: 'start' });
  });
}
function syncFilters() {
  for (const [sel, key] of [['#f-mode', 'mode'], ['#f-group', 'group'], ['#f-sub', 'sub'], ['#f-cell', 'cell'],
    ['#f-mmin', 'mmin'], ['#f-mmax', 'mmax'], ['#f-q', 'q'], ['#f-sort', 'sort']]) $(sel).value = S[key];
}
function refresh() { renderHeatmaps(); renderList(); }
function renderRun() { renderSummary(); renderStyleBias(); refresh(); }

function metaText() {
  const dirs = [...new Set(D.sources.map((f) => f.replace(/[^/\\]*$/, '')))];
  const files = dirs.length === 1 ? `${dirs[0]} (${D.sources.map((f) => f.slice(dirs[0].length)).join(', ')})` : D.sources.join(', ');
  return `${D.benchmark} · ${D.runs.length} run${D.runs.length > 1 ? 's' : ''} · data: ${files}`;
}

loadData().then((data) => {
  D = data;
  if (D.process) { processPage(); return; }  // a process benchmark's solutions and steps (process.js)
  DIMS = Object.fromEntries(D.prompts.map((p) => [p.id, [p.c.length, p.r.length]]));
  PAIRS = Object.fromEntries(D.prompts.filter((p) => p.x).map((p) => [p.id, p.x]));
  $('#meta').textContent = metaText();
  setupFilters();
  renderComparison();
  renderRun();
  document.body.dataset.ready = 'true';
}).catch((err) => { $('#meta').textContent = `This page could not read its data (${err}). It needs a current browser.`; });
