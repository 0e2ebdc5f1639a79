// rmbench-client leaderboard page: the table drawn from the embedded data (gzip + base64 JSON), sorted in the browser.
let B = null;                                 // the data
const SORT = { col: -1, desc: false };        // -1: by model name; else a benchmark's index
const collator = new Intl.Collator('en', { sensitivity: 'base' });
const byName = (a, b) => collator.compare(a.model, b.model) || (a.model < b.model ? -1 : a.model > b.model ? 1 : 0);
const shown = (v) => (v === null || v === undefined ? null : Math.round(1000 * v));  // the digit the page shows

function cellOf(row, i) { return row.cells[B.benchmarks[i].name] || null; }

function sortedRows() {
  const rows = [...B.rows];
  if (SORT.col < 0) return rows.sort((a, b) => (SORT.desc ? -1 : 1) * byName(a, b));
  const value = (row) => { const c = cellOf(row, SORT.col); return c ? c.value : null; };
  return rows.sort((a, b) => {
    const x = value(a), y = value(b);
    if (x === null || y === null) return (x === null) - (y === null) || byName(a, b);  // empty cells last
    return (SORT.desc ? y - x : x - y) || byName(a, b);
  });
}

// each row's rank in the column sorted by: rows equal to the digit shown share it ("2="); none for an empty cell
function ranks(rows) {
  if (SORT.col < 0) return rows.map(() => '');
  const values = rows.map((r) => { const c = cellOf(r, SORT.col); return c ? shown(c.value) : null; });
  return values.map((v) => {
    if (v === null) return '';
    const better = values.filter((w) => w !== null && (SORT.desc ? w > v : w < v)).length;
    const tied = values.filter((w) => w === v).length > 1;
    return `${better + 1}${tied ? '=' : ''}`;
  });
}

function cellTitle(bench, c) {
  const when = c.dated_by === 'file' ? `${c.written} (its file's time: a run from before stamps)` : c.written;
  const lines = [`${bench.title}: ${c.name} ${pct(c.value)}`, `run: ${c.run_dir}`,
    `rmbench-client ${c.version || '(version not recorded)'}, written ${when}`];
  if (c.others) lines.push(`${c.others} other run(s) of this model on this benchmark: the latest complete one is shown`);
  if (c.tie) lines.push('another complete run was written in the same second: the first by path is shown');
  return lines.join('\n');
}

function cellHtml(bench, c) {
  if (!c) return `<td class="empty" title="no complete run of ${esc(bench.title)}"></td>`;
  const ci = c.low !== null && c.high !== null ? `<span class="ci">[${pct(c.low)}, ${pct(c.high)}]</span>` : '';
  const text = c.href ? `<a href="${esc(c.href)}">${pct(c.value)}</a>` : pct(c.value);
  return `<td data-value="${esc(c.value)}" title="${esc(cellTitle(bench, c))}">${text}${ci}</td>`;
}

function renderBoard() {
  const arrow = (i) => (SORT.col === i ? (SORT.desc ? ' ▼' : ' ▲') : '');
  const heads = B.benchmarks.map((b, i) => `<th data-col="${i}" class="sortable" title="${esc(b.name)}: `
    + `${esc(b.headline)}">${esc(b.title)}<span class="headline">${esc(b.headline)}</span>${arrow(i)}</th>`);
  $('#board thead').innerHTML = `<tr><th class="rank">#</th><th data-col="-1" class="sortable">model${arrow(-1)}</th>`
    + `${heads.join('')}</tr>`;
  const rows = sortedRows(), rank = ranks(rows);
  $('#board tbody').innerHTML = rows.map((row, k) => `<tr data-model="${esc(row.model)}"><td class="rank">`
    + `${rank[k]}</td><td class="model">${esc(row.model)}</td>`
    + `${B.benchmarks.map((b, i) => cellHtml(b, cellOf(row, i))).join('')}</tr>`).join('');
  for (const th of document.querySelectorAll('#board th.sortable')) {
    th.addEventListener('click', () => {
      const col = Number(th.dataset.col);
      SORT.desc = SORT.col === col ? !SORT.desc : col >= 0;  // a number first from the best, a name from A
      SORT.col = col;
      renderBoard();
    });
  }
}

function renderLists() {
  const runs = B.rows.flatMap((row) => B.benchmarks.filter((b) => row.cells[b.name]).map((b) => {
    const c = row.cells[b.name];
    const others = c.others ? `; ${c.others} other run(s) not shown` : '';
    return `<li>${esc(row.model)} on ${esc(b.title)}: <code>${esc(c.run_dir)}</code> (rmbench-client `
      + `${esc(c.version || 'version not recorded')}, ${esc(c.written)}${c.dated_by === 'file' ? ', by its file\'s time' : ''}`
      + `${others})</li>`;
  }));
  $('#runs').innerHTML = runs.length ? `<ul>${runs.join('')}</ul>` : '<p>No complete run.</p>';
  $('#left').innerHTML = `<ul>${B.left_out.map((x) => `<li><code>${esc(x.path)}</code>`
    + `${x.model ? ` (${esc(x.model)} on ${esc(x.benchmark)})` : ''}: ${esc(x.kind)}: ${esc(x.why)}</li>`).join('')}</ul>`;
  $('#left-section').hidden = !B.left_out.length;
  $('#notes').innerHTML = B.notes.map((n) => `<p class="note">${esc(n)}</p>`).join('');
  $('#notes-section').hidden = !B.notes.length;
}

loadData().then((data) => {
  B = data;
  $('#meta').textContent = `${B.rows.length} model${B.rows.length === 1 ? '' : 's'} · ${B.benchmarks.length} `
    + `benchmark${B.benchmarks.length === 1 ? '' : 's'} · ${B.left_out.length} run(s) left out`;
  renderBoard();
  renderLists();
  $('#made').innerHTML = stampHtml(B.stamp).replace('Made by', 'Page made by');
  document.body.dataset.ready = 'true';
}).catch((err) => { $('#meta').textContent = `This page could not read its data (${err}). It needs a current browser.`; });
