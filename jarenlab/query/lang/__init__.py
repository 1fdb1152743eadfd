"""The language and its reference engine: the oracle every faster path is checked against.

What a query document means lives here and only here: parsing and canonical form (``document``),
paths, JSON values and their ordering (``values``, ``compare``), the function library, dates and
durations, I-Regexp, FLWOR evaluation, windows and series. It is small and plain on purpose.

May import: the foundation (``jarenlab.errors``, ``jarenlab.arguments``, ``jarenlab.pointer``) and
the standard library. Never the builder, the planner, the store or a backend.
"""
