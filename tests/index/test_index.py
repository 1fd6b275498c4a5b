"""The on-disk index: new data against old gives the batch answer, writes are atomic.

Properties checked:
- parity: for splits of planted corpora into OLD and NEW (several seeds, split sizes,
  families, one- and two-segment indexes, compacted or not), the pairs of
  ``find(NEW, against=index(OLD))`` are exactly the pairs of a batch ``find(OLD ∪ NEW)``
  involving a NEW document, with the same exact Jaccard and estimate, and the counts
  say how many there are;
- dedup against the index keeps exactly the new documents that a brute-force greedy pass
  over every pair ≥ t keeps: a new document goes only for an indexed one or a new one
  kept before it;
- an add killed at any write step leaves the previous version, readable and intact;
- a second writer is refused with the first one's pid; options that differ are
  refused by name; thresholds away from the tuned one are warned or refused by P(t);
- the files are deterministic, and compaction gives the files one build would.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import neardup
from neardup import synthetic
from neardup.cli import main
from neardup.index import Index
from neardup.index.query import SOURCE_INDEX, SOURCE_NEW
from neardup.index.store import CRASH_ENV, SEGMENT_FILES, IndexBusyError

WORDS = dict(shingle_kind="word", shingle_size=1)


def corpus(seed: int, n: int = 500, similarity=(0.6, 1.0)):
    c = synthetic.planted_corpus(n, doc_words=60, dup_fraction=0.3, similarity=similarity,
                                 vocabulary=5000, exact_copies=15, seed=seed)
    return [{"id": i, "text": t} for i, t in zip(c.ids, c.texts)]


def pair_rows(table) -> set:
    """{(frozenset of the two ids, jaccard, estimate)} of a pairs table."""
    d = table.to_pydict()
    return {(frozenset((a, b)), j, e)
            for a, b, j, e in zip(d["id_a"], d["id_b"], d["jaccard"], d["estimate"])}


def batch_pairs_with(records, new_ids: set, **options):
    batch = neardup.find(records, id="id", method="lsh", **WORDS, **options)
    assert batch.counts["buckets"]["buckets_over_limit"] == 0  # where parity is promised
    rows = {row for row in pair_rows(batch.pairs_table()) if row[0] & new_ids}
    return batch, rows


@pytest.mark.parametrize("seed, new_share, segments, options", [
    (0, 0.2, 1, {}),
    (1, 0.5, 2, {}),
    (2, 0.9, 1, {}),
    (3, 0.5, 2, {"family": "affine32", "bits": 8}),
    (4, 0.3, 1, {"threshold": 0.6, "num_perm": 64, "seed": 7}),
])
def test_against_an_index_finds_the_batch_pairs_that_involve_new_documents(
        tmp_path, seed, new_share, segments, options):
    records = corpus(seed)
    order = np.random.default_rng(seed).permutation(len(records))
    cut = int(len(records) * (1 - new_share))
    old = [records[k] for k in sorted(order[:cut])]
    new = [records[k] for k in sorted(order[cut:])]
    half = len(old) // 2 if segments == 2 else len(old)
    index = Index.build(old[:half], tmp_path / "idx", id="id", **WORDS, **options)
    if segments == 2:
        index.add(old[half:], id="id")
    assert len(index.segments) == segments and index.n == len(old)
    new_ids = {r["id"] for r in new}

    _, expected = batch_pairs_with(old + new, new_ids, **options)
    result = neardup.find(new, against=tmp_path / "idx", id="id")
    found = pair_rows(result.pairs_table())
    assert found == expected
    assert len(expected) > 20  # the corpus plants pairs across the split

    c = result.counts
    assert c["pairs"] == len(expected)
    assert c["identical_pairs"] == sum(1 for row in expected if row[1] == 1.0)
    with_index = sum(1 for ids, _, _ in expected if len(ids - new_ids) == 1)
    assert c["index"]["pairs_with_index"] == with_index
    table = result.pairs_table().to_pydict()
    # doc_a is always new; doc_b is indexed exactly when its source says so
    assert all(a < c["new_documents"] for a in table["doc_a"])
    assert set(table["source_a"]) == {SOURCE_NEW}
    assert [b >= c["new_documents"] for b in table["doc_b"]] == \
        [s == SOURCE_INDEX for s in table["source_b"]]

    if segments == 2:  # one merged segment answers the same
        index.compact()
        assert len(Index(tmp_path / "idx").segments) == 1
        again = neardup.find(new, against=tmp_path / "idx", id="id")
        assert pair_rows(again.pairs_table()) == expected


def brute_force_removed(records, new_start: int, threshold: float, pairs: dict | None = None
                        ) -> dict:
    """{removed new id: (matched id, matched source, jaccard)} from every pair's exact
    Jaccard: new documents in input order, each removed for the best (highest J, ties to
    an indexed one, then the earliest) indexed or earlier kept new document ≥ t."""
    sets = neardup.find_texts([r["text"] for r in records], keep_arrays=True,
                              method="exact", **WORDS).sets
    i, j, jaccard = synthetic.brute_force_pairs(sets, threshold)
    if pairs is not None:
        new = j >= new_start  # i < j: the pair involves a new document
        pairs.update(pairs=int(new.sum()), identical=int((jaccard[new] == 1.0).sum()),
                     with_old=int((new & (i < new_start)).sum()),
                     identical_with_old=int((new & (i < new_start) & (jaccard == 1.0)).sum()))
    neighbours: dict[int, list] = {}
    for a, b, s in zip(i.tolist(), j.tolist(), jaccard.tolist()):
        neighbours.setdefault(a, []).append((b, s))
        neighbours.setdefault(b, []).append((a, s))
    kept, removed = set(), {}
    for d in range(new_start, len(records)):
        best = None
        for other, s in neighbours.get(d, []):
            if other < new_start or other in kept:
                old = other < new_start
                # in the result, new documents are numbered before indexed ones
                key = (s, old, -(other - new_start if not old else other))
                if best is None or key > best[0]:
                    best = (key, other, s)
        if best is None:
            kept.add(d)
        else:
            other = best[1]
            removed[records[d]["id"]] = (records[other]["id"],
                                         SOURCE_INDEX if other < new_start else SOURCE_NEW,
                                         round(best[2], 6))
    return removed


def brute_force_kept(records, new_start: int, threshold: float, pairs: dict | None = None
                     ) -> set:
    """The new ids a dedup against the old ones keeps, from every pair's exact Jaccard
    (:func:`brute_force_removed`). ``pairs`` receives the counts of the pairs that
    involve a new document."""
    removed = brute_force_removed(records, new_start, threshold, pairs)
    return {r["id"] for r in records[new_start:]} - set(removed)


@pytest.mark.parametrize("seed", [5, 6])
def test_dedup_against_keeps_exactly_the_new_documents_without_duplicates(tmp_path, seed):
    # planted similarities far from t: LSH finds them all, so brute force is the truth
    records = corpus(seed, similarity=(0.9, 1.0))
    order = np.random.default_rng(seed).permutation(len(records))
    old = [records[k] for k in sorted(order[:300])]
    new = [records[k] for k in sorted(order[300:])]
    Index.build(old, tmp_path / "idx", id="id", **WORDS)
    truth: dict = {}
    expected = brute_force_kept(old + new, len(old), 0.8, truth)

    source = tmp_path / "new.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in new))
    result = neardup.dedup(source, tmp_path / "kept.jsonl", against=tmp_path / "idx",
                           id="id", add=True)
    kept = [json.loads(line)["id"] for line in
            (tmp_path / "kept.jsonl").read_text().splitlines()]
    assert set(kept) == expected and len(kept) == len(expected)
    assert 0 < len(expected) < len(new)
    assert result.counts["removable"] == len(new) - len(expected)
    # the counts printed are those of brute force
    assert result.counts["pairs"] == truth["pairs"] > 0
    assert result.counts["identical_pairs"] == truth["identical"]
    assert result.counts["index"]["pairs_with_index"] == truth["with_old"]
    c = result.counts
    assert c["index"]["identical_pairs_with_index"] == truth["identical_with_old"]
    # a new document's indexed copy is a pair of identical sets, not of distinct ones
    assert c["near_duplicate_pairs"] == truth["pairs"] - truth["identical"]
    assert 0 < c["set_pairs"] <= c["near_duplicate_pairs"]
    index = Index(tmp_path / "idx")
    assert index.n == len(old) + len(expected)  # the kept ones were added
    assert set(index.ids(np.arange(len(old), index.n)).to_pylist()) == expected
    # seen is seen: the same new data again keeps nothing
    frame = neardup.dedup(new, against=tmp_path / "idx", id="id")
    assert frame == []


@pytest.mark.parametrize("point", ["segment-half-written", "segment-written",
                                   "manifest-written"])
def test_an_add_killed_at_any_step_leaves_the_previous_version(tmp_path, point, run_cli):
    records = corpus(7, n=200)
    Index.build(records[:100], tmp_path / "idx", id="id", **WORDS)
    before = Index(tmp_path / "idx").info()
    more = tmp_path / "more.jsonl"
    more.write_text("".join(json.dumps(r) + "\n" for r in records[100:]))
    env = {**os.environ, CRASH_ENV: point}
    done = run_cli("index", "add", str(tmp_path / "idx"), str(more), "--id-field", "id", "-q",
                   env=env)
    assert done.returncode == -9, done.stderr
    index = Index(tmp_path / "idx")
    assert index.info(verify=True)["corrupt_files"] == []
    assert index.info()["version"] == before["version"] and index.n == 100
    assert neardup.find(records[100:], against=tmp_path / "idx", id="id").counts["pairs"] > 0
    # the next writer sweeps what the killed one left and adds as usual
    added = index.add(more, id_field="id")
    assert added["documents"] == 200 and added["version"] == before["version"] + 1
    listed = {s["name"] for s in Index(tmp_path / "idx").manifest["segments"]}
    assert {p.name for p in (tmp_path / "idx" / "segments").iterdir()} == listed
    assert not list((tmp_path / "idx").glob("manifest.json.tmp*"))


@pytest.mark.slow  # many killed processes: 5-9 s
def test_an_add_killed_at_random_times_leaves_one_version_or_the_next(tmp_path):
    records = corpus(14, n=400)
    Index.build(records[:100], tmp_path / "idx", id="id", **WORDS)
    more = tmp_path / "more.jsonl"
    more.write_text("".join(json.dumps(r) + "\n" for r in records[100:]))
    rng = np.random.default_rng(14)
    versions = set()
    for delay in rng.uniform(0.5, 4.0, size=4):
        add = subprocess.Popen([sys.executable, "-m", "neardup", "index", "add",
                                str(tmp_path / "idx"), str(more), "--id-field", "id", "-q"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            add.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            add.kill()  # SIGKILL
            add.wait()
        index = Index(tmp_path / "idx")
        info = index.info(verify=True)
        assert info["corrupt_files"] == []
        # each version is a whole add: 100 documents, then 300 more per finished add
        assert index.n == 100 + 300 * (info["version"] - 1)
        versions.add(info["version"])
    assert index.add(more, id_field="id")["version"] == max(versions) + 1


def test_a_compaction_killed_before_its_manifest_keeps_the_segments(tmp_path, run_cli):
    records = corpus(13, n=200)
    index = Index.build(records[:100], tmp_path / "idx", id="id", **WORDS)
    index.add(records[100:], id="id")
    env = {**os.environ, CRASH_ENV: "manifest-written"}
    done = run_cli("index", "compact", str(tmp_path / "idx"), env=env)
    assert done.returncode == -9, done.stderr
    again = Index(tmp_path / "idx")
    assert len(again.segments) == 2 and again.n == 200
    assert again.info(verify=True)["corrupt_files"] == []
    assert again.compact()["segments"] == 1 and Index(tmp_path / "idx").n == 200


def test_a_second_writer_is_refused_with_the_first_ones_pid(tmp_path, capsys):
    records = corpus(8, n=200)
    Index.build(records[:100], tmp_path / "idx", id="id", **WORDS)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from neardup.index.store import WriteLock; "
         "lock = WriteLock(sys.argv[1]).__enter__(); print('locked', flush=True); "
         "sys.stdin.read()", str(tmp_path / "idx")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        message = f"index {tmp_path / 'idx'} is being written by another process " \
                  f"(pid {holder.pid})"
        with pytest.raises(IndexBusyError, match=message.replace("(", r"\(")
                           .replace(")", r"\)")):
            Index(tmp_path / "idx").add(records[100:], id="id")
        with pytest.raises(IndexBusyError, match="being written by another process"):
            Index(tmp_path / "idx").compact()
        source = tmp_path / "more.jsonl"
        source.write_text("".join(json.dumps(r) + "\n" for r in records[100:]))
        assert main(["index", "add", str(tmp_path / "idx"), str(source), "--id-field", "id",
                     "-q"]) == 1
        assert message in capsys.readouterr().err
    finally:
        holder.stdin.close()
        holder.wait()
    assert Index(tmp_path / "idx").add(records[100:], id="id")["documents"] == 200


def test_options_that_differ_from_the_index_are_refused_by_name(tmp_path, capsys):
    records = corpus(9, n=200)
    Index.build(records[:100], tmp_path / "idx", id="id", **WORDS)
    with pytest.raises(ValueError) as caught:
        neardup.find(records[100:], against=tmp_path / "idx", id="id", num_perm=64,
                     shingle_kind="char", family="oph")
    message = str(caught.value)
    for part in ("num_perm (index 128, query 64)", "shingle_kind (index 'word', query "
                 "'char')", "family (index 'superminhash', query 'oph')"):
        assert part in message
    with pytest.raises(ValueError, match="stem"):
        Index(tmp_path / "idx").add(records[100:], id="id", stem=True)
    source = tmp_path / "new.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records[100:]))
    assert main(["find", str(source), "--against", str(tmp_path / "idx"), "--id-field", "id",
                 "-k", "3", "-q"]) == 2
    assert "shingle_size (index 1, query 3)" in capsys.readouterr().err
    # an option left out takes the index's value, whatever find's default
    assert main(["find", str(source), "--against", str(tmp_path / "idx"), "--id-field", "id",
                 "-q", "--top", "0"]) == 0


def test_a_threshold_away_from_the_tuned_one_says_its_recall(tmp_path):
    records = corpus(10, n=200)
    index = Index.build(records[:100], tmp_path / "idx", id="id", **WORDS)  # t = 0.8
    p = float(neardup.s_curve(0.7, index.bands, index.rows))
    with pytest.warns(UserWarning, match=f"P\\(t\\) = 1 - .* = {p:.3f}"):
        result = neardup.find(records[100:], against=tmp_path / "idx", id="id",
                              threshold=0.7)
    assert result.config.threshold == 0.7 and result.jaccard.min() >= 0.7
    low = float(neardup.s_curve(0.4, index.bands, index.rows))
    assert low < 0.5
    with pytest.raises(ValueError, match=f"{low:.3f}, below 0.5: refused"):
        neardup.find(records[100:], against=tmp_path / "idx", id="id", threshold=0.4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        neardup.find(records[100:], against=tmp_path / "idx", id="id", threshold=0.4,
                     force=True)
    assert any("P(t)" in str(w.message) for w in caught)


def segment_bytes(path: Path) -> list[bytes]:
    [entry] = Index(path).manifest["segments"]
    return [(path / "segments" / entry["name"] / f).read_bytes() for f in SEGMENT_FILES]


def test_files_are_deterministic_and_compaction_gives_what_one_build_gives(tmp_path,
                                                                           monkeypatch):
    records = corpus(11, n=300)
    Index.build(records, tmp_path / "a", id="id", **WORDS)
    Index.build(records, tmp_path / "b", id="id", **WORDS)
    assert (tmp_path / "a" / "manifest.json").read_bytes() == \
        (tmp_path / "b" / "manifest.json").read_bytes()
    assert segment_bytes(tmp_path / "a") == segment_bytes(tmp_path / "b")
    monkeypatch.setattr(neardup.index.chunks, "CHUNK_DOCUMENTS", 70)  # 5 chunks, merged
    chunked = Index.build(records, tmp_path / "chunked", id="id", **WORDS)
    assert len(chunked.segments) == 1 and chunked.manifest["next_segment"] == 2
    assert segment_bytes(tmp_path / "chunked") == segment_bytes(tmp_path / "a")
    assert (tmp_path / "chunked" / "manifest.json").read_bytes() == \
        (tmp_path / "a" / "manifest.json").read_bytes()
    monkeypatch.undo()
    parts = Index.build(records[:100], tmp_path / "c", id="id", **WORDS)
    parts.add(records[100:200], id="id")
    parts.add(records[200:], id="id")
    assert len(parts.segments) == 3
    parts.compact()
    assert segment_bytes(tmp_path / "c") == segment_bytes(tmp_path / "a")
    assert sorted(p.name for p in (tmp_path / "c" / "segments").iterdir()) == ["seg-000004"]


def test_command_line_round_trip(tmp_path, capsys):
    records = corpus(12, n=400, similarity=(0.9, 1.0))
    files = {}
    for name, part in (("old", records[:200]), ("more", records[200:300]),
                       ("new", records[300:])):
        files[name] = tmp_path / f"{name}.jsonl"
        files[name].write_text("".join(json.dumps(r) + "\n" for r in part))
    idx = str(tmp_path / "idx")
    common = ["--id-field", "id", "-q"]
    assert main(["index", "build", str(files["old"]), "-o", idx, "--shingle", "word",
                 "-k", "1", *common]) == 0
    assert main(["index", "add", idx, str(files["more"]), *common]) == 0
    capsys.readouterr()
    assert main(["index", "info", idx, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["documents"] == 300 and len(info["segments"]) == 2
    assert info["bytes_per_document"] == round(info["bytes"] / 300, 1)
    assert main(["index", "info", idx]) == 0
    assert "per document" in capsys.readouterr().out

    assert main(["find", str(files["new"]), "--against", idx, "--out",
                 str(tmp_path / "pairs"), *common]) == 0
    printed = capsys.readouterr().out
    summary = json.loads((tmp_path / "pairs" / "summary.json").read_text())
    lines = (tmp_path / "pairs" / "pairs.csv").read_text().splitlines()
    assert len(lines) - 1 == summary["counts"]["pairs"] > 0
    assert f"pairs {summary['counts']['pairs']:,} document pairs" in printed
    assert f"against index {idx} (300 documents)" in printed
    rows = list(csv.DictReader(lines))
    assert {(r["source_a"], r["source_b"]) for r in rows} == {(SOURCE_NEW, SOURCE_INDEX),
                                                              (SOURCE_NEW, SOURCE_NEW)}
    assert all((int(r["doc_b"]) >= summary["counts"]["new_documents"])
               == (r["source_b"] == SOURCE_INDEX) for r in rows)

    expected = brute_force_kept(records, 300, 0.8)
    assert main(["dedup", str(files["new"]), "--against", idx, "--add", "-o",
                 str(tmp_path / "kept.jsonl"), *common]) == 0
    kept = {json.loads(line)["id"] for line in
            (tmp_path / "kept.jsonl").read_text().splitlines()}
    assert kept == expected
    assert Index(idx).n == 300 + len(expected)
    assert main(["index", "compact", idx]) == 0
    assert len(Index(idx).segments) == 1
    assert main(["index", "info", idx, "--verify"]) == 0
    assert "all files intact" in capsys.readouterr().out
    # an index path that is not one, and building over an existing index, are refused
    assert main(["find", str(files["new"]), "--against", str(tmp_path), *common]) == 2
    assert main(["index", "build", str(files["old"]), "-o", idx, *common]) == 2


def test_the_compact_pair_form_is_refused_against_an_index(tmp_path):
    records = corpus(8)
    Index.build(records[:200], tmp_path / "idx", id="id", **WORDS)
    with pytest.raises(ValueError, match="pairs='all'"):
        neardup.find(records[200:], against=tmp_path / "idx", id="id", pairs="groups")


def test_provenance_is_a_column_and_ids_stay_as_given(tmp_path):
    # issue 22 (D24): indexed ids were prefixed "index:", so a new id "index:7" and the
    # indexed "7" read the same in a pair
    records = corpus(15, n=300, similarity=(0.9, 1.0))
    old = records[:200]
    Index.build(old, tmp_path / "idx", id="id", **WORDS)
    new = [{"id": f"index:{r['id']}", "text": r["text"]} for r in old[:40]] + \
        [{"id": r["id"], "text": r["text"]} for r in old[40:80]]  # the same ids as indexed
    result = neardup.find(new, against=tmp_path / "idx", id="id")
    d = result.pairs_table().to_pydict()
    old_ids, new_ids = {r["id"] for r in old}, {r["id"] for r in new}
    with_index = [k for k, s in enumerate(d["source_b"]) if s == SOURCE_INDEX]
    assert len(with_index) >= 80  # each new document pairs with its indexed copy
    assert {d["id_b"][k] for k in with_index} <= old_ids
    assert {d["id_a"][k] for k in with_index} <= new_ids
    # each new copy pairs with the indexed document it was copied from, named as indexed
    copied = {(r["id"], o["id"]) for r, o in zip(new, old[:80])}
    assert copied <= {(d["id_a"][k], d["id_b"][k]) for k in with_index}
    documents = result.documents_table().to_pydict()
    assert documents["source"] == [SOURCE_NEW] * 80 + [SOURCE_INDEX] * (result.n - 80)
    # the written table is streamed in batches: each batch carries the column too
    batches = list(result.iter_documents_tables(7))
    assert pa.concat_tables(batches).to_pydict() == documents
    clusters = result.clusters_table().to_pydict()
    assert all((doc >= 80) == (s == SOURCE_INDEX)
               for doc, s in zip(clusters["doc"], clusters["source"]))
