"""How many near-duplicate pairs does a generated job-ads board hold? LSH against brute force.

    python examples/job-ads/run.py            # about 15 s on 2 cores

Writes ``ads.tsv`` (3,127 ads; 1,626 of them carry the same one-line description, as
about 1,900 did on a real board of this kind; the rest are generated texts, 15 % reposted
with small edits) next to this file, then for four common b x r (K = 100:
10 x 10, 20 x 5, 25 x 4, 50 x 2) and neardup's own choice runs ``neardup.api.evaluate``
exactly as the CLI does:

    neardup evaluate ads.tsv --text-field description --id-field id --shingle char -k 10 \\
        -t 0.8 --num-perm 100 --bands B --rows R --truth brute

and prints, in document pairs (copies included): LSH candidate pairs, brute-force true
pairs, their intersection, false positives and negatives with their rates, and the time
of each side. A Markdown table, the one in README.md.
"""

from __future__ import annotations

import os

from neardup import api
from neardup.synthetic import job_ads

HERE = os.path.dirname(os.path.abspath(__file__))
BANDINGS = [(10, 10), (20, 5), (25, 4), (50, 2), (None, None)]
OPTIONS = dict(text_fields=["description"], id_field="id", shingle_kind="char",
               shingle_size=10, threshold=0.8, num_perm=100, truth="brute")


def main() -> None:
    path = os.path.join(HERE, "ads.tsv")
    job_ads().write_tsv(path)
    print(f"wrote {path}\n")
    print("| b x r | LSH candidate pairs | true pairs (brute force) | intersection | "
          "false positives (rate) | false negatives (rate) | LSH s | brute force s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for bands, rows in BANDINGS:
        ev = api.evaluate(path, bands=bands, rows=rows, **OPTIONS)
        m = ev.metrics
        label = f"{ev.bands} x {ev.rows}" + (" (neardup's choice)" if bands is None else "")
        print(f"| {label} | {m['candidates']:,} | {m['true_pairs']:,} | {m['found']:,} | "
              f"{m['false_positives']:,} ({m['false_positive_rate']:.2e}) | "
              f"{m['false_negatives']:,} ({m['false_negative_rate']:.2e}) | "
              f"{m['lsh_seconds']:.2f} | {m['truth_seconds']:.2f} |", flush=True)
        assert m["found"] + m["false_negatives"] == m["true_pairs"], "counts must add up"
    print(f"\n{m['documents']:,} documents, {m['sets']:,} distinct sets, "
          f"{m['all_pairs']:,} document pairs in all; {m['identical_pairs']:,} of the true "
          f"pairs are copies of one text (J = 1)")


if __name__ == "__main__":
    main()
