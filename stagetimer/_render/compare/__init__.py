"""compare drawn: text, Markdown for a pull request, and the ratio plot."""
