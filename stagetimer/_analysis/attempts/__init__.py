"""Attempts: each entry into a recorded stage, what became of it, where it ran, what was lost."""
