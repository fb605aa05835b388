"""``python -m teamgym.train``: the same as ``teamgym train``."""

from __future__ import annotations

import sys

from teamgym.train.cli import main

if __name__ == "__main__":
    sys.exit(main())
