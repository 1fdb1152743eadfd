"""Store-level queries: joins of several collections and as-of pairing, planned, run and explained.

A join reads each side through the one-collection planner (``jarenlab.query.planner``) and pairs
rows in SQL where it can (``plan``, ``sql``, ``asof``), in Python where it must (``run``); ``explain``
shows the join order. Answers are checked against the reference engine like every fast path.

May import: the planner, the language, the builder, the foundation and the backends' protocols.
"""
