"""Helpers shared by test modules."""

from __future__ import annotations

import os
import shutil
import subprocess


def java_works() -> bool:
    """True when a Java runtime answers ``java -version`` (Spark needs one)."""
    java = shutil.which("java") or (os.environ.get("JAVA_HOME") and
                                    os.path.join(os.environ["JAVA_HOME"], "bin", "java"))
    if not java:
        return False
    try:
        return subprocess.run([java, "-version"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
