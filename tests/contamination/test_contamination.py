"""neardup contamination: every rule against a brute-force check on a planted corpus, the
clean copies (no item left by the same rule, nothing else changed), the flagged eval
files, the memory limit, determinism and bad evaluation files."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

import neardup
from neardup.cli import main
from neardup.pipeline import contamination_run

from .planted import brute_force, train_texts, write_planted


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> dict:
    return write_planted(tmp_path_factory.mktemp("planted"))


def _items(planted, fields=("question", "answer")) -> dict[str, list[str]]:
    rows = [json.loads(line) for line in planted["qa"].read_text().splitlines()]
    return {r["id"]: [r[f] for f in fields] for r in rows}


def _short_items(planted) -> dict[str, list[str]]:
    with open(planted["short"], newline="") as f:
        return {r["id"]: [r["text"]] for r in csv.DictReader(f)}


def _run(planted, **options):
    keywords = {"fields": "question,answer", "eval_id": "id", "id": "id", **options}
    return neardup.contamination([str(planted["train"])], {"qa": str(planted["qa"])},
                                 **keywords)


def _found(result, benchmark="qa") -> dict[tuple[str, str], float]:
    return {(r["item_id"], r["training_id"]): r["overlap"]
            for r in result.matches.to_pylist() if r["benchmark"] == benchmark}


def _rounded(found: dict) -> dict:
    return {k: round(v, 6) for k, v in found.items()}


@pytest.mark.parametrize("rule, c, ngram, require", [
    ("ngram", 0.8, 13, False), ("ngram", 0.8, 13, True), ("containment", 0.8, 13, False),
    ("containment", 0.5, 8, True), ("containment", 1.0, 5, False), ("ngram", 0.8, 30, False),
])
def test_every_rule_finds_what_brute_force_finds(planted, rule, c, ngram, require):
    """Items pasted whole, edited, split across lines, cased differently, shorter than n
    (n = 30: every question is) and only as an answer: the same (item, document) pairs
    and overlaps as sets of word tuples give."""
    result = _run(planted, rule=rule, containment=c, ngram=ngram,
                  require="question,answer" if require else None)
    want = brute_force(train_texts(planted["train"]), _items(planted), ngram, rule, c,
                       require)
    assert _found(result) == _rounded(want)
    assert want  # the planted corpus holds matches under every rule tested
    report = result.report["qa"]
    assert report["contaminated_items"] == len({item for item, _ in want})
    assert report["training_documents"] == len({doc for _, doc in want})
    assert report["items"] == 40
    assert report["share"] == round(report["contaminated_items"] / 40, 6)
    assert report["rule"] == rule and report["ngram"] == ngram


@pytest.mark.parametrize("cleaning", [{"clean": "text"}, {"stopwords": True},
                                      {"clean": "web", "digits": False}])
def test_the_run_cleaning_applies_to_both_sides(planted, cleaning):
    """A cleaning preset or step (the preset as clean_preset=: clean= is the copy):
    brute force over the same cleaned words."""
    from neardup.text.prepare import PrepareOptions

    keywords = {("clean_preset" if k == "clean" else k): v for k, v in cleaning.items()}
    result = _run(planted, ngram=8, **keywords)
    want = brute_force(train_texts(planted["train"]), _items(planted), 8, "ngram", 0.8,
                       False, PrepareOptions(**cleaning).normalize)
    assert _found(result) == _rounded(want)
    assert want


def test_the_planted_cases_are_told_apart(planted):
    """By the default rule: a whole, split, cased or answer-only paste is found; with
    --require question,answer an answer-only paste is not."""
    any_field = {item for item, _ in _found(_run(planted))}
    both = {item for item, _ in _found(_run(planted, require="question,answer"))}
    kinds = {kind: {f"q{i}" for i in range(kind, 40, 6)} for kind in range(6)}
    for kind in (0, 2, 3, 4):
        assert kinds[kind] <= any_field
    assert kinds[0] <= both
    assert not kinds[4] & both  # only the answer was pasted


def test_short_items_are_one_gram_of_all_their_words(planted):
    """A benchmark of one text field (CSV), every item shorter than n: brute force."""
    result = neardup.contamination([str(planted["train"])], [f"short={planted['short']}"],
                                   eval_id="id", id="id")
    want = brute_force(train_texts(planted["train"]), _short_items(planted), 13, "ngram",
                       0.8, False)
    assert _found(result, "short") == _rounded(want)
    assert {f"s{i}" for i in range(10)} <= {item for item, _ in want}


def test_two_benchmarks_report_each(planted, tmp_path):
    """The CLI and the API: one report entry per benchmark, named by NAME= or its file;
    every training record accounted for; the same matches."""
    report, matches = tmp_path / "report.json", tmp_path / "matches.csv"
    second = tmp_path / "second.jsonl"
    second.write_text("".join(planted["qa"].read_text().splitlines(keepends=True)[:12]))
    code = main(["contamination", str(planted["train"]), "--eval", f"qa={planted['qa']}",
                 "--eval", str(second), "--eval-fields", "question,answer", "--eval-id",
                 "id", "--id-field", "id", "--report", str(report), "--matches",
                 str(matches), "-q"])
    assert code == 0
    written = json.loads(report.read_text())
    assert list(written["benchmarks"]) == ["qa", "second"]
    assert written["benchmarks"]["second"]["items"] == 12
    training = written["training"]
    assert training["records_seen"] == 302
    assert (training["documents"], training["skipped"], training["failed"]) == (300, 1, 1)
    rows = list(csv.DictReader(open(matches, newline="")))
    assert list(rows[0]) == ["benchmark", "item_id", "training_id", "rule", "overlap", "ngram"]
    api = _run(planted)
    assert [(r["item_id"], r["training_id"]) for r in rows if r["benchmark"] == "qa"] == [
        (r["item_id"], r["training_id"]) for r in api.matches.to_pylist()]
    assert {(r["item_id"], r["training_id"]) for r in rows if r["benchmark"] == "second"} \
        == {(r["item_id"], r["training_id"]) for r in api.matches.to_pylist()
            if int(r["item_id"][1:]) < 12}


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


def test_clean_copy_removes_the_matching_documents_only(planted, tmp_path):
    out = tmp_path / "clean.jsonl"
    result = _run(planted, clean=str(out))
    removed = {doc for _, doc in _found(result)}
    kept = [line for line in _lines(planted["train"])
            if not (line.startswith("{") and json.loads(line)["id"] in removed)]
    assert out.read_bytes() == "".join(kept).encode()  # every other record byte for byte
    assert result.counts["documents_removed"] == len(removed)
    assert result.counts["clean"]["written"] == 302 - len(removed)
    again = neardup.contamination([str(out)], {"qa": str(planted["qa"])},
                                  fields="question,answer", eval_id="id", id="id")
    assert again.report["qa"]["contaminated_items"] == 0


@pytest.mark.parametrize("rule", ["ngram", "containment"])
def test_clean_spans_cuts_the_matching_spans_only(planted, tmp_path, rule):
    out = tmp_path / "clean.jsonl"
    result = _run(planted, rule=rule, containment=0.5, clean=str(out), clean_spans=True)
    changed = {doc for _, doc in _found(result)}
    before, after = _lines(planted["train"]), _lines(out)
    assert len(before) == len(after)
    cut = 0
    for old, new in zip(before, after):
        if not old.startswith("{") or json.loads(old)["id"] not in changed:
            assert new == old
            continue
        old_r, new_r = json.loads(old), json.loads(new)
        assert {k: v for k, v in old_r.items() if k != "text"} == \
            {k: v for k, v in new_r.items() if k != "text"}
        assert _is_cut_from(new_r["text"], old_r["text"])
        cut += len(old_r["text"].encode()) - len(new_r["text"].encode())
    assert result.counts["documents_changed"] == len(changed)
    assert result.counts["bytes_removed"] == cut
    again = neardup.contamination([str(out)], {"qa": str(planted["qa"])},
                                  fields="question,answer", eval_id="id", id="id",
                                  rule=rule, containment=0.5)
    assert again.report["qa"]["contaminated_items"] == 0


def _is_cut_from(new: str, old: str) -> bool:
    """``new`` is ``old`` with some pieces removed (a subsequence)."""
    it = iter(old)
    return all(ch in it for ch in new)


def test_flag_eval_marks_each_item(planted, tmp_path):
    result = _run(planted, flag_eval=str(tmp_path / "flags"))
    contaminated = {item for item, _ in _found(result)}
    rows = [json.loads(line) for line in (tmp_path / "flags" / "qa.jsonl").read_text()
            .splitlines()]
    originals = [json.loads(line) for line in planted["qa"].read_text().splitlines()]
    assert [{k: v for k, v in r.items() if k != "neardup_contaminated"} for r in rows] \
        == originals
    assert {r["id"] for r in rows if r["neardup_contaminated"]} == contaminated


def test_memory_limit_gives_the_in_memory_outputs(planted, tmp_path, monkeypatch):
    """Chunks of the smallest size (300 characters: most documents are longer, each then
    a chunk of its own, never skipped) and batches of 7 documents: the same matches,
    report and clean copy as one batch."""
    whole = _run(planted, clean=str(tmp_path / "a.jsonl"), clean_spans=True)
    monkeypatch.setattr(contamination_run, "MIN_CHUNK_CHARS", 300)
    monkeypatch.setattr(contamination_run, "BATCH_DOCUMENTS", 7)
    bounded = _run(planted, clean=str(tmp_path / "b.jsonl"), clean_spans=True,
                   memory_limit=contamination_run.memory_floor())
    assert bounded.matches.equals(whole.matches)
    assert bounded.report == whole.report
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert {k: v for k, v in bounded.counts.items() if k != "clean"} == \
        {k: v for k, v in whole.counts.items() if k != "clean"}


def test_same_input_gives_byte_identical_outputs(planted, tmp_path):
    outputs = []
    for run in ("a", "b"):
        folder = tmp_path / run
        folder.mkdir()
        assert main(["contamination", str(planted["train"]), "--eval", f"qa={planted['qa']}",
                     "--eval-fields", "question,answer", "--id-field", "id", "--eval-id", "id",
                     "--rule", "containment", "--report", str(folder / "r.json"),
                     "--matches", str(folder / "m.csv"), "--clean", str(folder / "c.jsonl"),
                     "--clean-spans", "-q"]) == 0
        outputs.append([(folder / name).read_bytes() for name in ("m.csv", "c.jsonl")]
                       + [json.dumps(json.loads((folder / "r.json").read_text())["benchmarks"])])
    assert outputs[0] == outputs[1]


def test_data_in_memory(planted):
    """A list of dicts as training data and a list of dicts as an evaluation set."""
    train = [{"id": k, "text": v} for k, v in train_texts(planted["train"]).items()]
    qa = [json.loads(line) for line in planted["qa"].read_text().splitlines()]
    result = neardup.contamination(train, {"qa": qa}, fields=["question", "answer"],
                                   eval_id="id", id="id")
    assert _found(result) == _found(_run(planted))


@pytest.mark.parametrize("content, expected", [
    (None, "no such file"),
    ('{"question": "x", "answer": "y"}\nnot json\n', None),  # one bad line: counted
    ("not json\nnor this\n", "--eval qa="),
    ('{"q": "x"}\n', "--eval qa="),
])
def test_bad_eval_file_is_a_clear_error(planted, tmp_path, capsys, content, expected):
    path = tmp_path / "qa.jsonl"
    if content is not None:
        path.write_text(content)
    code = main(["contamination", str(planted["train"]), "--eval", f"qa={path}",
                 "--eval-fields", "question,answer", "-q"])
    err = capsys.readouterr().err
    if expected is None:
        assert code == 0
        return
    assert code == 2, err
    assert expected in err


def test_the_cli_cleaning_preset_is_clean_preset(planted, tmp_path):
    """--clean-preset text: the matches of clean_preset="text"; --clean stays the copy."""
    matches = tmp_path / "m.csv"
    assert main(["contamination", str(planted["train"]), "--eval", f"qa={planted['qa']}",
                 "--eval-fields", "question,answer", "--id-field", "id", "--eval-id", "id",
                 "--clean-preset", "text", "-n", "8", "--matches", str(matches), "-q"]) == 0
    rows = list(csv.DictReader(open(matches, newline="")))
    api = _run(planted, clean_preset="text", ngram=8)
    assert [(r["item_id"], r["training_id"]) for r in rows] == \
        [(r["item_id"], r["training_id"]) for r in api.matches.to_pylist()]
    assert all(not any(ch.isdigit() for ch in r["ngram"]) for r in rows)  # digits cleaned


def test_options_are_checked_at_the_door(planted):
    with pytest.raises(ValueError, match="--require question,x: x is not among"):
        _run(planted, require="question,x")
    with pytest.raises(ValueError, match="rule"):
        _run(planted, rule="fuzzy")
    with pytest.raises(ValueError, match="give clean="):
        _run(planted, clean_spans=True)
    with pytest.raises(ValueError, match="containment must lie"):
        _run(planted, rule="containment", containment=1.5)
    with pytest.raises(ValueError, match="for the cleaning preset give clean_preset='web'"):
        _run(planted, clean="web")
    with pytest.raises(ValueError, match="below what a contamination run needs"):
        _run(planted, memory_limit=1000)


def test_match_batch_counts_each_gram_once():
    """The stage alone: a document holding a text's gram twice counts it once; a
    document shorter than a gram has none."""
    from neardup.overlap import GramLookup, match_batch
    from neardup.shingling import hash_tokens

    item = [["a", "b", "c", "d"]]
    lookup = GramLookup.build(*hash_tokens(item), size=2)
    docs = [["x", "a", "b", "a", "b", "c"], ["d"], ["c", "d"]]
    hits = match_batch(*hash_tokens(docs), lookup)
    assert hits.doc.tolist() == [0, 2]
    assert hits.shared.tolist() == [2, 1]  # ab, bc; cd
    assert np.array_equal(lookup.grams, [3])


def test_matches_to_standard_output(planted, tmp_path, capsys):
    """--matches -: the CSV on standard output, the table on standard error; the bytes
    of --matches FILE.csv."""
    base = ["contamination", str(planted["train"]), "--eval", f"qa={planted['qa']}",
            "--eval-fields", "question,answer", "--id-field", "id", "--eval-id", "id", "-q"]
    assert main([*base, "--matches", str(tmp_path / "m.csv")]) == 0
    capsys.readouterr()
    assert main([*base, "--matches", "-"]) == 0
    out, err = capsys.readouterr()
    assert out.encode() == (tmp_path / "m.csv").read_bytes()
    assert err.startswith("benchmark  items  contaminated")


def test_flagged_files_are_named_after_their_benchmark(planted, tmp_path):
    """Two evaluation files of one name, in two folders: one flagged copy each."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "test.jsonl").write_bytes(planted["qa"].read_bytes())
    neardup.contamination([str(planted["train"])],
                          [f"one={tmp_path / 'a' / 'test.jsonl'}",
                           f"two={tmp_path / 'b' / 'test.jsonl'}"],
                          fields="question,answer", eval_id="id", id="id",
                          flag_eval=str(tmp_path / "flags"))
    assert sorted(p.name for p in (tmp_path / "flags").iterdir()) == ["one.jsonl", "two.jsonl"]
    assert (tmp_path / "flags" / "one.jsonl").read_bytes() == \
        (tmp_path / "flags" / "two.jsonl").read_bytes()


def test_clean_spans_removes_whole_a_document_whose_words_cannot_be_placed(tmp_path):
    """"½" is one word in the original text and two once cleaned (NFKC: 1⁄2): that
    document goes whole, counted; the other one is cut, its other bytes kept."""
    question = " ".join(f"word{i}" for i in range(15))
    train = tmp_path / "train.jsonl"
    train.write_text(json.dumps({"id": "half", "text": f"Take ½ of it. {question} end"})
                     + "\n" + json.dumps({"id": "plain", "text": f"Start. {question} end"})
                     + "\n")
    evals = tmp_path / "qa.jsonl"
    evals.write_text(json.dumps({"question": question}) + "\n")
    out = tmp_path / "clean.jsonl"
    result = neardup.contamination(str(train), {"qa": str(evals)}, eval_text="question",
                                   id="id", clean=str(out), clean_spans=True)
    assert result.counts["documents_removed"] == 1
    assert result.counts["documents_changed"] == 1
    assert out.read_text() == json.dumps({"id": "plain", "text": "Start.  end"}) + "\n"
