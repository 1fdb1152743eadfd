"""The durable job queue: ``store.jobs``.

May import: the store and everything below it (a subsystem); its widget only on demand.

>>> from jarenlab.jobs import Jobs, Handlers, VirtualClock, current_job, Schedules, Batch, Cron
"""

from __future__ import annotations

from jarenlab.lazy import exports

__getattr__ = exports(
    __name__,
    {
        "Batch": "jarenlab.jobs.fanout",
        "Context": "jarenlab.jobs.context",
        "Cron": "jarenlab.jobs.cron",
        "Dag": "jarenlab.jobs.dag",
        "HandlerSpec": "jarenlab.jobs.registry",
        "Handlers": "jarenlab.jobs.registry",
        "Idle": "jarenlab.jobs.worker",
        "Jobs": "jarenlab.jobs.api",
        "Lease": "jarenlab.jobs.queue",
        "Limit": "jarenlab.jobs.limits",
        "Rate": "jarenlab.jobs.limits",
        "Schedule": "jarenlab.jobs.periodic",
        "Schedules": "jarenlab.jobs.periodic",
        "Stopped": "jarenlab.jobs.worker",
        "VirtualClock": "jarenlab.jobs.clock",
        "Worker": "jarenlab.jobs.worker",
        "backoff": "jarenlab.backoff",
        "current_job": "jarenlab.jobs.context",
    },
)

__all__ = [
    "Batch",
    "Context",
    "Cron",
    "Dag",
    "HandlerSpec",
    "Handlers",
    "Idle",
    "Jobs",
    "Lease",
    "Limit",
    "Rate",
    "Schedule",
    "Schedules",
    "Stopped",
    "VirtualClock",
    "Worker",
    "backoff",
    "current_job",
]
