"""The columnar path's room: Arrow copies of schema-typed members, queried with pyarrow compute.

Reserved for a third way to answer a query, beside SQL and the reference engine: the members a query
reads kept as Arrow arrays, current after every commit, evaluated with pyarrow's compute functions and
Acero. Like every fast path it is to be checked against the reference engine. It holds no code yet.

May import: the planner, the language, the foundation and the backends' protocols.
"""
