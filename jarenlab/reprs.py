"""HTML pieces shared by the notebook reprs (``_repr_html_``) and the pure view functions.

Each repr renders its own cells (their styles differ); the table around them is built here once,
so every table in a notebook has the same shape.

>>> table(["type", "handlers"], "<tr><td>a</td><td>b</td></tr>")
'<table><tr><th>type</th><th>handlers</th></tr><tr><td>a</td><td>b</td></tr></table>'
"""

from __future__ import annotations

import html
from collections.abc import Iterable


def table(head: Iterable[str], rows: str) -> str:
    """A table with one header row of the (escaped) names in ``head``, then the rendered ``rows``.

    >>> table(["a<b"], "")
    '<table><tr><th>a&lt;b</th></tr></table>'
    """
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    return f"<table><tr>{cells}</tr>{rows}</table>"
