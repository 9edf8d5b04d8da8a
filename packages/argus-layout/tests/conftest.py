import sys
from pathlib import Path

# Lets test modules import the shared `strategies` helper module next to them.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
