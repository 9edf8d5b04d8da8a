"""``python -m argus.kb``: the same as ``argus-kb``."""

import sys

from .cli import main

sys.exit(main())
