"""Migration: what a migration did (or, for a dry run, would do), for a notebook to show.

>>> from jarenlab.migrations.plan import Step
>>> m = Migration([Step("add index", "t", "by_a on $.a", documents=3)], applied=True, dry_run=False,
...     violations=[], from_hash="a" * 64, to_hash="b" * 64, from_version=None, to_version=2,
...     documents=0, duration=0.01)
>>> m
<jarenlab.Migration applied: 1 step, 0 documents rewritten, 0 violations>
>>> m.to_frame()[["kind", "collection", "detail", "documents"]].to_dict("records")
[{'kind': 'add index', 'collection': 't', 'detail': 'by_a on $.a', 'documents': 3}]
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from jarenlab.reprs import table

if TYPE_CHECKING:
    import pandas as pd

    from jarenlab.migrations.plan import Step

#: The columns of :attr:`Migration.violations`.
VIOLATION_COLUMNS = ["collection", "key", "pointer", "message"]
#: How many violations the HTML repr shows (the DataFrame holds them all).
_SHOWN = 20


class Migration:
    """The result of ``store.migrate(...)``: its ``steps``, whether it was ``applied`` (False for a
    dry run or when nothing differs), ``violations`` (a DataFrame of collection, key, JSON
    Pointer and message: documents the new model refuses), ``documents`` (how many were rewritten
    or deleted), the model hashes and versions on both sides and the ``duration`` in seconds.
    It renders as HTML in a notebook; ``to_frame()`` gives the steps as a DataFrame."""

    def __init__(
        self,
        steps: list[Step],
        *,
        applied: bool,
        dry_run: bool,
        violations: list[tuple[str, Any, str, str]],
        from_hash: str,
        to_hash: str,
        from_version: int | None,
        to_version: int | None,
        documents: int,
        duration: float,
    ) -> None:
        self.steps = steps
        self.applied = applied
        self.dry_run = dry_run
        self._violations = violations
        self.from_hash = from_hash
        self.to_hash = to_hash
        self.from_version = from_version
        self.to_version = to_version
        self.documents = documents
        self.duration = duration

    @property
    def violations(self) -> pd.DataFrame:
        """The documents the new model refuses: collection, key, pointer (JSON Pointer into the
        document) and the validator's message, one row per problem."""
        return violations_frame(self._violations)

    def to_frame(self) -> pd.DataFrame:
        """The steps as a DataFrame: kind, collection, detail, how, documents."""
        import pandas as pd

        frame = pd.DataFrame(
            [s.as_dict() for s in self.steps], columns=["kind", "collection", "detail", "how", "documents"]
        )
        return frame.astype({"documents": "Int64"})

    @property
    def state(self) -> str:
        """``applied``, ``dry run`` or ``nothing to do``."""
        if self.applied:
            return "applied"
        return "dry run" if self.dry_run else "nothing to do"

    def __repr__(self) -> str:
        steps = len(self.steps)
        return (
            f"<jarenlab.Migration {self.state}: {steps} step{'' if steps == 1 else 's'}, "
            f"{self.documents:,} documents {self._rewritten}, {len(self._violations):,} violations>"
        )

    @property
    def _rewritten(self) -> str:
        return "to rewrite" if self.dry_run else "rewritten"

    def _repr_html_(self) -> str:
        def version(v: int | None) -> str:
            return "" if v is None else f" v{v}"

        head = (
            f"<b>migration</b> ({html.escape(self.state)}) <code>{self.from_hash[:12]}</code>"
            f"{version(self.from_version)} &rarr; <code>{self.to_hash[:12]}</code>{version(self.to_version)}"
            f" <small>{self.documents:,} documents {self._rewritten}, {self.duration:.2f} s</small>"
        )
        rows = "".join(
            "<tr>"
            + "".join(
                f"<td>{html.escape('' if v is None else f'{v:,}' if isinstance(v, int) else str(v))}</td>"
                for v in (s.kind, s.collection, s.detail, s.how, s.documents)
            )
            + "</tr>"
            for s in self.steps
        )
        steps = (
            table(["step", "collection", "detail", "how", "documents"], rows) if rows else "<p>no steps</p>"
        )
        out = f"<div>{head}{steps}"
        if self._violations:
            shown = "".join(
                "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                for row in self._violations[:_SHOWN]
            )
            more = len(self._violations) - _SHOWN
            out += (
                f"<p style='color:#c0392b'><b>{len(self._violations):,} violations</b> (the new model refuses "
                f"these documents; a transform must fix them)</p>{table(VIOLATION_COLUMNS, shown)}"
                + (f"<small>... {more:,} more in .violations</small>" if more > 0 else "")
            )
        return out + "</div>"


def violations_frame(rows: list[tuple[str, Any, str, str]]) -> pd.DataFrame:
    """Violations as a DataFrame with :data:`VIOLATION_COLUMNS`."""
    import pandas as pd

    return pd.DataFrame(rows, columns=VIOLATION_COLUMNS)
