"""``python -m stagetimer``: the same command line as the ``stagetimer`` script."""

from __future__ import annotations

from stagetimer._cli import main

__all__: list[str] = []

if __name__ == "__main__":
    raise SystemExit(main())
