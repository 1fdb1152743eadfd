"""The job queue's states. Its two tables are the ``create_*`` statements of the backend's ``jobs`` catalogue.

``_jl_jobs`` holds one row per job. ``state`` is one of ``pending``, ``leased``, ``done``,
``failed`` (awaiting retry), ``dead`` (attempts exhausted) and ``cancelled``. ``due_at`` is the
claim key: ``run_at`` while the job waits, ``lease_until`` while it is leased (an expired lease
is claimable again: recovery is the next claim), NULL once the job is settled. ``seq`` is the
enqueue order (partitions run in it). ``_jl_job_checkpoints`` keeps named values a running job
saved (``ctx.checkpoint``, the DAG runner), stamped with the writing claim's generation.

>>> STATES[-3:]
('done', 'dead', 'cancelled')
"""

from __future__ import annotations

#: Every state a job can be in; the last three are terminal.
STATES = ("pending", "leased", "failed", "done", "dead", "cancelled")
