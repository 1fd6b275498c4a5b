import json

import numpy as np

from neardup.cli import main
from neardup.evaluate import default_sweep, evaluate_texts
from neardup.synthetic import planted_corpus


def test_evaluation_against_the_exact_join(tmp_path):
    corpus = planted_corpus(1500, dup_fraction=0.1, similarity=(0.3, 1.0), seed=4)
    ev = evaluate_texts(corpus.texts, shingle_kind="word", shingle_size=1, threshold=0.7,
                        sweep=True)
    m = ev.metrics
    # planted pairs with J >= 0.7 are in the truth; LSH finds nearly all of them
    assert m["true_pairs"] >= 40
    assert m["recall"] >= 0.95
    assert m["false_negatives"] == m["true_pairs"] - round(m["recall"] * m["true_pairs"])
    assert m["precision_after"] == 1.0 and 0 < m["precision_before"] <= 1.0
    # the empirical S-curve follows P(s): found pairs within 4 sigma of the predicted count
    found = sum(c["found_share"] * c["pairs"] for c in ev.curve)
    predicted = sum(c["predicted"] * c["pairs"] for c in ev.curve)
    spread = sum(c["predicted"] * (1 - c["predicted"]) * c["pairs"] for c in ev.curve)
    assert sum(c["pairs"] for c in ev.curve) > m["true_pairs"]  # bins reach below t
    assert abs(found - predicted) <= 4 * np.sqrt(spread) + 2
    # the sweep covers b x r = K; longer bands never find more pairs than shorter ones
    sweep = {(s["bands"], s["rows"]): s for s in ev.sweep}
    assert set(sweep) == set(default_sweep(128))
    assert sweep[(64, 2)]["recall"] >= sweep[(2, 64)]["recall"]


def test_default_sweep_is_the_course_projects_at_k_100():
    assert {(10, 10), (20, 5), (25, 4), (50, 2)} <= set(default_sweep(100))


def test_evaluate_cli_writes_json_and_plot(tmp_path, capsys, write_lines):
    corpus = planted_corpus(600, dup_fraction=0.1, similarity=(0.6, 1.0), seed=1)
    path = tmp_path / "docs.txt"
    write_lines(path, corpus.texts)
    code = main(["evaluate", str(path), "--shingle", "word", "--ngram", "1", "-t", "0.8",
                 "--json", str(tmp_path / "ev.json"), "--plot", str(tmp_path / "curve.png"),
                 "--quiet"])
    assert code == 0
    out = capsys.readouterr().out
    assert "recall" in out and "empirical S-curve" in out
    ev = json.loads((tmp_path / "ev.json").read_text())
    assert ev["threshold"] == 0.8 and np.isfinite(ev["metrics"]["recall"])
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
