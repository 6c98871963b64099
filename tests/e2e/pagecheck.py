"""What a user would see wrong on a page, checked inside headless Chromium.

`PageChecker.check(page, name)` returns one line per problem, for the caller to collect over
every page of a walk and assert once (one report names every broken page, not the first):

- horizontal overflow: the document is wider than the viewport (1280 px in the walks), or a
  table scrolls sideways inside its box (columns out of sight);
- default-styled components: a visible <table> whose cells keep the browser's 1 px padding or
  whose cells sit 2 px apart (separate borders), a form control in the browser's 13.33 px font,
  an element carrying a class no stylesheet rule names (a component whose CSS is missing on
  this page, like the orphan block's `witness-meta` outside findings.css). Classes that are
  only hooks for scripts and tests are listed in HOOK_CLASSES;
- accessibility: axe-core (npm, installed into .cache/axe by scripts/lib.sh `ensure_axe`),
  violations of impact serious or critical;
- console errors and uncaught page errors (collected by `Watched` in test_browser.py).

A full-page screenshot of every checked page is kept under tests/artifacts/pages/ (gitignored;
CI keeps tests/artifacts/ as its artifacts).
"""

from __future__ import annotations

from pathlib import Path

from tests.support.paths import ARTIFACTS, ROOT

AXE_VERSION = "4.14.1"  # keep in step with scripts/lib.sh
AXE_JS = ROOT / ".cache" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
SHOTS = ARTIFACTS / "pages"

# Classes that select elements for scripts and tests, styled (or not) through their parents.
HOOK_CLASSES = frozenset(
    {
        "writer-row",
        "writer-name",
        "change-summary",
        "peer",
        "user",
        "result",
        "seg",
        "dot",
        "spacer",
    }
)

# Runs in the page; returns [kind, text] pairs. Hidden elements (display: none, or inside a
# closed <details>) are skipped: they show nothing, styled or not.
_STRUCTURE_JS = """
(hooks) => {
  const problems = [];
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth) {
    const wide = [...document.querySelectorAll('body *')].filter(e => {
      const r = e.getBoundingClientRect();
      return r.right > root.clientWidth + 1 && getComputedStyle(e).position !== 'fixed';
    }).slice(0, 3).map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
      (e.className && typeof e.className === 'string' ? '.' + e.className.trim().split(/\\s+/).join('.') : ''));
    problems.push(['overflow', `document ${root.scrollWidth} px wide in a ${root.clientWidth} px viewport: ${wide.join(', ')}`]);
  }
  const shown = e => e.getClientRects().length > 0;
  // A table that scrolls sideways inside its box at this width hides columns: overflow too.
  for (const box of document.querySelectorAll('.table-wrap')) {
    if (shown(box) && box.scrollWidth > box.clientWidth + 1) {
      const t = box.querySelector('table');
      problems.push(['overflow', `${t ? (t.id ? 'table#' + t.id : 'table.' + t.className.split(' ').join('.')) : 'a table'} scrolls sideways: ${box.scrollWidth} px in ${box.clientWidth} px`]);
    }
  }
  const label = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
    (e.getAttribute('class') ? '.' + e.getAttribute('class').trim().split(/\\s+/).join('.') : '');
  for (const t of document.querySelectorAll('table')) {
    if (!shown(t)) continue;
    const cell = t.querySelector('td, th');
    if (!cell) continue;
    const cs = getComputedStyle(cell), ts = getComputedStyle(t);
    if (cs.paddingLeft === '1px' && cs.paddingTop === '1px') {
      problems.push(['unstyled', `${label(t)}: cells keep the browser's 1 px padding`]);
    } else if (ts.borderCollapse === 'separate' && ts.borderSpacing === '2px') {
      problems.push(['unstyled', `${label(t)}: the browser's 2 px cell spacing`]);
    }
  }
  const controls = 'button, select, textarea, input:not([type=hidden]):not([type=checkbox]):not([type=radio])';
  for (const c of document.querySelectorAll(controls)) {
    if (shown(c) && getComputedStyle(c).fontSize === '13.3333px') {
      problems.push(['unstyled', `${label(c)}: the browser's default control font`]);
    }
  }
  const known = new Set();
  const collect = rules => {
    for (const r of rules) {
      if (r.selectorText) for (const m of r.selectorText.matchAll(/\\.([A-Za-z0-9_-]+)/g)) known.add(m[1]);
      if (r.cssRules) collect(r.cssRules);
    }
  };
  for (const sheet of document.styleSheets) {
    try { collect(sheet.cssRules); } catch (e) { /* another origin's sheet */ }
  }
  const missing = new Map();
  for (const e of document.querySelectorAll('body [class]')) {
    if (!shown(e) || e.closest('svg, canvas, [_echarts_instance_]')) continue;
    for (const c of e.classList) {
      if (!known.has(c) && !hooks.includes(c) && !missing.has(c)) missing.set(c, label(e));
    }
  }
  for (const [c, where] of missing) problems.push(['unstyled', `class "${c}" has no rule (${where})`]);
  return problems;
}
"""

_AXE_RUN_JS = """
async () => {
  const result = await axe.run(document, { resultTypes: ['violations'] });
  return result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => `${v.impact} ${v.id}: ${v.help} (${v.nodes.length}×: ` +
      v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | ') + ')');
}
"""


class PageChecker:
    """Checks pages and keeps a screenshot of each under tests/artifacts/pages/<prefix>-<name>."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.axe_source = AXE_JS.read_text()
        SHOTS.mkdir(parents=True, exist_ok=True)

    def check(self, page, name: str) -> list[str]:
        problems = [f"{name}: {kind}: {text}" for kind, text in self._structure(page)]
        problems += [f"{name}: axe {line}" for line in self._axe(page)]
        page.screenshot(path=str(self.shot_path(name)), full_page=True)
        return problems

    def shot_path(self, name: str) -> Path:
        return SHOTS / f"{self.prefix}-{name}.png"

    def _structure(self, page) -> list[list[str]]:
        return page.evaluate(_STRUCTURE_JS, sorted(HOOK_CLASSES))

    def _axe(self, page) -> list[str]:
        # The page's Content-Security-Policy forbids inline scripts, so an injected <script>
        # tag (add_script_tag) is refused; evaluated through the DevTools protocol, the same
        # source runs in the page's own world without weakening the policy under test.
        if not page.evaluate("() => typeof window.axe === 'object'"):
            page.evaluate(self.axe_source)
        return page.evaluate(_AXE_RUN_JS)
