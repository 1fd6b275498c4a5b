#!/usr/bin/env python3
"""``neardup dedup --annotate`` against plain dedup: what writing every record with its
cluster, its kept flag, the record it duplicates and their Jaccard costs, and what
``--explain FILE`` costs.

Corpus: bench/bench_scale.py's (N documents of 200 words, 1 % planted near-duplicates,
JSON Lines; ``--corpora DIR`` holding ``scale_N.jsonl``, else generated into
``--cache``). Four commands, each a fresh process sampled as bench_dedup_memory's runs
are (``/usr/bin/time -v``, the child's RssAnon every 20 ms, the 1-minute load average
at its start), in an order rotated every round so that each takes every place and the
shared machine's load falls on all alike; ``--runs`` rounds:

1. plain: ``neardup dedup FILE --id-field id --shingle word --ngram 5 --threshold 0.8
   -q -o COPY``;
2. ``--annotate --keep all``: every record, with the neardup_ fields;
3. ``--annotate`` (default keep): the survivors, with the neardup_ fields;
4. ``--explain removed.csv``: plain, plus one row per removed record.

Checked on the last round's outputs: with ``--keep all`` every input line is there, in
order, and is the input's line byte for byte once the added fields are taken off; the
records it marks kept are the plain copy's lines, byte for byte, in order, and each
removed one names the record it duplicates with a Jaccard >= the threshold; with the
default keep, the records are the plain copy's, byte for byte apart from the added
fields; ``--explain`` has one row per record the plain dedup removed. Figures go to
stdout (a Markdown table), to ``--out`` (JSON) and, unless ``--no-write``, to the
"annotate" section of BENCHMARKS.md.

Run: ``python bench/bench_annotate.py --sizes 1000000 --runs 3``.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path

from bench_dedup_memory import OPTIONS
from bench_scale import out_of_core_corpus, run_sampled

HERE = Path(__file__).resolve().parent
SECTION = "annotate"
THRESHOLD = float(OPTIONS[OPTIONS.index("--threshold") + 1])
VARIANTS = {  # name: (dedup's options beyond OPTIONS and -o, whether it annotates)
    "plain": ([], False),
    "--annotate --keep all": (["--annotate", "--keep", "all"], True),
    "--annotate": (["--annotate"], True),
    "--explain FILE": (["--explain", "{work}/removed.csv"], False),
}
# the fields --annotate adds, at the end of each JSON object
_ADDED = re.compile(rb', "neardup_cluster": [^\n]*?, "neardup_cluster_size": (\d+), '
                    rb'"neardup_kept": (true|false), "neardup_duplicate_of": ([^\n]*?), '
                    rb'"neardup_jaccard": ([^\n]*?)\}\n$')


def command(path: Path, variant: str, work: Path) -> list[str]:
    extra, _ = VARIANTS[variant]
    return ["dedup", str(path), *OPTIONS, *[e.format(work=work) for e in extra],
            "-o", str(work / f"{_slug(variant)}.jsonl")]


def _slug(variant: str) -> str:
    return re.sub(r"[^a-z]+", "_", variant).strip("_") or "plain"


def rounds(path: Path, work: Path, runs: int) -> dict[str, list[dict]]:
    """Every variant ``runs`` times, the order rotated each round."""
    names = list(VARIANTS)
    measured: dict[str, list[dict]] = {name: [] for name in names}
    for r in range(runs):
        for name in names[r % len(names):] + names[:r % len(names)]:
            row = run_sampled(command(path, name, work))
            del row["output"]
            row["output_bytes"] = (work / f"{_slug(name)}.jsonl").stat().st_size
            measured[name].append(row)
            print(f"[annotate] round {r + 1} {name}: {json.dumps(row)}", file=sys.stderr,
                  flush=True)
    return measured


def strip(line: bytes) -> tuple[bytes, re.Match]:
    """(the record as the input wrote it, the added fields)."""
    added = _ADDED.search(line)
    if added is None:
        raise ValueError(f"no neardup_ fields at the end of {line[:80]!r}...")
    return line[:added.start()] + b"}\n", added


def check(path: Path, work: Path) -> dict:
    """The checks of the module's docstring on the last round's outputs."""
    plain, every, kept = (work / f"{_slug(v)}.jsonl"
                          for v in ("plain", "--annotate --keep all", "--annotate"))
    found = {"records": 0, "all_present_unchanged": True, "all_kept_equal_plain": True,
             "removed_name_a_match": True, "min_removed_jaccard": None,
             "largest_cluster": 0}
    lowest = None
    with open(path, "rb") as given, open(every, "rb") as annotated, \
            open(plain, "rb") as copy:
        wanted = copy.readline()
        for original in given:
            line = annotated.readline()
            record, added = strip(line)
            found["records"] += 1
            found["all_present_unchanged"] &= record == original
            found["largest_cluster"] = max(found["largest_cluster"], int(added[1]))
            if added[2] == b"true":
                found["all_kept_equal_plain"] &= record == wanted
                wanted = copy.readline()
            else:
                jaccard = float(added[4])
                found["removed_name_a_match"] &= added[3] != b"null" and jaccard >= THRESHOLD
                lowest = jaccard if lowest is None else min(lowest, jaccard)
        found["all_present_unchanged"] &= annotated.readline() == b""
        found["all_kept_equal_plain"] &= wanted == b""  # the plain copy used up
    found["min_removed_jaccard"] = lowest
    same, written = True, 0
    with open(kept, "rb") as annotated, open(plain, "rb") as copy:
        for line in annotated:
            record, added = strip(line)
            same &= record == copy.readline() and added[2] == b"true"
            written += 1
        same &= copy.readline() == b""
    found["default_equals_plain"] = same
    found["written_default"] = written
    with open(work / "removed.csv", newline="", encoding="utf-8") as f:
        found["explain_rows"] = sum(1 for _ in csv.DictReader(f))
    found["removed_plain"] = found["records"] - written
    found["ok"] = bool(found["all_present_unchanged"] and found["all_kept_equal_plain"]
                       and found["removed_name_a_match"] and same
                       and found["explain_rows"] == found["removed_plain"])
    return found


def summarize(n: int, path: Path, measured: dict[str, list[dict]], checked: dict) -> dict:
    def median(name: str, key: str) -> float:
        return statistics.median(r[key] for r in measured[name])

    rows = {}
    for name, runs in measured.items():
        rows[name] = {key: median(name, key) for key in
                      ("wall_s", "cpu_s", "peak_rss_mib", "peak_anon_mib", "output_bytes")}
        rows[name]["runs"] = runs
    return {"n": n, "corpus_bytes": path.stat().st_size, "rows": rows, "checked": checked}


def per_round(runs: list[dict], plain: list[dict], key: str) -> str:
    """A variant's ``key`` over plain's in the same round, round by round."""
    return ", ".join(f"{r[key] / p[key]:.2f}" for r, p in zip(runs, plain))


def table(results: list[dict]) -> str:
    lines = ["| N | command | wall s | CPU s | peak RSS MiB | peak RssAnon MiB | output MB "
             "| wall / plain (median; each round) | CPU / plain (median; each round) "
             "| RSS / plain | bytes / plain "
             "| loads at the start |",
             "|---|---|---:|---:|---:|---:|---:|---|---|---:|---:|---|"]
    for result in results:
        base = result["rows"]["plain"]
        for name, r in result["rows"].items():
            label = "`dedup FILE ... -o COPY`" if name == "plain" else f"`... {name}`"
            lines.append(
                f"| {result['n']:,} | {label} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | "
                f"{r['peak_rss_mib']:,.0f} | {r['peak_anon_mib']:,.0f} | "
                f"{r['output_bytes'] / 1e6:,.1f} | "
                f"{r['wall_s'] / base['wall_s']:.2f} "
                f"({per_round(r['runs'], base['runs'], 'wall_s')}) | "
                f"{r['cpu_s'] / base['cpu_s']:.2f} "
                f"({per_round(r['runs'], base['runs'], 'cpu_s')}) | "
                f"{r['peak_rss_mib'] / base['peak_rss_mib']:.2f} | "
                f"{r['output_bytes'] / base['output_bytes']:.3f} | "
                f"{', '.join(str(x['load_at_start']) for x in r['runs'])} |")
    return "\n".join(lines)


def checks_text(result: dict) -> str:
    c = result["checked"]

    def said(ok: bool) -> str:
        return "yes" if ok else "**NO**"

    return (f"- {result['n']:,} documents ({result['corpus_bytes'] / 1e9:.2f} GB), the last "
            f"round's outputs: `--annotate --keep all` wrote {c['records']:,} records, every "
            f"input line in order and, without the added fields, the input's line byte for "
            f"byte: {said(c['all_present_unchanged'])}; those marked kept are the plain "
            f"copy's lines byte for byte: {said(c['all_kept_equal_plain'])}; each removed "
            f"one names the record it duplicates with Jaccard ≥ {THRESHOLD}: "
            f"{said(c['removed_name_a_match'])} (lowest {c['min_removed_jaccard']}, largest "
            f"cluster {c['largest_cluster']}). `--annotate` wrote {c['written_default']:,} "
            f"records, the plain copy's byte for byte apart from the added fields: "
            f"{said(c['default_equals_plain'])}. `--explain` wrote {c['explain_rows']:,} "
            f"rows for the {c['removed_plain']:,} records removed.")


def _noise(results: list[dict]) -> str:
    """What the loads say about the seconds."""
    loads = [run["load_at_start"] for result in results for rows in result["rows"].values()
             for run in rows["runs"]]
    return (f"- The 1-minute load average was {min(loads)} to {max(loads)} on 2 cores while "
            "measuring: the wall seconds wait on other work and vary from round to round; "
            "CPU seconds (user + system, the process's own) vary less and are the better "
            "ratio (but not immune: a run's CPU seconds also grow when it shares a core); "
            "peak memory and bytes do not depend on the load. Plain's CPU seconds round by "
            "round: " + "; ".join(", ".join(str(run["cpu_s"]) for run in r["rows"]["plain"]
                                            ["runs"]) for r in results)
            + " (a round's ratios are against its own plain run).")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--runs", type=int, default=3, help="rounds of the four commands")
    parser.add_argument("--corpora", type=Path,
                        help="a folder holding scale_N.jsonl and scale_N.planted.json")
    parser.add_argument("--cache", type=Path, default=HERE / ".cache" / "scale")
    parser.add_argument("--work", type=Path, default=None,
                        help="where the copies go (default: the temp folder)")
    parser.add_argument("--out", type=Path,
                        default=HERE / ".cache" / "annotate" / "results.json")
    parser.add_argument("--no-write", action="store_true",
                        help=f"do not update the {SECTION!r} section of BENCHMARKS.md")
    parser.add_argument("--write-from", type=Path, metavar="RESULTS",
                        help="write the section from the results file (--out) of an earlier "
                             "run instead of running")
    args = parser.parse_args()
    if args.write_from:
        saved = json.loads(args.write_from.read_text())
        write(saved["results"], saved["command"].replace(" --no-write", ""))
        return 0
    results = []
    for n in args.sizes:
        path, _ = out_of_core_corpus(args.corpora, args.cache, n)
        with tempfile.TemporaryDirectory(prefix="bench-annotate-", dir=args.work) as tmp:
            measured = rounds(path, Path(tmp), args.runs)
            checked = check(path, Path(tmp))
        results.append(summarize(n, path, measured, checked))
        print(json.dumps(checked), flush=True)
    command_line = " ".join(["python bench/bench_annotate.py", *sys.argv[1:]])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"command": command_line, "results": results}, indent=2))
    print(table(results) + "\n\n" + "\n".join(checks_text(r) for r in results))
    if not args.no_write:
        write(results, command_line)
    return 0 if all(r["checked"]["ok"] for r in results) else 1


def write(results: list[dict], command_line: str) -> None:
    """The section: what runs, the table, the checks, the machine."""
    runs = len(results[0]["rows"]["plain"]["runs"])
    text = table(results) + "\n\n" + "\n".join(checks_text(r) for r in results)
    sys.path.insert(0, str(HERE))
    from common import machine_lines
    from sections import update_section

    update_section(SECTION, "## dedup --annotate against plain dedup\n\n"
                   f"`{command_line}`: `neardup dedup FILE {' '.join(OPTIONS)} -o COPY` "
                   "(plain), the same with `--annotate --keep all` (every record, with "
                   "neardup_cluster, neardup_cluster_size, neardup_kept, "
                   "neardup_duplicate_of and neardup_jaccard added), with `--annotate` "
                   "(the survivors, with the fields) and with `--explain removed.csv` (plain "
                   "plus one row per removed record), on the scale corpus (200-word JSON "
                   "Lines documents, 1 % planted near-duplicates). Each a fresh process "
                   "under `/usr/bin/time -v`, RssAnon sampled every 20 ms; the four in an "
                   f"order rotated each round, {runs} rounds; medians, and the ratio of "
                   "each median to plain's (wall also per round: against plain's run of "
                   "the same round). Loads: the 1-minute load average at the start of "
                   "each run, 2 cores shared with other work.\n\n"
                   + text + "\n" + _noise(results) + "\n" + "\n".join(machine_lines()))


if __name__ == "__main__":
    sys.exit(main())
