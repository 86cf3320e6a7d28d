"""Sweep tests: every test gets its own result cache (XDG_CACHE_HOME under tmp_path)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    folder = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    return folder / "kernbench" / "sweep"
