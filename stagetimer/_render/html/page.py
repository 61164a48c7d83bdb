"""One self-contained HTML page: escaping, the Content-Security-Policy and the frame.

The page loads nothing: its style and its small script are inline, and a
Content-Security-Policy in the page forbids everything else (``default-src 'none'``)
and allows that style and that script only by their SHA-256 hashes, so that markup a
file managed to inject could run nothing. Every text from the files goes through
``html_text``: the five characters HTML gives a meaning to become entities (inside an
element or an attribute, in HTML or in inline SVG, ``</script>`` and ``</svg>`` are
then just text), and the characters a reader cannot see or that reorder what is shown
(controls, bidi overrides, lone surrogates from bytes that were not UTF-8) are written
as visible escapes, as the text output writes them. The page holds no time of its own:
the same files give the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import html
import math

from stagetimer._escape import escape_text
from stagetimer._render.output_file import unwritable, write_output

__all__ = ["check_path", "html_text", "number", "page", "write_page"]

_STYLE = """
:root{color-scheme:light;--ink:#1a1a1a;--muted:#555;--line:#ccc;--slow:#b2182b;--fast:#2166ac;
--mark:#3b5b92;--fail:#d6604d;--kill:#7b3294}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);
background:#fff;margin:1.5rem auto;max-width:72rem;padding:0 1rem}
h1{font-size:1.4rem;margin:0 0 .3rem}h2{font-size:1.15rem;margin:1.6rem 0 .4rem;
border-bottom:1px solid var(--line)}h3{font-size:1rem;margin:1rem 0 .3rem}
p,li{max-width:60rem}.muted{color:var(--muted)}.note{color:var(--muted);font-size:.9em}
code,.path{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;
overflow-wrap:anywhere}
table{border-collapse:collapse;margin:.4rem 0 1rem;font-variant-numeric:tabular-nums}
th,td{padding:.15rem .55rem;border-bottom:1px solid #e4e4e4;text-align:right;
vertical-align:top}
td{white-space:nowrap}td.t{white-space:normal}td.u{white-space:normal;text-align:left;
min-width:11em}
th[scope=row],td.t,th.t{text-align:left;overflow-wrap:break-word}
th[scope=row]{overflow-wrap:anywhere;min-width:9em}
th[scope=rowgroup]{overflow-wrap:anywhere}
thead th{border-bottom:2px solid #999;position:sticky;top:0;background:#fff}
tbody th[scope=rowgroup]{text-align:left;background:#f3f3f3;font-weight:600}
.slower{color:var(--slow);font-weight:600}.faster{color:var(--fast);font-weight:600}
svg{display:block;max-width:100%;height:auto;margin:.3rem 0 1rem}
svg text{font:11px system-ui,sans-serif;fill:#333}svg .ax{stroke:#999;stroke-width:1}
svg .grid{stroke:#e6e6e6}svg .run{fill:var(--mark);fill-opacity:.75}
svg .med{stroke:#000;stroke-width:2}svg .spread{stroke:var(--mark);stroke-width:6;
stroke-opacity:.25}svg .bin{fill:var(--mark);fill-opacity:.6}
svg .ok{fill:var(--mark)}svg .failed{fill:var(--fail)}svg .killed{fill:var(--kill)}
svg .running,svg .unknown{fill:#999}svg .one{stroke:#000;stroke-dasharray:3 3}
svg .r-slower{fill:var(--slow);stroke:var(--slow)}svg .r-faster{fill:var(--fast);
stroke:var(--fast)}svg .r-same{fill:#777;stroke:#777}svg .ci{stroke-width:2}
svg .limit{stroke:var(--slow);stroke-width:2}svg .peak{fill:#5aae61}
svg .cpu{fill:var(--mark)}svg .energy{fill:#e08214}
.filter{margin:.5rem 0}.filter input{font:inherit;padding:.15rem .4rem;min-width:18rem}
.js-only{display:none}.js .js-only{display:block}
@media print{body{max-width:none;margin:0;font-size:9pt;color:#000}
thead th{position:static}table{width:100%;page-break-inside:auto}tr{page-break-inside:avoid}
table{font-size:8pt}th,td{padding:.05rem .2rem}thead th{white-space:normal}
td.u{min-width:8em}
.filter,.js-only{display:none!important}
svg text{fill:#000}h2{page-break-after:avoid}}
@page{size:A4;margin:12mm}
"""

# Optional: filtering the long tables by a word. The page reads whole without it.
_SCRIPT = """
(function(){document.documentElement.className='js';
var f=document.querySelectorAll('input[data-filter]');
Array.prototype.forEach.call(f,function(box){box.addEventListener('input',function(){
var t=document.getElementById(box.getAttribute('data-filter')),w=box.value.toLowerCase();
Array.prototype.forEach.call(t.tBodies,function(b){
var r=b.rows,hit=!w||r[0].textContent.toLowerCase().indexOf(w)>=0,any=false;
for(var i=1;i<r.length;i++){var on=hit||r[i].textContent.toLowerCase().indexOf(w)>=0;
r[i].hidden=!on;any=any||on;}r[0].hidden=!(hit||any);});});});})();
"""


def _hash(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


_POLICY = (
    f"default-src 'none'; style-src {_hash(_STYLE)}; script-src {_hash(_SCRIPT)}; "
    "img-src 'none'; font-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'"
)


def html_text(text: str) -> str:
    """``text`` from a file, as HTML text or attribute content that shows it and nothing
    more: markup characters as entities, invisible and reordering characters (and lone
    surrogates) as visible ``\\xNN`` / ``\\uNNNN`` escapes."""
    return html.escape(escape_text(text), quote=True)


def number(value: float) -> str:
    """A coordinate in SVG: two decimals at most, never ``nan`` or ``inf``."""
    if not math.isfinite(value):
        return "0"
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def page(title: str, body: str) -> str:
    """The whole document: ``title`` (plain text, escaped here) and ``body`` (HTML made by
    the renderers, every file's text already escaped)."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{html_text(title)}</title>\n"
        f"<style>{_STYLE}</style>\n</head>\n<body>\n{body}"
        f"<script>{_SCRIPT}</script>\n</body>\n</html>\n"
    )


def check_path(path: str) -> str | None:
    """Why a page cannot be written at ``path``, or None: it must name a file in an existing,
    writable directory. Called before any reading is done."""
    return unwritable(path, "page")


def write_page(path: str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` whole (``output_file.write_output``): a temporary
    file of a random name, created new, renamed over it, so that a reader never opens half
    a page and nothing planted in a shared directory is written through."""
    write_output(path, text.encode("utf-8"))
