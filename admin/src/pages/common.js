// Shared by the admin pages (embedded into each page's script where it says
// `// @include common.js`, at its end): value formatting that renders
// absent or null values as "-", DOM helpers that write text only, and the
// refresh loop, which fetches DATA_URL on load and one second after each
// answer and hands the JSON to the page's render(data).
// ---- formatting and DOM helpers
const isNum = v => typeof v === 'number' && Number.isFinite(v);
const str = v => (v === undefined || v === null || v === '') ? '-' : String(v);
const fmtInt = v => isNum(v) ? Math.round(v).toLocaleString('en-US') : '-';
const pad2 = n => String(n).padStart(2, '0');
const clock = d => `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
function setText(id, text) { document.getElementById(id).textContent = text; }
function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}
const objects = list => Array.isArray(list) ? list.filter(x => x && typeof x === 'object') : [];

// ---- refresh loop: on load, then one second after each answer (or failure).
let lastSuccess = null;
function showError(message) {
  const box = document.getElementById('error');
  box.textContent = `Could not load ${DATA_URL}: ${message}. Retrying every second` +
                    (lastSuccess ? `; the data below is from ${clock(lastSuccess)}.` : '.');
  box.hidden = false;
  document.getElementById('content').classList.add('stale');
}
function clearError() {
  document.getElementById('error').hidden = true;
  document.getElementById('content').classList.remove('stale');
}
async function refresh() {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 5000);
  try {
    const response = await fetch(DATA_URL, {cache: 'no-store', signal: abort.signal});
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const data = await response.json();
    render(data && typeof data === 'object' ? data : {});
    lastSuccess = new Date();
    setText('updated', clock(lastSuccess));
    clearError();
  } catch (e) {
    showError(e && e.name === 'AbortError' ? 'no answer within 5 s' : String(e && e.message || e));
  } finally {
    clearTimeout(timer);
    setTimeout(refresh, 1000);
  }
}
refresh();
