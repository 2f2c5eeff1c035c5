"""``python -m emsort.ray`` — see ``python -m emsort.ray --help``."""

import sys

from ._cli import main

sys.exit(main())
