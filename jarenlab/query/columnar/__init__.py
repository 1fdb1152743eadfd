"""The columnar path's room: Arrow copies of schema-typed members, queried with pyarrow compute.

A third way to answer a query, beside SQL and the reference engine: the members a query reads kept
as Arrow arrays (:mod:`.columns`), current after every commit from the store's change log, and a
native plan answered over them (:mod:`.answer`, through :mod:`.filters`, :mod:`.groups`,
:mod:`.rows` and :mod:`.items`; group keys and date values in :mod:`.keys`, exact float sums in
:mod:`.exact`, medians and deviations in :mod:`.spread`). The
store's :class:`~jarenlab.query.columnar.path.Columns` (``store.columns``) keeps them within a budget
and answers the planner. It reads the database only through the planner's statements and the change
log; it writes no SQL of its own.

May import: the planner, the language, the foundation and the backends' protocols.
"""
