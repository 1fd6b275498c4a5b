"""Removing documents from an index and merging indexes (issue 25).

Properties checked:
- batch parity: ``find(NEW, against=OLD - removed)`` gives exactly the pairs (ids, exact
  Jaccard, estimate) and counts of ``find(NEW, against=index(OLD minus those documents))``;
  the counts say how many documents are live and removed, ids not in the index are
  counted and named, removing twice changes nothing, and ``compact`` writes the files
  one build of the live documents writes;
- a merge of indexes equals one build over their inputs in order: same ids in order,
  same pairs, and after compaction the same files; removed documents stay removed;
  indexes whose options differ are refused with the option named;
- ``index remove`` and ``index merge`` killed (SIGKILL) at each write step leave the
  previous version: the index (or the inputs) intact and readable, no merged index.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import neardup
from neardup.cli import main
from neardup.index import Index
from neardup.index.store import STOP_ENV

from .test_index import WORDS, corpus, pair_rows


def split(seed: int, n: int = 500):
    records = corpus(seed, n=n, similarity=(0.75, 1.0))
    order = np.random.default_rng(seed).permutation(len(records))
    old = [records[k] for k in sorted(order[:n * 3 // 5])]
    new = [records[k] for k in sorted(order[n * 3 // 5:])]
    return old, new


def pairs_against(new, idx):
    result = neardup.find(new, against=idx, id="id")
    return result, pair_rows(result.pairs_table())


def segment_hashes(idx) -> list:
    return [[f["sha256"] for f in s["files"]] for s in Index(idx).manifest["segments"]]


def test_removed_documents_answer_as_an_index_built_without_them(tmp_path):
    old, new = split(41)
    index = Index.build(old[:150], tmp_path / "idx", id="id", **WORDS)
    index.add(old[150:], id="id")
    # remove indexed documents that pair with new ones, and others
    before, paired = pairs_against(new, tmp_path / "idx")
    old_ids = {r["id"] for r in old}
    partners = sorted({i for ids, _, _ in paired for i in ids} & old_ids)
    gone = set(partners[::2]) | {r["id"] for r in old[::7]}
    done = index.remove([*sorted(gone), "no-such-id", "nor-this-one", partners[0]])
    assert (done["ids"], done["removed"], done["already_removed"]) == (len(gone) + 2,
                                                                       len(gone), 0)
    assert done["not_found"] == 2 and done["not_found_examples"] == ["no-such-id",
                                                                     "nor-this-one"]
    assert (index.n, index.removed, index.stored) == (len(old) - len(gone), len(gone),
                                                      len(old))
    assert index.ids(index.live_documents()).to_pylist() == [r["id"] for r in old
                                                              if r["id"] not in gone]
    info = Index(tmp_path / "idx").info(verify=True)
    assert (info["documents"], info["removed"], info["corrupt_files"]) == (
        len(old) - len(gone), len(gone), [])

    live = [r for r in old if r["id"] not in gone]
    Index.build(live, tmp_path / "fresh", id="id", **WORDS)
    result, found = pairs_against(new, tmp_path / "idx")
    expected_result, expected = pairs_against(new, tmp_path / "fresh")
    assert found == expected and found != paired and len(expected) > 20
    for key in ("pairs", "identical_pairs", "removable"):
        assert result.counts[key] == expected_result.counts[key]
    assert result.counts["index"]["documents"] == len(live)
    assert result.kept_new.tolist() == expected_result.kept_new.tolist()

    again = Index(tmp_path / "idx").remove(sorted(gone))  # idempotent
    assert (again["removed"], again["already_removed"], again["version"]) == (
        0, len(gone), done["version"])
    index = Index(tmp_path / "idx")
    index.add(new[:10], id="id")  # numbers of the removed stay true after an add
    assert index.n == len(live) + 10 and index.removed == len(gone)
    Index.build(live, tmp_path / "fresh-and-added", id="id", **WORDS).add(new[:10], id="id")
    assert pairs_against(new[10:], tmp_path / "idx")[1] == \
        pairs_against(new[10:], tmp_path / "fresh-and-added")[1]

    compacted = index.compact()
    assert compacted["dropped"] == len(gone) and compacted["segments"] == 1
    index = Index(tmp_path / "idx")
    assert (index.n, index.removed, index.stored) == (len(live) + 10, 0, len(live) + 10)
    assert not list((tmp_path / "idx" / "tombstones").iterdir())
    fresh = Index(tmp_path / "fresh-and-added")
    fresh.compact()
    assert segment_hashes(tmp_path / "idx") == segment_hashes(tmp_path / "fresh-and-added")


def test_the_command_line_reads_ids_and_names_those_not_found(tmp_path, capsys):
    old, _ = split(42, n=200)
    idx = str(tmp_path / "idx")
    Index.build(old, idx, id="id", **WORDS)
    ids = tmp_path / "takedowns.txt"
    ids.write_text(f"{old[0]['id']}\n\n{old[1]['id']}\nghost-1\nghost-2\n")
    assert main(["index", "remove", idx, "--ids", str(ids)]) == 0
    out = capsys.readouterr().out
    assert "removed 2 documents for 4 ids (0 already removed); 2 ids not in the index: " \
           '"ghost-1", "ghost-2"' in out
    assert main(["index", "info", idx]) == 0
    assert f"documents {len(old) - 2:,} in 1 segment(s), 2 removed" in capsys.readouterr().out
    done = subprocess.run([sys.executable, "-m", "neardup", "index", "remove", idx, "--ids",
                           "-"], input=f"{old[0]['id']}\n", capture_output=True, text=True)
    assert done.returncode == 0 and "removed 0 documents for 1 ids (1 already removed)" \
        in done.stdout
    assert Index(idx).info()["format_version"] == 2  # an older reader refuses tombstones


def test_ids_as_json_lines_remove_any_id_and_messages_quote_them(tmp_path, capsys):
    # a newline in an id could not be given (--ids reads lines), and ids not found were
    # printed bare: " d2" read as d2
    records = [{"id": "a\nb", "text": "one two three four five six seven"},
               {"id": "d2", "text": "eight nine ten eleven twelve thirteen fourteen"},
               {"id": "plain", "text": "fifteen sixteen seventeen eighteen nineteen x"}]
    idx = str(tmp_path / "idx")
    Index.build(records, idx, id="id", **WORDS)
    ids = tmp_path / "ids.jsonl"
    ids.write_text('"a\\nb"\n\n" d2"\n"plain"\n')
    assert main(["index", "remove", idx, "--ids", str(ids), "-q"]) == 0
    assert 'removed 2 documents for 3 ids (0 already removed); 1 ids not in the index: ' \
           '" d2";' in capsys.readouterr().out
    assert Index(idx).n == 1
    # the format by flag (standard input, or any name), and JSON that is not a string
    done = subprocess.run([sys.executable, "-m", "neardup", "index", "remove", idx, "--ids",
                           "-", "--ids-format", "jsonl", "-q"], input='"d2"\n',
                          capture_output=True, text=True)
    assert done.returncode == 0 and "removed 1 documents for 1 ids" in done.stdout
    ids.write_text('"x"\n42\n')
    assert main(["index", "remove", idx, "--ids", str(ids)]) == 2
    assert "line 2: 42 is a JSON int, not a string" in capsys.readouterr().err
    lines = tmp_path / "ids.txt"
    lines.write_text('"quoted"\n')
    assert main(["index", "remove", idx, "--ids", str(lines)]) == 0
    assert 'ids not in the index: "\\"quoted\\""' in capsys.readouterr().out


def test_merge_and_remove_take_quiet(tmp_path, capsys):
    old, _ = split(45, n=200)
    Index.build(old[:60], tmp_path / "a", id="id", **WORDS)
    Index.build(old[60:], tmp_path / "b", id="id", **WORDS)
    assert main(["index", "merge", str(tmp_path / "a"), str(tmp_path / "b"), "-o",
                 str(tmp_path / "c"), "-q"]) == 0
    ids = tmp_path / "ids.txt"
    ids.write_text(old[0]["id"] + "\n")
    assert main(["index", "remove", str(tmp_path / "c"), "--ids", str(ids), "--quiet"]) == 0
    assert Index(tmp_path / "c").n == len(old) - 1
    assert "removed 1 documents" in capsys.readouterr().out


def test_a_merge_equals_one_build_over_its_inputs_in_order(tmp_path, capsys):
    old, new = split(43)
    a, b = old[:120], old[120:]
    Index.build(a[:60], tmp_path / "a", id="id", **WORDS).add(a[60:], id="id")
    Index.build(b, tmp_path / "b", id="id", **WORDS)
    gone = [b[3]["id"], b[40]["id"], a[5]["id"]]
    Index(tmp_path / "b").remove(gone[:2])
    Index(tmp_path / "a").remove(gone[2:])
    assert main(["index", "merge", str(tmp_path / "a"), str(tmp_path / "b"), "-o",
                 str(tmp_path / "c")]) == 0
    assert "merged 2 indexes" in capsys.readouterr().out
    merged = Index(tmp_path / "c")
    assert (merged.n, merged.removed, len(merged.segments)) == (len(old) - 3, 3, 3)
    assert merged.ids(np.arange(merged.stored)).to_pylist() == [r["id"] for r in old]
    assert merged.info(verify=True)["corrupt_files"] == []

    live = [r for r in old if r["id"] not in gone]
    Index.build(live, tmp_path / "one", id="id", **WORDS)
    _, expected = pairs_against(new, tmp_path / "one")
    assert pairs_against(new, tmp_path / "c")[1] == expected and len(expected) > 20
    merged.compact()
    assert segment_hashes(tmp_path / "c") == segment_hashes(tmp_path / "one")

    with pytest.raises(ValueError, match="lists an index twice"):
        Index.merge([tmp_path / "a", tmp_path / "b", tmp_path / "a"], tmp_path / "d")
    Index.build(b, tmp_path / "b64", id="id", num_perm=64, **WORDS)
    with pytest.raises(ValueError, match=r"different options.*num_perm \(.*128, .*64\)"):
        Index.merge([tmp_path / "a", tmp_path / "b64"], tmp_path / "d")
    assert not (tmp_path / "d").exists()
    Index.build(b, tmp_path / "b9", id="id", threshold=0.9, **WORDS)
    assert main(["index", "merge", str(tmp_path / "a"), str(tmp_path / "b9"), "-o",
                 str(tmp_path / "d")]) == 2
    assert "threshold" in capsys.readouterr().err


def stopped_then_killed(args: list[str], point: str, **options) -> None:
    """Run ``neardup ARGS``, stopped at the write step ``point`` and killed there."""
    process = subprocess.Popen([sys.executable, "-m", "neardup", *args],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env={**os.environ, STOP_ENV: point}, **options)
    try:
        _, status = os.waitpid(process.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status), f"the writer never reached {point}"
        process.kill()  # SIGKILL, as a crash
        os.kill(process.pid, signal.SIGCONT)
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize("point", ["tombstones-half-written", "tombstones-written",
                                   "manifest-written"])
def test_a_removal_killed_at_any_step_leaves_the_previous_version(tmp_path, point):
    old, new = split(44, n=300)
    idx = tmp_path / "idx"
    Index.build(old, idx, id="id", **WORDS).remove([old[0]["id"]])
    before = Index(idx).info()
    _, pairs = pairs_against(new, idx)
    ids = tmp_path / "ids.txt"
    ids.write_text("".join(r["id"] + "\n" for r in old[1:40]))
    stopped_then_killed(["index", "remove", str(idx), "--ids", str(ids)], point)
    after = Index(idx).info(verify=True)
    assert after["corrupt_files"] == []
    assert (after["version"], after["documents"], after["removed"]) == (
        before["version"], before["documents"], 1)
    assert pairs_against(new, idx)[1] == pairs
    done = Index(idx).remove([r["id"] for r in old[1:40]])
    assert done["removed"] == 39 and done["version"] == before["version"] + 1
    assert sorted(p.name for p in (idx / "tombstones").iterdir()) == \
        [Index(idx).manifest["tombstones"]["name"]]  # the killed writer's file swept


@pytest.mark.parametrize("point", ["segment-half-written", "segment-written",
                                   "manifest-written"])
def test_a_merge_killed_at_any_step_leaves_no_merged_index(tmp_path, point):
    old, _ = split(45, n=200)
    Index.build(old[:100], tmp_path / "a", id="id", **WORDS)
    Index.build(old[100:], tmp_path / "b", id="id", **WORDS)
    before = [Index(tmp_path / p).info() for p in "ab"]
    stopped_then_killed(["index", "merge", str(tmp_path / "a"), str(tmp_path / "b"), "-o",
                         str(tmp_path / "c")], point)
    assert not (tmp_path / "c").exists()
    for p, info in zip("ab", before):
        again = Index(tmp_path / p).info(verify=True)
        assert again["corrupt_files"] == [] and again["version"] == info["version"]
    merged = Index.merge([tmp_path / "a", tmp_path / "b"], tmp_path / "c")
    assert merged.n == len(old)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "c"]  # stage swept
