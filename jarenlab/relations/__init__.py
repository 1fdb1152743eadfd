"""Relations between collections: declared in the model (:mod:`.declare`), enforced on delete
(:mod:`.actions`), and followed by one-statement graph loads (:mod:`.load`)."""
