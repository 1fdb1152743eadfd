"""The planner for one collection: a query document in, SQL plus a residual for the engine out.

Analysis of the document's shape (``plan``), predicates (``preds``), their translation to the
dialect's SQL (``translate``, ``sql``), decoding rows back to values (``decode``), running with the
statement cache (``run``, ``cache``, ``residual``), and what a user sees of it: ``explain``, the plan
``tree``, schema-aware ``diagnose``, ``profile``. Keyed reads (``keyed``) and keyset pages
(``pages``) are planned queries too. Every answer here is checked against the reference engine.

May import: the language, the builder's values, the foundation, and the backends' protocols
(``jarenlab.backends.base``: SQL is spelled by the dialect, never written here). Never the store,
a collection or a subsystem: what it needs of a collection is the :class:`Readable` protocol.
"""
