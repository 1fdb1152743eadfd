"""Fan-out: a batch of jobs whose completion enqueues one combining job with their results, in order.

``jobs.fan_out("fetch", payloads, then="combine")`` enqueues one ``fetch`` job per payload (ids
``"<batch>~0"``, ``"<batch>~1"``, ...) in one transaction with the batch's record. Each member's
settlement (done, dead or cancelled; a retry is not one) records its outcome in the same
transaction, once; the settlement that completes the batch enqueues the combiner, id
``"<batch>~then"``, in that transaction too, so it is enqueued exactly once even when the last two
members settle at the same moment in two processes (the batch's row is the turnstile). The
combiner's payload::

    {"batch": "<id>", "results": [r0, r1, ...],        # in payload order; None where a job failed
     "failures": [{"position": 1, "job": "<id>~1", "outcome": "dead", "error": "..."}],
     "payload": <then_payload>}

A member that dead-letters (or is cancelled) does not stop the batch: the combiner runs with the
failure marked, and decides. A member requeued after it settled keeps its first outcome.

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {"notes": {"schema": {"type": "object"}, "key": None, "identity": "integer"}}}
>>> with jl.open(model=model) as store:
...     jobs = store.jobs
...     @jobs.handler("square")
...     def square(n, ctx):
...         return n * n
...     @jobs.handler("total")
...     def total(payload, ctx):
...         return sum(payload["results"])
...     batch = jobs.fan_out("square", [1, 2, 3], then="total", id="squares")
...     _ = jobs.run_until_idle(progress=False)
...     batch.progress()["done"], jobs.get(batch.combiner)["result"]
(3, 14)
"""

from __future__ import annotations

import html
from collections import Counter
from typing import TYPE_CHECKING, Any

from jarenlab.errors import JobError
from jarenlab.jobs.cron import iso
from jarenlab.jobs.members import MARK, combine, member_id
from jarenlab.jobs.queue import dumps
from jarenlab.reprs import table

if TYPE_CHECKING:
    from collections.abc import Iterable

    import pandas as pd

    from jarenlab.jobs.api import Jobs

_BATCH = ("id", "kind", "then", "size", "settled", "failed", "combiner", "created_at", "completed_at")


def fan_out(
    jobs: Jobs,
    kind: str,
    payloads: Iterable[Any],
    *,
    then: str,
    id: str | None = None,
    then_payload: Any = None,
    max_attempts: int | None = None,
    partition_key: str | None = None,
) -> Batch:
    """Enqueue the batch and its jobs in one transaction; see ``Jobs.fan_out``."""
    if isinstance(payloads, dict | str | bytes) or not hasattr(payloads, "__iter__"):
        raise JobError("JD2183", f"payloads is a list of JSON values, not {type(payloads).__name__}")
    items = list(payloads)
    if type(then) is not str or not then:
        raise JobError("JD2183", f"then names the combining job's kind, not {then!r}")
    batch = id if id is not None else jobs.queue.new_id()
    if type(batch) is not str or not batch or MARK in batch:
        raise JobError("JD2183", f"a batch id is a non-empty string without {MARK!r}, not {batch!r}")
    try:
        then_text = dumps(then_payload)
    except TypeError as exc:
        raise JobError("JD2183", f"then_payload is not JSON: {exc}", key=batch) from exc
    spec = jobs.handlers.get(then)
    budget = spec.max_attempts if spec is not None and spec.max_attempts else jobs.max_attempts
    store = jobs.store
    members = [
        {"kind": kind, "payload": p, "id": member_id(batch, i), "max_attempts": max_attempts,
         "partition_key": partition_key}
        for i, p in enumerate(items)
    ]  # fmt: skip
    with store.transaction():
        params = {"id": batch, "kind": kind, "then_kind": then, "then_payload": then_text,
                  "then_attempts": budget, "size": len(items), "now": jobs.clock()}  # fmt: skip
        if store.db.run("batches.insert", params) != 1:
            raise JobError("JD2183", f"batch {batch!r} already exists", key=batch)
        if members:
            store.db.many("batches.insert_member", [
                {"batch_id": batch, "position": i, "job_id": m["id"]} for i, m in enumerate(members)
            ])  # fmt: skip
            jobs.enqueue_many([{k: v for k, v in m.items() if v is not None} for m in members])
        else:
            combine(jobs.queue, batch, then, then_text, budget)
    return Batch(jobs, batch)


class Batch:
    """A fan-out batch: its jobs' progress and its combiner. ``jobs.batch(id)`` finds one."""

    def __init__(self, jobs: Jobs, id: str) -> None:
        self.jobs = jobs
        self.id = id

    def record(self) -> dict[str, Any]:
        """The batch as a dict: ``kind``, ``then``, ``size``, ``settled``, ``failed`` (dead or
        cancelled members), ``combiner`` (its job id once enqueued), times in epoch seconds."""
        row = self.jobs.store.db.one("batches.get", {"id": self.id})
        if row is None:
            raise JobError("JD2184", f"no batch {self.id!r}", key=self.id)
        return dict(zip(_BATCH, row, strict=True))

    @property
    def combiner(self) -> str | None:
        """The combining job's id once the batch completed (None before)."""
        return self.record()["combiner"]

    def progress(self) -> dict[str, Any]:
        """How many members are in each job state, ``size``, ``settled``, and the combiner's id and
        state (None until it is enqueued)."""
        record = self.record()
        members = self.members()
        counts = Counter(m["state"] for m in members)
        combiner = record["combiner"]
        done = {
            state: counts.get(state, 0)
            for state in ("pending", "leased", "failed", "done", "dead", "cancelled")
        }
        return {
            "size": record["size"], "settled": record["settled"], **done, "combiner": combiner,
            "combiner_state": None if combiner is None else self.jobs.queue.state(combiner),
        }  # fmt: skip

    def members(self) -> list[dict[str, Any]]:
        """Each member in payload order: ``position``, ``job``, its ``state`` and ``attempts`` now, and
        the ``outcome`` and ``error`` the batch recorded when it settled."""
        names = ("position", "job", "state", "attempts", "outcome", "error")
        rows = self.jobs.store.db.all("batches.members", {"id": self.id})
        return [dict(zip(names, row, strict=True)) for row in rows]

    def frame(self) -> pd.DataFrame:
        """The members as a DataFrame indexed by position."""
        import pandas as pd

        columns = ["position", "job", "state", "attempts", "outcome", "error"]
        return pd.DataFrame.from_records(self.members(), columns=columns).set_index("position")

    def __repr__(self) -> str:
        p = self.progress()
        return f"<Batch {self.id!r}: {p['settled']}/{p['size']} settled, combiner {p['combiner_state'] or 'waiting'}>"

    def _repr_html_(self) -> str:
        record = self.record()
        p = self.progress()
        size = max(p["size"], 1)
        colours = (("done", "#27ae60"), ("dead", "#c0392b"), ("cancelled", "#7f8c8d"), ("leased", "#2980b9"),
                   ("failed", "#e67e22"))  # fmt: skip
        bar = "".join(
            f"<div style='width:{100 * p[state] / size:.1f}%;background:{colour};height:10px'></div>"
            for state, colour in colours
            if p[state]
        )
        head = (
            f"<b>batch {html.escape(self.id)}</b>: {p['size']} <code>{html.escape(record['kind'])}</code> jobs "
            f"&rarr; <code>{html.escape(record['then'])}</code>; {p['settled']} settled "
            f"({record['failed']} failed), combiner: {html.escape(p['combiner_state'] or 'waiting')}"
        )
        strip = f"<div style='display:flex;width:320px;background:#ecf0f1'>{bar}</div>"
        counts = "".join(
            f"<td>{p[s]}</td>" for s in ("pending", "leased", "failed", "done", "dead", "cancelled")
        )
        return (
            head
            + strip
            + table(["pending", "leased", "failed", "done", "dead", "cancelled"], f"<tr>{counts}</tr>")
        )


def batch_records(jobs: Jobs, limit: int = 20) -> list[dict[str, Any]]:
    """The latest batches as dicts (newest first), created and completed times as ISO strings."""
    rows = jobs.store.db.all("batches.list", {"limit": int(limit)})
    out = []
    for row in rows:
        record = dict(zip(_BATCH, row, strict=True))
        record["created_at"], record["completed_at"] = iso(record["created_at"]), iso(record["completed_at"])
        out.append(record)
    return out


class FanOut:
    """The queue's fan-out batches (mixed into :class:`~jarenlab.jobs.api.Jobs`)."""

    def fan_out(
        self,
        kind: str,
        payloads: Iterable[Any],
        *,
        then: str,
        id: str | None = None,
        then_payload: Any = None,
        max_attempts: int | None = None,
        partition_key: str | None = None,
    ) -> Batch:
        """Enqueue one ``kind`` job per payload and, once every one has settled, one ``then`` job
        with their results in order (see :mod:`jarenlab.jobs.fanout`).

        Args:
            kind: the batch's job kind. payloads: one JSON value per job (none: the combiner at once).
            then: the combining job's kind; its payload is ``{"batch", "results", "failures", "payload"}``.
            id: the batch's id (default generated; no ``~``); its jobs are ``<id>~0`` ... and ``<id>~then``.
            then_payload: a JSON value handed to the combiner as ``payload``.
            max_attempts, partition_key: as :meth:`enqueue`'s, for every job of the batch.

        Raises:
            JobError: JD2183 for bad arguments or a batch id already taken; JD2125 as enqueue's.

        >>> batch = store.jobs.fan_out("fetch", days, then="combine")  # doctest: +SKIP
        """
        jobs: Jobs = self  # type: ignore[assignment]
        return fan_out(jobs, kind, payloads, then=then, id=id, then_payload=then_payload,
                       max_attempts=max_attempts, partition_key=partition_key)  # fmt: skip

    def batch(self, id: str) -> Batch:
        """The fan-out batch ``id`` (JD2184 when there is none)."""
        jobs: Jobs = self  # type: ignore[assignment]
        found = Batch(jobs, id)
        found.record()
        return found

    def batches(self, *, limit: int = 20) -> pd.DataFrame:
        """The latest batches as a DataFrame indexed by id: kind, combiner kind, size, settled,
        failed, the combiner's id, created and completed (ISO UTC)."""
        import pandas as pd

        jobs: Jobs = self  # type: ignore[assignment]
        return pd.DataFrame.from_records(batch_records(jobs, limit), columns=list(_BATCH)).set_index("id")


__all__ = ["Batch", "FanOut", "batch_records", "fan_out"]
