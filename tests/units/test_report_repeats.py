"""The report's "most repeated lines": neardup.repeats' rows, escaped, most first."""

from __future__ import annotations

import json

import neardup


def test_find_report_lists_the_most_repeated_lines(tmp_path):
    src = tmp_path / "pages.jsonl"
    body = ["alpha beta gamma delta epsilon zeta", "eta theta iota kappa lambda mu",
            "nu xi omicron pi rho sigma", "tau upsilon phi chi psi omega"]
    with open(src, "w", encoding="utf-8") as f:
        for k, text in enumerate(body):
            header = "<b>Home</b> & News" if k < 3 else "Unique header"
            f.write(json.dumps({"text": f"{header}\n{text}\n© the footer"}) + "\n")
    page = tmp_path / "r.html"
    result = neardup.find(src, report=page, threshold=0.9)
    html = page.read_text(encoding="utf-8")
    want = neardup.repeats(src, unit="line").to_pylist()
    assert [r["count"] for r in want] == [4, 3]
    assert result.counts["report"]["repeated_lines"] == len(want)
    assert "<h2>Most repeated lines</h2>" in html
    assert "&lt;b&gt;Home&lt;/b&gt; &amp; News" in html and "<b>Home</b>" not in html
    assert html.index("© the footer") < html.index("&lt;b&gt;Home")  # 4 copies before 3
