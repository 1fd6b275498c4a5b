"""The report page: the summary, clusters and side-by-side pair views around the
plots, kept under ``max_bytes`` (:func:`render`)."""

from __future__ import annotations

import difflib
import json

import numpy as np

from .data import ReportData, text_lookup
from .svg import chord_svg, esc, histogram_svg, s_curve_svg, shorten

MAX_BYTES = 4_000_000
MIN_BYTES = 50_000
MAX_CHORDS = 5_000
MAX_DIFFS = 12
MAX_MEMBERS = 50  # members listed per cluster

POLICY_REASONS = {
    "first": "the earliest document in input order",
    "longest": "the longest text (characters), ties to the earliest",
    "shortest": "the shortest text (characters), ties to the earliest",
    "field": "the smallest value of the representative field, ties to the earliest",
}


def summary_html(data: ReportData, drawn: dict) -> str:
    s, cfg = data.summary, data.config
    counts = s.get("counts") or {}
    plan = s.get("plan") or {}
    read = s.get("read") or {}
    bands, rows = data.bands_rows
    rows_html = []

    def row(name, value):
        rows_html.append(f"<tr><th>{esc(name)}</th><td>{esc(value)}</td></tr>")

    inputs = read.get("inputs") or []
    if inputs:
        row("inputs", ", ".join(f"{i.get('path')} ({i.get('format')})" for i in inputs))
    row("result", data.origin)
    if read:
        skipped = sum((read.get("skipped") or {}).values())
        failed = sum((read.get("failed") or {}).values())
        row("records", f"{read.get('records_seen', 0):,} seen, {read.get('processed', 0):,} "
                       f"documents, {skipped:,} skipped, {failed:,} failed")
    languages = counts.get("languages") or {}
    kind = (f"code-token ({', '.join(sorted(languages))})" if languages
            else cfg.get("shingle_kind", "?"))
    row("shingling", f"{kind} {cfg.get('shingle_size', '?')}-grams, "
                     f"{cfg.get('hash_bits', '?')}-bit hashes, documents with fewer than "
                     f"{cfg.get('min_shingles', '?')} shingles set aside")
    row("MinHash", f"K = {cfg.get('num_perm', '?')} minima, seed {cfg.get('seed', '?')}"
                   + (f", {cfg['bits']}-bit" if cfg.get("bits") else ""))
    row("LSH", f"b × r = {bands} × {rows} ({plan.get('chosen', '?')}), steep point "
               f"{data.steep_point:.3f}, P(t) = "
               f"{float(data.s_curve(data.threshold)):.3f}")
    row("threshold", f"exact {data.measure} ≥ {data.threshold:g}"
                     + ("" if cfg.get("verify", True) else " (not verified: every candidate)"))
    row("documents", f"{counts.get('documents', data.n):,}: {counts.get('shingled', 0):,} "
                     f"shingled, {counts.get('too_few_shingles', 0):,} set aside, "
                     f"{counts.get('distinct_sets', 0):,} distinct sets")
    row("candidates", f"{counts.get('candidates', drawn['candidates']):,} candidate pairs, "
                      f"{int(data.candidates['verified'].sum()):,} of them at or above t")
    if "identical_pairs" in counts:
        row("pairs", f"{counts['pairs']:,} document pairs: {counts['identical_pairs']:,} "
                     f"inside identical groups (J = 1), {counts['near_duplicate_pairs']:,} "
                     f"between different sets (from {counts['set_pairs']:,} pairs of "
                     f"distinct sets)")
    else:  # a result folder written before document pairs were listed
        row("pairs", f"{counts.get('pairs', data.pairs['doc_a'].size):,}")
    row("clusters", f"{counts.get('clusters', 0):,} holding "
                    f"{counts.get('documents_in_clusters', 0):,} documents; removable "
                    f"{counts.get('removable', 0):,}")
    buckets = counts.get("buckets") or {}
    if buckets.get("buckets_over_limit"):
        row("large buckets", f"{buckets['buckets_over_limit']:,} over "
                             f"{cfg.get('max_bucket')} documents (largest "
                             f"{buckets.get('largest_bucket'):,}), policy "
                             f"{cfg.get('bucket_policy')}: {buckets.get('pairs_avoided', 0):,} "
                             "pairs not generated")
    out = [f'<table class="summary">{"".join(rows_html)}</table>']
    if data.timings:
        total = sum(float(v) for v in data.timings.values()) or 1.0
        bars = "".join(
            f'<tr><th>{esc(k)}</th><td class="num">{float(v):.2f} s</td><td><div class="tbar" '
            f'style="width:{300 * float(v) / total:.0f}px"></div></td></tr>'
            for k, v in data.timings.items())
        out.append(f'<h3>Time per stage</h3><table class="timings">{bars}</table>')
    return "".join(out)


def cluster_entries(data: ReportData, policy: str):
    """(label, members) per cluster of two or more, largest first, members in input order."""
    if data.n == 0:
        return []
    names, inverse, sizes = np.unique(data.cluster, return_inverse=True, return_counts=True)
    first = np.full(names.size, data.n, dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(data.n))
    multi = np.flatnonzero(sizes > 1)
    multi = multi[np.lexsort((first[multi], -sizes[multi]))]
    order = np.argsort(inverse, kind="stable")
    starts = np.r_[0, np.cumsum(np.bincount(inverse, minlength=names.size))]
    return [(str(names[g]), order[starts[g]:starts[g + 1]]) for g in multi]


def cluster_html(data: ReportData, label: str, members: np.ndarray, pair_j: dict) -> str:
    rep = members[data.representative[members]]
    kept = int(rep[0]) if rep.size else int(members[0])
    others = [int(m) for m in members if m != kept]
    items = [f'<li class="kept"><span class="id">{esc(data.ids[kept])}</span> '
             f'<span class="meta">kept · {int(data.shingles[kept]):,} shingles</span></li>']
    for m in others[:MAX_MEMBERS]:
        a, b = int(data.head[kept]), int(data.head[m])  # a pair of documents is their sets'
        j = 1.0 if a == b else pair_j.get((min(a, b), max(a, b)))
        similarity = f"J = {j:.3f} with the kept one" if j is not None else "linked through others"
        items.append(f'<li><span class="id">{esc(data.ids[m])}</span> <span class="meta">'
                     f'{int(data.shingles[m]):,} shingles · {similarity}</span></li>')
    if len(others) > MAX_MEMBERS:
        items.append(f'<li class="more">… and {len(others) - MAX_MEMBERS:,} more members</li>')
    return (f'<details class="cluster"><summary><b>{members.size:,}</b> documents · keep '
            f'<span class="id">{esc(shorten(data.ids[kept], 120))}</span></summary>'
            f'<ul>{"".join(items)}</ul></details>')


def pick_diff_pairs(data: ReportData, most: int) -> np.ndarray:
    """Row indices into ``pairs``: spread evenly over the similarities found, lowest first."""
    p = data.pairs
    if p["doc_a"].size == 0 or most <= 0:
        return np.empty(0, dtype=np.int64)
    near = np.flatnonzero(p["jaccard"] < 1.0)
    pool = near if near.size else np.arange(p["doc_a"].size)
    pool = pool[np.lexsort((pool, p["jaccard"][pool]))]
    if pool.size <= most:
        return pool
    picks = np.unique(np.rint(np.linspace(0, pool.size - 1, most)).astype(np.int64))
    return pool[picks]


def first_shared_line(lines_a: list[str], lines_b: list[str], blocks) -> tuple[int, int] | None:
    """1-based line numbers of the first shared line that is not blank."""
    for blk in blocks:
        for k in range(blk.size):
            if lines_a[blk.a + k].strip():
                return blk.a + k + 1, blk.b + k + 1
    return None


def diff_html(id_a: str, id_b: str, text_a: str, text_b: str, jaccard: float,
              max_lines: int = 2000, context: int = 3, max_block: int = 40) -> str:
    """Two columns; shared lines highlighted, long shared runs folded."""
    lines_a, lines_b = text_a.splitlines()[:max_lines], text_b.splitlines()[:max_lines]
    matcher = difflib.SequenceMatcher(None, lines_a, lines_b, autojunk=False)
    rows = []

    def cell(no, line, cls):
        if no is None:
            return '<td class="no"></td><td class="empty"></td>'
        return f'<td class="no">{no}</td><td class="{cls}">{esc(shorten(line, 240))}</td>'

    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            span = a1 - a0
            show = (list(range(span)) if span <= 2 * context + 1
                    else list(range(context)) + [None] + list(range(span - context, span)))
            for k in show:
                if k is None:
                    rows.append(f'<tr class="fold"><td colspan="4">⋯ {span - 2 * context:,} '
                                f'shared lines ⋯</td></tr>')
                else:
                    rows.append("<tr>" + cell(a0 + k + 1, lines_a[a0 + k], "same")
                                + cell(b0 + k + 1, lines_b[b0 + k], "same") + "</tr>")
        else:
            height = max(a1 - a0, b1 - b0)
            for k in range(min(height, max_block)):
                ia, ib = a0 + k, b0 + k
                rows.append("<tr>"
                            + cell(ia + 1 if ia < a1 else None, lines_a[ia] if ia < a1 else "",
                                   "only")
                            + cell(ib + 1 if ib < b1 else None, lines_b[ib] if ib < b1 else "",
                                   "only") + "</tr>")
            if height > max_block:
                rows.append(f'<tr class="fold"><td colspan="4">⋯ {height - max_block:,} more '
                            f'differing lines ⋯</td></tr>')
    first = first_shared_line(lines_a, lines_b, matcher.get_matching_blocks())
    where = (f'<div class="where">first shared line: <code>{esc(id_a)}:{first[0]}</code> ↔ '
             f'<code>{esc(id_b)}:{first[1]}</code></div>' if first else
             '<div class="where">no line in common (similar shingles across lines)</div>')
    cut = ""
    if len(text_a.splitlines()) > max_lines or len(text_b.splitlines()) > max_lines:
        cut = f'<div class="note">only the first {max_lines:,} lines of each are compared</div>'
    return (f'<details class="pair" open><summary>J = {jaccard:.3f} · '
            f'<span class="id">{esc(shorten(id_a, 100))}</span> ↔ '
            f'<span class="id">{esc(shorten(id_b, 100))}</span></summary>{where}{cut}'
            f'<table class="diff"><colgroup><col class="no"><col><col class="no"><col>'
            f'</colgroup>{"".join(rows)}</table></details>')


def _json_for_script(obj) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' survive (so no '</script>')."""
    return (json.dumps(obj, ensure_ascii=False).replace("<", "\\u003c")
            .replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;
background:#f6f7f9}main{max-width:1320px;margin:0 auto;padding:20px 28px}
h1{font-size:22px;margin:4px 0 12px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid
#dde1e8;padding-bottom:4px}h3{font-size:15px;margin:16px 0 6px}
.note{background:#fff6e0;border-left:4px solid #e0a31e;padding:6px 10px;margin:8px 0}
table.summary th,table.timings th{text-align:left;padding:2px 14px 2px 0;font-weight:600;
vertical-align:top;white-space:nowrap}table.summary td{padding:2px 0}
td.num{text-align:right;padding-right:8px;font-variant-numeric:tabular-nums}
.tbar{height:10px;background:#1f4e9c;border-radius:2px}
.plots{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}.plots figure{margin:0}
figcaption{font-size:12px;color:#555;max-width:640px}svg{display:block;max-width:100%;
height:auto}.chords path[data-k]{cursor:pointer}.chords path.sel{stroke:#ff4d6d;
stroke-width:3;stroke-opacity:1}#chord-info{min-height:1.4em;font-size:13px;margin-top:6px}
.id{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px;word-break:break-all}
.meta{color:#667;font-size:12px}details.cluster{background:#fff;border:1px solid #dde1e8;
border-radius:4px;margin:4px 0;padding:4px 8px}details ul{margin:4px 0 4px 8px;padding-left:14px}
li.kept .id{font-weight:700}details.pair{background:#fff;border:1px solid #dde1e8;
border-radius:4px;margin:10px 0;padding:6px 8px}.where{font-size:12.5px;margin:4px 0}
table.diff{border-collapse:collapse;width:100%;table-layout:fixed;
font:12px/1.35 ui-monospace,Menlo,Consolas,monospace}table.diff col.no{width:44px}
table.diff td{padding:0 6px;white-space:pre-wrap;word-break:break-all;vertical-align:top}
td.no{color:#99a;text-align:right;user-select:none}td.same{background:#dff3e4}
td.only{background:#fff}td.empty{background:#f3f4f6}tr.fold td{color:#778;text-align:center;
background:#f3f4f6}
"""

SCRIPT = """
(function(){
  var data = JSON.parse(document.getElementById('chord-data').textContent);
  var svg = document.getElementById('chords');
  var info = document.getElementById('chord-info');
  var selected = null;
  svg.addEventListener('click', function(ev){
    var el = ev.target.closest('path[data-k]');
    if (!el) return;
    if (selected) selected.classList.remove('sel');
    selected = el; el.classList.add('sel');
    var c = data.chords[Number(el.getAttribute('data-k'))];
    info.textContent = data.ids[c[0]] + '  \\u2194  ' + data.ids[c[1]] + '   J = ' + c[2];
  });
})();
"""


def repeats_html(repeats: list[dict]) -> str:
    """The "most repeated lines" section: one row per repeated line, most repeated
    first (rows as :func:`neardup.repeats` gives them)."""
    rows = "".join(
        f"<tr><td>{int(r['count']):,}</td><td>{int(r['documents']):,}</td>"
        f"<td><code>{esc(str(r['first_id']))}</code> @ {int(r['first_offset']):,}</td>"
        f"<td>{esc(str(r['text']))}</td></tr>" for r in repeats)
    return ("<h2>Most repeated lines</h2><p>Lines that occur more than once, compared after "
            "the run's normalization (<code>neardup repeats --unit line</code>; "
            "<code>neardup dedup --unit line</code> removes them): occurrences, documents "
            "holding them, the first occurrence (document, character).</p>"
            + ("<table><tr><th>count</th><th>documents</th><th>first</th><th>line</th></tr>"
               + rows + "</table>" if repeats else "<p>No line repeats.</p>"))


def render(data: ReportData, *, texts=None, root=None, max_bytes: int = MAX_BYTES,
           max_chords: int = MAX_CHORDS, max_diffs: int = MAX_DIFFS,
           seed: int = 0, repeats: list[dict] | None = None) -> tuple[str, dict]:
    """The page as a string, and what it drew, sampled and cut; ``repeats``: the most
    repeated lines (a section of their own when given)."""
    if not isinstance(max_bytes, int) or max_bytes < MIN_BYTES:
        raise ValueError(f"max_bytes must be an integer >= {MIN_BYTES}, got {max_bytes!r}")
    if not isinstance(max_chords, int) or max_chords < 0:
        raise ValueError(f"max_chords must be a non-negative integer, got {max_chords!r}")
    notes: list[str] = []
    limit = max_chords
    while True:  # the plots must leave room for the lists: fewer chords until they do
        chords, drawn = chord_svg(data, limit, seed)
        curve, curve_drawn = s_curve_svg(data, limit, seed)
        fixed = len(chords.encode()) + len(curve.encode()) + len(
            _json_for_script(drawn["payload"]).encode())
        if fixed <= 0.6 * max_bytes or limit == 0:
            break
        limit //= 2
    if drawn["sampled"]:
        notes.append(f"{drawn['candidates']:,} candidate pairs: the chord circle and the "
                     f"S-curve show a seeded sample of {drawn['chords']:,} (seed {seed}).")
    if not drawn["points"]:
        notes.append(f"{data.n:,} documents: too many to draw one by one; the ring stands "
                     "for them.")
    head = _page_head(data)
    policy = str(data.config.get("representative", "first"))
    plots = (
        '<h2>Candidates and the S-curve</h2><div class="plots"><figure>' + curve
        + f'<figcaption>The probability that a pair of similarity s becomes a candidate, '
          f'for {data.bands_rows[0]} bands of {data.bands_rows[1]} rows. Each dot on y = 1 is '
          f'a candidate pair at its exact {data.measure}'
        + (f"; the {curve_drawn['missed']:,} dots on y = 0 are true pairs LSH missed."
           if data.missed is not None else
           "; true pairs that were never candidates are not known for this run "
           "(no evaluation table).")
        + '</figcaption></figure><figure>' + histogram_svg(data)
        + '<figcaption>Exact similarity of every candidate pair. Identical copies are grouped '
          'before LSH and are not candidates.</figcaption></figure></div>'
        + '<h2>Chord circle</h2><figure>' + chords
        + '<figcaption>Every document is a point on the circle, in id (path) order from the '
          'top, clockwise; a chord joins each candidate pair, coloured by its exact '
        + data.measure + '. '
          'Short chords at the edge are families in one directory, long ones copies across '
          'the tree. Click a chord to name its pair.</figcaption>'
          '<div id="chord-info" aria-live="polite"></div></figure>'
        + f'<script type="application/json" id="chord-data">'
          f'{_json_for_script(drawn["payload"])}</script>')
    tail = f"<script>{SCRIPT}</script></main></body></html>"
    budget = max_bytes - len(head.encode()) - len(plots.encode()) - len(tail.encode()) - 4000
    summary = summary_html(data, drawn)
    budget -= len(summary.encode())
    repeated = repeats_html(repeats) if repeats is not None else ""
    budget -= len(repeated.encode())

    clusters = cluster_entries(data, policy)
    shown_members = (np.concatenate([m for _, m in clusters[:2000]]) if clusters
                     else np.empty(0, np.int64))
    touch = np.isin(data.pairs["doc_a"], data.head[shown_members])
    pair_j = {(int(a), int(b)): float(j) for a, b, j in zip(
        data.pairs["doc_a"][touch], data.pairs["doc_b"][touch], data.pairs["jaccard"][touch])}
    cluster_parts, used = [], 0
    cluster_budget = (budget // 2 if texts is not None or root is not None or data.input_roots
                      else budget)
    for label, members in clusters:
        piece = cluster_html(data, label, members, pair_j)
        if used + len(piece.encode()) > cluster_budget:
            break
        cluster_parts.append(piece)
        used += len(piece.encode())
    if len(cluster_parts) < len(clusters):
        notes.append(f"showing the {len(cluster_parts):,} largest of {len(clusters):,} "
                     f"clusters (page limit {max_bytes:,} bytes).")
    budget -= used
    cluster_section = (
        f'<h2>Clusters, largest first ({len(clusters):,})</h2><p>The kept document '
        f'(representative) is {esc(POLICY_REASONS.get(policy, policy))} '
        f'(policy <code>{esc(policy)}</code>). Click a cluster to list its members.</p>'
        + ("".join(cluster_parts) or "<p>No clusters.</p>"))

    lookup, text_origin = text_lookup(data, texts, root)
    diff_parts, diff_rows = [], pick_diff_pairs(data, max_diffs) if lookup else []
    unreadable = 0
    for row in diff_rows:
        a, b = int(data.pairs["doc_a"][row]), int(data.pairs["doc_b"][row])
        ta, tb = lookup(a), lookup(b)
        if ta is None or tb is None:
            unreadable += 1
            continue
        piece = diff_html(data.ids[a], data.ids[b], ta, tb, float(data.pairs["jaccard"][row]))
        if len(piece.encode()) > budget:
            notes.append(f"showing {len(diff_parts)} of {len(diff_rows)} pair views "
                         f"(page limit {max_bytes:,} bytes).")
            break
        budget -= len(piece.encode())
        diff_parts.append(piece)
    if unreadable:
        notes.append(f"{unreadable} pair views left out: a text could not be read.")
    diff_section = ('<h2>Pairs side by side</h2><p>' + esc(text_origin)
                    + ". Pairs spread over the similarities found, lowest first; shared lines "
                      "are green.</p>" + "".join(diff_parts))
    note_html = "".join(f'<div class="note">{esc(n)}</div>' for n in notes)
    page = (head + note_html + "<h2>Summary</h2>" + summary + plots + cluster_section
            + repeated + diff_section + tail)
    size = len(page.encode())
    if size > max_bytes:  # only when the fixed parts alone do not fit
        raise ValueError(f"the report needs {size:,} bytes even after cutting; raise max_bytes")
    return page, {"bytes": size, "documents": data.n, "chords": drawn["chords"],
                  "candidates": drawn["candidates"], "sampled": drawn["sampled"],
                  "dots": curve_drawn["dots"], "missed": curve_drawn["missed"],
                  "clusters_shown": len(cluster_parts), "clusters": len(clusters),
                  "pair_views": len(diff_parts),
                  **({"repeated_lines": len(repeats)} if repeats is not None else {}),
                  "notes": notes}


def _page_head(data: ReportData) -> str:
    bands, rows = data.bands_rows
    title = f"neardup report: {data.n:,} documents, t = {data.threshold:g}, {bands} × {rows}"
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body><main>"
            f"<h1>{esc(title)}</h1>")
