"""The Jaren JSON query language: check, canonicalise, evaluate, and build documents.

>>> from jarenlab.query import evaluate, shape
>>> shape(evaluate({"$for": {"d": "$[*]"}, "$where": {"$eq": ["$d.k", 1]}, "$return": "$d.v"},
...                [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}]))
'a'
"""

from __future__ import annotations

from jarenlab.query.builder import Expr, OrderKey, Query, Queryable, agg, it, key, param, win
from jarenlab.query.document import canonical
from jarenlab.query.engine import CompiledQuery, compile_query, evaluate, shape
from jarenlab.query.join_builder import JoinQuery, var

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
