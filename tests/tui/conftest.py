import os

# Deterministic rendering: no animations (set before textual is imported).
os.environ["TEXTUAL_ANIMATIONS"] = "none"
