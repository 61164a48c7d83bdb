"""Shared fixtures: each test gets a clean environment and its own artifact directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stagetimer import Recorder


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STAGETIMER_DIR", raising=False)
    monkeypatch.delenv("STAGETIMER_DISABLE", raising=False)


@pytest.fixture
def art(tmp_path: Path) -> Path:
    """An artifact directory (not yet created: the recorder creates it)."""
    return tmp_path / "exports" / "gridworlds" / "pursuit" / "classic_3" / "ippo"


@pytest.fixture
def rec(art: Path) -> Recorder:
    return Recorder(art)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
