"""Markdown as a reader sees it: rendered by GitHub's own renderer (cmark-gfm, through
``cmarkgfm``), then the text of each table cell, list item or paragraph."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

__all__ = ["rendered", "table_rows"]

cmarkgfm = pytest.importorskip("cmarkgfm")


class _Cells(HTMLParser):
    """The text of each block of interest, in document order, with the row it belongs to."""

    BLOCKS = ("td", "th", "li", "p", "summary", "h4")

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self.blocks: list[tuple[str, str]] = []
        self._open: list[tuple[str, list[str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        if tag in self.BLOCKS:
            self._open.append((tag, []))

    def handle_endtag(self, tag: str) -> None:
        if tag in self.BLOCKS and self._open and self._open[-1][0] == tag:
            _, parts = self._open.pop()
            text = "".join(parts)
            self.blocks.append((tag, text))
            if tag in ("td", "th"):
                self.rows[-1].append(text)
            if self._open:  # a block inside another: its text is the outer's too
                self._open[-1][1].append(text)

    def handle_data(self, data: str) -> None:
        if self._open:
            self._open[-1][1].append(data)


def rendered(markdown: str) -> _Cells:
    """``markdown`` through GitHub's renderer with raw HTML let through (github.com then
    keeps the tags of its allow-list, ``<details>`` and ``<summary>`` among them): a name
    that is not escaped would come out as a tag here, not as its text."""
    parser = _Cells()
    unsafe = cmarkgfm.Options.CMARK_OPT_UNSAFE
    parser.feed(cmarkgfm.github_flavored_markdown_to_html(markdown, options=unsafe))
    parser.close()
    return parser


def table_rows(markdown: str) -> list[list[str]]:
    """The text of each cell of each table row, header first, as GitHub shows them."""
    return rendered(markdown).rows
