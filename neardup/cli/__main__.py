"""``python -m neardup.cli`` is the ``neardup`` command (as ``python -m neardup``)."""

import sys

from . import main

sys.exit(main())
