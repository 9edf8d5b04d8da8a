"""``python -m argus.layout``: the ``argus-layout`` command line."""

from .cli import main

raise SystemExit(main())
