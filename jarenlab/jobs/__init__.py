"""The durable job queue: ``store.jobs``.

May import: the store and everything below it (a subsystem); its widget only on demand.

>>> from jarenlab.jobs import Jobs, Handlers, VirtualClock, current_job
"""

from __future__ import annotations

from jarenlab.lazy import exports

__getattr__ = exports(
    __name__,
    {
        "Context": "jarenlab.jobs.context",
        "Dag": "jarenlab.jobs.dag",
        "HandlerSpec": "jarenlab.jobs.registry",
        "Handlers": "jarenlab.jobs.registry",
        "Idle": "jarenlab.jobs.worker",
        "Jobs": "jarenlab.jobs.api",
        "Lease": "jarenlab.jobs.queue",
        "Limit": "jarenlab.jobs.limits",
        "Rate": "jarenlab.jobs.limits",
        "Stopped": "jarenlab.jobs.worker",
        "VirtualClock": "jarenlab.jobs.clock",
        "Worker": "jarenlab.jobs.worker",
        "backoff": "jarenlab.backoff",
        "current_job": "jarenlab.jobs.context",
    },
)

__all__ = [
    "Context",
    "Dag",
    "HandlerSpec",
    "Handlers",
    "Idle",
    "Jobs",
    "Lease",
    "Limit",
    "Rate",
    "Stopped",
    "VirtualClock",
    "Worker",
    "backoff",
    "current_job",
]
