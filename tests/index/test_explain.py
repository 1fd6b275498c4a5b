"""Which document each removed one matched: ``dedup --against IDX --explain FILE`` (issue 25).

Properties checked:
- every removed record appears exactly once in the explain table, and the kept ones never;
- each row's matched document stays (it is indexed, or a new document kept before the
  removed one) and its Jaccard to the removed one, recomputed by brute force, is the
  row's and ≥ t: the removed set and every match are those of a brute-force greedy
  pass over every pair ≥ t;
- a chain new b ~ new a ~ indexed x with J(b, x) < t keeps b (components removed it);
- ids come back unchanged, with the source of the match as its own column;
- the CLI writes the same table; without --against it explains the run's own clusters.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

import neardup
from neardup.cli import main
from neardup.index import Index
from neardup.index.query import SOURCE_INDEX, SOURCE_NEW
from neardup.sinks import read_table

from .test_index import WORDS, brute_force_removed, corpus


@pytest.mark.parametrize("seed", [21, 22])
def test_the_explain_table_is_brute_force_and_every_match_stays(tmp_path, seed):
    records = corpus(seed, similarity=(0.9, 1.0))  # far from t: LSH finds every pair
    order = np.random.default_rng(seed).permutation(len(records))
    old = [records[k] for k in sorted(order[:250])]
    new = [records[k] for k in sorted(order[250:])]
    Index.build(old, tmp_path / "idx", id="id", **WORDS)
    expected = brute_force_removed(old + new, len(old), 0.8)
    source = tmp_path / "new.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in new))

    result = neardup.dedup(source, tmp_path / "kept.jsonl", against=tmp_path / "idx",
                           id="id", explain=tmp_path / "removed.parquet")
    table = pq.read_table(tmp_path / "removed.parquet").to_pydict()
    assert list(table) == ["id", "matched_id", "matched_source", "jaccard"]
    rows = {r: (m, s, j) for r, m, s, j in zip(table["id"], table["matched_id"],
                                               table["matched_source"], table["jaccard"])}
    assert len(rows) == len(table["id"])  # each removed record once
    assert rows == expected
    assert {s for _, s, _ in rows.values()} == {SOURCE_INDEX, SOURCE_NEW}
    kept = {json.loads(line)["id"] for line in
            (tmp_path / "kept.jsonl").read_text().splitlines()}
    assert kept.isdisjoint(rows) and len(kept) + len(rows) == len(new)
    assert result.counts["removable"] == len(rows) == result.counts["explain"]["rows"]
    # a new match is a kept one, an indexed match an indexed id, all >= t
    assert all(m in kept for m, s, _ in rows.values() if s == SOURCE_NEW)
    assert all(m in {r["id"] for r in old} for m, s, _ in rows.values() if s == SOURCE_INDEX)
    assert min(j for _, _, j in rows.values()) >= 0.8


def chain():
    """Indexed x; new a with J(a, x) = 0.905; new b with J(b, a) = 0.905, J(b, x) = 0.818."""
    def words(lo):
        return " ".join(f"w{k}" for k in range(lo, lo + 100))

    return [{"id": "x", "text": words(0)}], [{"id": "a", "text": words(5)},
                                             {"id": "b", "text": words(10)}]


def test_a_chain_through_a_removed_document_keeps_its_far_end(tmp_path):
    old, new = chain()
    Index.build(old, tmp_path / "idx", id="id", threshold=0.85, **WORDS)
    result = neardup.find(new, against=tmp_path / "idx", id="id")
    pairs = {frozenset((a, b)) for a, b in zip(result.pairs_table().column("id_a").to_pylist(),
                                               result.pairs_table().column("id_b").to_pylist())}
    assert pairs == {frozenset("ax"), frozenset("ab")}  # one component {x, a, b}
    assert result.kept_new.tolist() == [False, True]  # b is not a near-duplicate of x
    explained = result.explain_table().to_pydict()
    assert explained == {"id": ["a"], "matched_id": ["x"], "matched_source": [SOURCE_INDEX],
                         "jaccard": [round(95 / 105, 6)]}
    assert neardup.dedup(new, against=tmp_path / "idx", id="id") == [new[1]]


def test_the_command_line_writes_the_same_table(tmp_path, capsys):
    records = corpus(23, n=300, similarity=(0.9, 1.0))
    old = records[:200]
    # ids unchanged, even one that reads as a prefixed indexed id
    new = [{**r, "id": f"index:{r['id']}"} if k % 2 else r for k, r in enumerate(records[200:])]
    Index.build(old, tmp_path / "idx", id="id", **WORDS)
    source = tmp_path / "new.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in new))
    assert main(["dedup", str(source), "--against", str(tmp_path / "idx"), "--id-field", "id",
                 "-o", str(tmp_path / "kept.jsonl"), "--explain",
                 str(tmp_path / "removed.csv"), "-q"]) == 0
    assert "written to " + str(tmp_path / "removed.csv") in capsys.readouterr().out
    written = read_table(tmp_path / "removed.csv").to_pydict()
    library = neardup.dedup(new, against=tmp_path / "idx", id="id", explain=tmp_path / "e.jsonl")
    assert len(library) == 100 - len(written["id"])
    again = read_table(tmp_path / "e.jsonl").to_pydict()
    assert [str(x) for x in again["id"]] == [str(x) for x in written["id"]]
    assert [str(x) for x in again["matched_id"]] == [str(x) for x in written["matched_id"]]
    assert again["jaccard"] == written["jaccard"]
    new_ids, old_ids = {r["id"] for r in new}, {r["id"] for r in old}
    assert set(written["id"]) <= new_ids
    assert any(i.startswith("index:") for i in written["id"])
    for matched, source_of in zip(written["matched_id"], written["matched_source"]):
        assert matched in (old_ids if source_of == SOURCE_INDEX else new_ids)

    # without an index: the run's own clusters, the same columns and the cluster
    assert main(["dedup", str(source), "--id-field", "id", "-o", str(tmp_path / "k2.jsonl"),
                 "--explain", str(tmp_path / "r.csv"), "-q"]) == 0
    capsys.readouterr()
    assert read_table(tmp_path / "r.csv").column_names == [
        "id", "matched_id", "matched_source", "jaccard", "cluster"]
    assert main(["dedup", str(source), "--against", str(tmp_path / "idx"), "-o",
                 str(tmp_path / "k3.jsonl"), "--explain", str(tmp_path / "r.txt")]) == 2
    assert "--explain" in capsys.readouterr().err and not (tmp_path / "k3.jsonl").exists()


@pytest.mark.parametrize("representative", ["longest", "shortest"])
def test_under_any_policy_what_is_kept_pairs_with_nothing_that_stays(tmp_path,
                                                                     representative):
    records = corpus(24, similarity=(0.9, 1.0))
    old, new = records[:250], records[250:]
    Index.build(old, tmp_path / "idx", id="id", **WORDS)
    result = neardup.find(new, against=tmp_path / "idx", id="id",
                          representative=representative)
    kept = set(np.flatnonzero(result.kept_new).tolist())
    explained = result.explain_table().to_pydict()
    position = {r["id"]: d for d, r in enumerate(new)}
    removed = [position[i] for i in explained["id"]]
    assert sorted(removed + list(kept)) == list(range(len(new)))  # each once
    d = result.pairs_table().to_pydict()
    jaccard = {frozenset((a, b)): j for a, b, j in zip(d["doc_a"], d["doc_b"], d["jaccard"])}

    def stays(doc):
        return doc >= len(new) or doc in kept

    # no two documents that stay pair (J >= t): nothing kept duplicates what stays
    assert not [p for p, j in jaccard.items() if j >= 0.8 and all(map(stays, p))]
    # every removed one pairs, at the Jaccard named, with the document named, which stays
    for doc, matched, j in zip(removed, explained["matched_id"], explained["jaccard"]):
        assert [x for x in range(result.n) if result.ids[x] == matched and stays(x)
                and jaccard.get(frozenset((doc, x))) == j >= 0.8]


def test_an_explain_csv_escapes_formula_cells_as_every_csv_output(tmp_path, capsys):
    """N10: ids such as ``=cmd|' /C calc'!A0`` came out raw in ``--explain FILE.csv``;
    every other CSV output gives such a cell a leading ' (docs/guide/outputs.md)."""
    text = " ".join(f"w{k}" for k in range(60))
    Index.build([{"id": "=cmd|' /C calc'!A0", "text": text}], tmp_path / "idx", id="id",
                **WORDS)
    source = tmp_path / "new.jsonl"
    source.write_text(json.dumps({"id": "@SUM(A1)", "text": text}) + "\n"
                      + json.dumps({"id": "+kept", "text": "something else entirely"}) + "\n")
    assert main(["dedup", str(source), "--against", str(tmp_path / "idx"), "--id-field", "id",
                 "-o", str(tmp_path / "kept.jsonl"), "--explain",
                 str(tmp_path / "removed.csv"), "-q"]) == 0
    lines = (tmp_path / "removed.csv").read_text().splitlines()
    assert lines[0] == '"id","matched_id","matched_source","jaccard"'
    assert lines[1:] == ['"\'@SUM(A1)","\'=cmd|\' /C calc\'!A0","index",1']
    # the copy keeps the record untouched; JSON Lines and Parquet explain files stay raw
    assert json.loads((tmp_path / "kept.jsonl").read_text())["id"] == "+kept"
    assert main(["dedup", str(source), "--against", str(tmp_path / "idx"), "--id-field", "id",
                 "-o", str(tmp_path / "kept2.jsonl"), "--explain",
                 str(tmp_path / "removed.jsonl"), "-q"]) == 0
    assert json.loads((tmp_path / "removed.jsonl").read_text())["matched_id"] == \
        "=cmd|' /C calc'!A0"
