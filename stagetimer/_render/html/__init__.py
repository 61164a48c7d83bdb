"""The self-contained HTML pages: report, compare and history, with their charts drawn as SVG."""
