"""Graph loads: a collection's documents with their related documents, in one statement.

``collection.load(spec)`` plans a tree of levels over declared relations (``plan``), writes the one
statement that builds each document whole (``sql``), and runs and explains it (``run``). Like every
fast path, a load is checked against the N+1 loop the reference engine answers.

May import: the planner, the language, the builder's expressions, the model and the backends'
protocols. Never a collection or the store: what it needs of one is the planner's ``Readable``.
"""
