"""The Jaren JSON query language: check, canonicalise, evaluate, and build documents.

May import: the builder and the language (this is the language's front door, not the planner's).

>>> from jarenlab.query import evaluate, shape
>>> shape(evaluate({"$for": {"d": "$[*]"}, "$where": {"$eq": ["$d.k", 1]}, "$return": "$d.v"},
...                [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}]))
'a'
"""

from __future__ import annotations

from jarenlab.query.build.builder import Expr, OrderKey, Query, Queryable, agg, it, key, param, win
from jarenlab.query.build.joins import JoinQuery, var
from jarenlab.query.lang.document import canonical
from jarenlab.query.lang.engine import CompiledQuery, compile_query, evaluate, shape

__all__ = [
    "CompiledQuery",
    "Expr",
    "JoinQuery",
    "OrderKey",
    "Query",
    "Queryable",
    "agg",
    "canonical",
    "compile_query",
    "evaluate",
    "it",
    "key",
    "param",
    "shape",
    "var",
    "win",
]
