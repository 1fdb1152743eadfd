"""Relations between collections, enforced: a delete's ``restrict``, ``cascade`` and ``set_null``
actions inside the write transaction (:mod:`.actions`), and the links of many-to-many relations,
written and removed through their join collection (:mod:`.links`). The declarations are the model's
(:mod:`jarenlab.model.relations`); graph loads that follow them are queries
(:mod:`jarenlab.query.loads`).

May import: the store and collections (it is a subsystem), the planner, the language, the model.
"""
