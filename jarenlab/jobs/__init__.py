"""The durable job queue: ``store.jobs``.

>>> from jarenlab.jobs import Jobs, Handlers, VirtualClock, current_job
"""

from __future__ import annotations

from jarenlab.jobs.api import Jobs
from jarenlab.jobs.clock import VirtualClock, backoff
from jarenlab.jobs.context import Context, current_job
from jarenlab.jobs.dag import Dag
from jarenlab.jobs.queue import Lease
from jarenlab.jobs.registry import Handlers, HandlerSpec
from jarenlab.jobs.worker import Idle, Stopped, Worker
from jarenlab.store import Subsystem

#: Registered with every store by :func:`jarenlab.open`.
SUBSYSTEM = Subsystem("jobs", create=Jobs, stats=lambda jobs: jobs.counts())

__all__ = [
    "SUBSYSTEM",
    "Context",
    "Dag",
    "HandlerSpec",
    "Handlers",
    "Idle",
    "Jobs",
    "Lease",
    "Stopped",
    "VirtualClock",
    "Worker",
    "backoff",
    "current_job",
]
