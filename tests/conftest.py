"""Shared fixtures: each test gets a clean environment and its own artifact directory."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stagetimer import Recorder
from stagetimer._system import process_state as _lifetime


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("STAGETIMER_DIR", raising=False)
    monkeypatch.delenv("STAGETIMER_DISABLE", raising=False)
    yield
    # Records a test left pending on purpose are not rescued at the end of the session,
    # and stages it left open are not settled then (interpreter exit is tested in
    # subprocesses).
    _lifetime.with_pending.clear()
    markers = sys.modules.get("stagetimer._record.attempt_markers")
    if markers is not None:
        markers.open_attempts.clear()


@pytest.fixture
def art(tmp_path: Path) -> Path:
    """An artifact directory (not yet created: the recorder creates it)."""
    return tmp_path / "exports" / "gridworlds" / "pursuit" / "classic_3" / "ippo"


@pytest.fixture
def rec(art: Path) -> Recorder:
    return Recorder(art)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))

