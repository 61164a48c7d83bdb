"""Rendering analysis results: text, JSON, CSV, Markdown, LaTeX and pictures."""
