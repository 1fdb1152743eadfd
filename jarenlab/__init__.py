"""jarenlab: a notebook-native document store on SQLite."""

from __future__ import annotations

from jarenlab.errors import JarenlabError

__all__ = ["JarenlabError"]
