import os
import sys
from pathlib import Path

# Deterministic rendering: no animations (set before textual is imported).
os.environ["TEXTUAL_ANIMATIONS"] = "none"

# Make the repository importable when pytest runs without an installed package.
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
