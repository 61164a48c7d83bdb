"""Locking: how a save excludes every other writer of its file.

The advisory ``flock`` of a lock file (``lock``), the cross-client claim of a sidecar on
file systems where that ``flock`` is per client (``claims``, ``claim_info``), which
directories need the claim (``policy``), and who holds a lock now (``holders``).
"""
