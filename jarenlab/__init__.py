"""jarenlab: a notebook-native document store on SQLite.

>>> import jarenlab as jl
>>> jl.open  # doctest: +ELLIPSIS
<function open at ...>
"""

from __future__ import annotations

from jarenlab.collection import Collection
from jarenlab.errors import CODES, JarenlabError
from jarenlab.store import Store, open

__all__ = ["CODES", "Collection", "JarenlabError", "Store", "open"]
