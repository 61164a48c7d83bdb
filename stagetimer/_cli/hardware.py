"""``stagetimer hardware``: this process's hardware description, its id and its sources."""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the description as text, or as ``{"hardware_id", "hardware"}`` with ``--json``."""
    from stagetimer.hardware import capture_hardware, description, hardware_id
    from stagetimer.hardware._show import format_hardware

    hw = capture_hardware()
    if args.json:
        payload = {"hardware_id": hardware_id(hw), "hardware": description(hw)}
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(format_hardware(hw))
    return 0
