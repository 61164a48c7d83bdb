"""``stagetimer hardware``: this process's hardware description, its id and its sources."""

from __future__ import annotations

import argparse
import sys

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the description as text, or as ``{"hardware_id", "hardware"}`` with ``--json``."""
    from stagetimer._render.json_text import indented_json
    from stagetimer.hardware import capture_hardware, description, format_hardware, hardware_id

    hw = capture_hardware()
    if args.json:
        payload = {"hardware_id": hardware_id(hw), "hardware": description(hw)}
        sys.stdout.write(indented_json(payload))
    else:
        sys.stdout.write(format_hardware(hw))
        sys.stdout.write(_placement_line())
    return 0


def _placement_line() -> str:
    """Where this process runs, which each run keeps itself (not the description)."""
    from stagetimer._record.placement import placed_cpus, rank_of

    cpus = placed_cpus()
    rank = rank_of()
    where = [f"cpus {cpus}" if cpus is not None else "cpus unknown"]
    if rank is not None:
        where.append(f"rank {rank[0]} of {rank[1]}")
    return f"placement (kept in each run, not in the description): {', '.join(where)}\n"
