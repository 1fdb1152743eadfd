"""Tables the store keeps for itself (jobs, events, change log, idempotency results).

Each subsystem owns its statements; this module only gathers them so a fresh store creates all
of them on open (``CREATE ... IF NOT EXISTS``), in one transaction.
"""

from __future__ import annotations

from jarenlab.events.tables import EVENTS_DDL
from jarenlab.idempotency import RESULTS_DDL
from jarenlab.jobs.schema import DDL as JOBS_DDL
from jarenlab.live.capture import CHANGES_DDL

INTERNAL_DDL: tuple[str, ...] = (*EVENTS_DDL, RESULTS_DDL, *JOBS_DDL, *CHANGES_DDL)
