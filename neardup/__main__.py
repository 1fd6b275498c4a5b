"""``python -m neardup`` is the ``neardup`` command."""

import sys

from .cli import main

sys.exit(main())
