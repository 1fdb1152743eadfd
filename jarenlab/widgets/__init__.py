"""Notebook views (thin: what they show is computed by pure functions in the subsystems).

May import: every room (the views sit on top); loaded only when a notebook asks for a widget.

The live table and the jobs dashboard are anywidgets with small front ends of their own in
``static/``; :func:`require_anywidget` says clearly when that package is missing.
"""

from __future__ import annotations

import importlib.util

from jarenlab.errors import StoreError


def require_anywidget() -> None:
    """Raise JD2130 when ``anywidget`` (the ``widgets`` extra) is not installed."""
    if importlib.util.find_spec("anywidget") is None:
        raise StoreError(
            "JD2130",
            "live tables and the jobs dashboard need anywidget: pip install 'jarenlab[widgets]'",
        )
