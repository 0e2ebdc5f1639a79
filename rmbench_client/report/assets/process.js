// The report page of a process benchmark (PRMBench, ProcessBench): the solutions some run misjudged, every step with
// its label and each run's score; the steps the selected run judged against their label are marked.
const P = { mode: 'wrong', group: '', q: '', limit: PAGE };
// PRMBench judges a step correct above the threshold; ProcessBench when it is not below it
const passes = (score, t) => (D.process === 'above' ? score > t : score >= t);
// true: run r's judgement of step i disagrees with its label; false: agrees; null: unlabelled or not scored
function stepWrong(r, p, i) {
  const run = D.runs[r], s = run.steps[p.id];
  if (!s || i >= s.length || i >= p.lb.length) return null;
  return passes(s[i], run.threshold) !== (p.lb[i] === 1);
}
const wrongSteps = (r, p) => p.st.map((_, i) => i).filter((i) => stepWrong(r, p, i));
// ProcessBench: scores that stop before any step is scored below the threshold decide nothing (a miss)
function undecided(r, p) {
  const run = D.runs[r], s = run.steps[p.id];
  return D.process === 'not below' && !!s && s.length < p.lb.length && s.every((v) => passes(v, run.threshold));
}
const missed = (r, p) => wrongSteps(r, p).length > 0 || undecided(r, p);
const disagree = (p) => new Set(D.runs.map((_, r) => wrongSteps(r, p).join())).size > 1;

function processMatches() {
  const q = P.q.toLowerCase();
  return D.prompts.filter((p) => (!P.group || p.g === P.group) && (!q || p.p.toLowerCase().includes(q)
    || p.st.some((t) => t.toLowerCase().includes(q))) && (P.mode === 'disagree' ? disagree(p) : missed(S.run, p)));
}

function stepHtml(p, i) {
  const label = i < p.lb.length ? (p.lb[i] === 1 ? 'correct' : 'erroneous') : 'unlabelled';
  const w = stepWrong(S.run, p, i), cls = w === null ? 'unjudged' : w ? 'wrong' : 'right';
  const scores = D.runs.map((run) => {
    const s = run.steps[p.id], v = s && i < s.length ? num(s[i]) : 'not scored';
    return D.runs.length > 1 ? `${esc(run.name)}: ${v}` : v;
  }).join(' · ');
  return `<li class="step ${cls}" data-step="${i}" data-label="${label}"><div class="step-head">${label} · score `
    + `${scores}${w ? ' · <b class="misjudged">misjudged</b>' : ''}</div><pre>${esc(p.st[i])}</pre></li>`;
}

function solutionHtml(p) {
  const wrong = wrongSteps(S.run, p).length, open = undecided(S.run, p);
  const what = `${wrong} step${wrong === 1 ? '' : 's'} misjudged${open ? '; scores stop undecided (a miss)' : ''}`;
  return `<article class="item solution" data-id="${esc(p.id)}"><header><b>${esc(p.id)}</b><span class="tag">`
    + `${esc(p.g)}</span><span class="margin">${what}</span></header>`
    + `<details class="prompt"${p.p.length < 600 ? ' open' : ''}><summary>question</summary><pre>${esc(p.p)}</pre></details>`
    + `${p.why ? `<details class="prompt"><summary>the benchmark's reason for the errors</summary><pre>${esc(p.why)}</pre></details>` : ''}`
    + `<ol class="steps">${p.st.map((_, i) => stepHtml(p, i)).join('')}</ol></article>`;
}

function renderSolutions() {
  const found = processMatches(), run = D.runs[S.run];
  const what = P.mode === 'disagree' ? 'on which the runs judge steps differently' : `${run.name} misjudged`;
  $('#s-count').textContent = `${found.length} solution${found.length === 1 ? '' : 's'} ${what}`;
  $('#s-list').innerHTML = found.slice(0, P.limit).map(solutionHtml).join('');
  $('#s-more').hidden = found.length <= P.limit;
  $('#s-more').textContent = `show more (${found.length - P.limit} left)`;
  $('#s-help').textContent = `A step is judged correct when its score is ${D.process === 'above' ? 'above'
    : 'not below'} the run's threshold (${run.threshold}); marked red where that disagrees with its label, green `
    + 'where it agrees. Unlabelled steps (after the earliest wrong one) and steps without a score are not judged.';
}

function processPage() {
  const groups = [...new Set(D.prompts.map((p) => p.g))];
  $('#meta').textContent = metaText();
  $('#list-section').hidden = true;
  $('#steps-section').hidden = false;
  $('#s-group-name').textContent = D.group_field;
  $('#s-group').innerHTML = options([['', 'all'], ...groups.map((g) => [g, g])]);
  $('#s-mode-label').hidden = D.runs.length < 2;
  $('#s-mode').innerHTML = options([['wrong', 'misjudged by the selected run'], ['disagree', 'runs disagree']]);
  $('#run-picker').hidden = D.runs.length < 2;
  $('#run-select').innerHTML = options(D.runs.map((r, k) => [k, r.name]));
  const bind = (sel, key, ev = 'change') => $(sel).addEventListener(ev, (e) => { P[key] = e.target.value; P.limit = PAGE; renderSolutions(); });
  bind('#s-mode', 'mode'); bind('#s-group', 'group'); bind('#s-q', 'q', 'input');
  $('#run-select').addEventListener('change', (e) => { S.run = Number(e.target.value); P.limit = PAGE; renderSummary(); renderSolutions(); });
  $('#s-more').addEventListener('click', () => { P.limit += PAGE; renderSolutions(); });
  renderComparison();
  renderSummary();
  renderSolutions();
  document.body.dataset.ready = 'true';
}
