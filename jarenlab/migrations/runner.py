"""Carry a migration out: one transaction, DDL from the backend, documents walked in pages.

The order inside the transaction (``store.migrate`` holds the store's write lock throughout; on
PostgreSQL each migrated table is also locked against other writers, readers go on):

1. read the stored model (JD0020 when it is not the one this store opened with), refuse a
   downgrade (JD0022), make the :class:`~jarenlab.migrations.plan.Plan`, count documents;
2. each collection's :attr:`~jarenlab.backends.base.Alteration.before` statements: drops,
   renames, new tables, and what the documents' new shape would trip over;
3. the walk: every document of a collection with a transform or a changed schema is read in
   pages, transformed, checked like any write, and rewritten (only when it changed);
   violations are collected, all of them, and refuse the migration (JD0021 / JD0023);
4. stored records are checked against added interval declarations
   (:func:`jarenlab.intervals.check_existing`), then the ``after`` statements: typed columns,
   indexes, interval indexes or constraints;
5. the new model, its hash and shape are recorded, the shape verified, the history row written.

Anything that fails rolls everything back; a killed process leaves the old model and data (the
database never commits half a transaction). After the commit the store adopts the new model
(:meth:`jarenlab.store.Store.reload`): collections are rebound, the statement cache emptied, live
queries re-seeded. A store in another process notices at its next write: the write is rolled
back with JD2110 (retryable) and that store adopts the new model too.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import TYPE_CHECKING, Any

import jsonschema_rs
import orjson

from jarenlab import frames, intervals, pointer
from jarenlab.collection import Collection
from jarenlab.errors import JarenlabError, MigrationError, ModelError, StoreError, ValidationError
from jarenlab.migrations.links import link_violations
from jarenlab.migrations.migration import Migration, violations_frame
from jarenlab.migrations.plan import Pair, Plan, Step, make_plan
from jarenlab.model import Model, load_model, refuse_downgrade

if TYPE_CHECKING:
    import pandas as pd

    from jarenlab.store import Store

#: Documents read, transformed and rewritten at a time.
PAGE = 5_000
#: Violations kept in an error's ``errors`` list (the DataFrame holds all of them).
_LISTED = 20


class Migrator:
    """The store's migrations (``store.migrate``, ``store.migrations()``), and the guard that
    rolls back a write made under a model another process has since migrated away."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._local = threading.local()
        if not store.read_only:
            self._follows_own = store.changes.follows_own
            store.db.on_commit(before=self._guard)

    # -- the guard ---------------------------------------------------------------------------------
    def _guard(self, changes: list[Any]) -> None:
        """Before a commit that wrote documents: the stored model must still be this store's.

        Every migration commits a change record, and the change hub's hook (registered before
        this one) has just appended this commit's: when it directly follows this store's last
        one, nobody else committed since and nothing needs reading."""
        if not changes or getattr(self._local, "running", False):
            return
        store = self.store
        if self._follows_own() or store.stored_hash() == store.model.hash:
            return
        store.reload()
        raise StoreError(
            "JD2110",
            "the store was migrated by another process (now "
            f"{_version_text(store.model)}); this transaction was rolled back and the store now uses "
            "the new model: run it again",
            retryable=True,
        )

    # -- history -----------------------------------------------------------------------------------
    def history(self) -> pd.DataFrame:
        """Every applied migration, oldest first: id, at (UTC), from/to hash and version, the
        steps (a summary; ``plan`` holds them as dicts), documents rewritten, duration (s)."""
        import pandas as pd

        rows = self.store.db.all("migrations.history")
        records = []
        for rid, at_ms, from_hash, to_hash, from_version, to_version, steps, documents, duration in rows:
            plan = orjson.loads(steps)
            records.append(
                {
                    "id": rid,
                    "at": pd.Timestamp(at_ms, unit="ms", tz="UTC"),
                    "from_hash": from_hash[:12],
                    "to_hash": to_hash[:12],
                    "from_version": from_version,
                    "to_version": to_version,
                    "steps": "; ".join(
                        f"{s['kind']} {s['collection']}" if s["collection"] else s["kind"] for s in plan
                    ),
                    "documents": documents,
                    "duration_s": round(duration / 1000, 3),
                    "plan": plan,
                }
            )
        columns = ["id", "at", "from_hash", "to_hash", "from_version", "to_version", "steps"]
        frame = pd.DataFrame(records, columns=[*columns, "documents", "duration_s", "plan"])
        return frame.astype(
            {"id": "Int64", "from_version": "Int64", "to_version": "Int64", "documents": "Int64"}
        )

    # -- migrate -------------------------------------------------------------------------------------
    def migrate(
        self,
        new_model: Any,
        *,
        transforms: Any = None,
        renames: Any = None,
        drop: Any = None,
        dry_run: bool = False,
        progress: bool = True,
    ) -> Migration:
        """See :meth:`jarenlab.store.Store.migrate`."""
        store, db = self.store, self.store.db
        for name, flag in (("dry_run", dry_run), ("progress", progress)):
            if type(flag) is not bool:
                raise StoreError("JD0006", f"{name} must be True or False, not {flag!r}")
        if db.in_transaction:
            raise MigrationError(
                "JD2112", "a migration is a transaction of its own: run it outside store.transaction()"
            )
        if store.read_only and not dry_run:
            raise MigrationError("JD2112", "the store is read-only: only a dry run can plan a migration")
        new = load_model(new_model)
        started = time.perf_counter()
        if dry_run:
            with db.snapshot():
                return self._run(new, transforms, renames, drop, True, progress, started)
        self._local.running = True
        try:
            with db.transaction():
                db.serialize("ddl")
                result = self._run(new, transforms, renames, drop, False, progress, started)
        except MigrationError as err:
            if err.code == "JD0020":
                store.reload()
            raise
        finally:
            self._local.running = False
        if result.applied:
            store.reload(new)  # its shape was verified inside the transaction
        return result

    def _run(
        self,
        new: Model,
        transforms: Any,
        renames: Any,
        drop: Any,
        dry: bool,
        progress: bool,
        started: float,
    ) -> Migration:
        store, db = self.store, self.store.db
        if store.stored_hash() != store.model.hash:
            old = store.stored_model()
            raise MigrationError(
                "JD0020",
                f"the store's model changed since it was opened (another process migrated it to "
                f"{_version_text(old)}); this store now uses it: plan the migration again",
            )
        old = store.model
        refuse_downgrade(old, new)
        if new.version is not None and new.version == old.version and new.hash != old.hash:
            raise ModelError(
                "JD0022",
                f"the model changed but its version is still {new.version}: give the new model a higher "
                '"version" (two models under one version would mean two different stores)',
                doc_path="/version",
            )
        last = db.value("migrations.last")
        if last is not None and last != old.hash:
            raise ModelError(
                "JD0022",
                f"the history's last migration ends at model {last[:12]}, but the store holds "
                f"{old.hash[:12]}: the store's model was changed outside a migration",
            )
        plan = make_plan(old, new, transforms=transforms, renames=renames, drop=drop)
        # A dry run counts every collection a step touches; an applied migration only those it walks
        # or drops (counting a table is a scan of its own, not worth it for a number in the result).
        counted = [p.old.name for p in plan.pairs if p.old and p.steps and (dry or p.walk or not p.new)]
        counts = {name: store.collection(name).count() for name in counted}
        for name in plan.unnamed_drops:
            raise MigrationError(
                "JD0061",
                f"the new model leaves out {name!r}, which holds {counts[name]:,} documents: name it in "
                f"drop=[{name!r}] to remove it with them (or in renames to keep them)",
                collection=name,
            )
        if not plan.steps:  # the same model and no transform
            return self._result(plan, False, dry, [], 0, started)
        alterations = {id(p): store.backend.alter(p.old, p.new) for p in plan.pairs}
        for pair in plan.pairs:
            _count(pair, counts, alterations[id(pair)].rebuild)
        conn = db.connection()
        if not dry:
            store.backend.prepare(conn, new)
            for pair in plan.pairs:
                with db.translating(collection=pair.name):
                    for sql in alterations[id(pair)].before:
                        db.run_built(sql)
        violations: list[tuple[str, Any, str, str]] = []
        rewritten = 0
        for pair in plan.pairs:
            if pair.walk:
                rewritten += self._walk(pair, counts, violations, dry, progress)
        if violations and not dry:
            raise _refusal(plan, violations)
        for pair in plan.pairs:
            if pair.check_intervals and pair.new is not None and pair.old is not None:
                self._check_intervals(pair, dry, violations)
        self._check_links(plan, dry, violations)
        if not dry:
            for pair in plan.pairs:
                self._after(pair, alterations[id(pair)].after)
            store.write_model(new)  # and verify the shape
            result = self._result(plan, True, dry, violations, rewritten, started)
            db.run(
                "migrations.record",
                {
                    "at_ms": int(store.backend.clock() * 1000),
                    "from_hash": old.hash,
                    "to_hash": new.hash,
                    "from_version": old.version,
                    "to_version": new.version,
                    "steps": orjson.dumps([s.as_dict() for s in result.steps]).decode(),
                    "documents": rewritten,
                    "duration_ms": result.duration * 1000,
                },
            )
            # Last, so nothing after it can fail and leave the mark on this thread's next commit.
            # Every migration commits a change record (other stores' guards rely on it).
            store.changes.migrating({p.name for p in plan.pairs if p.transform is not None})
            return result
        return self._result(plan, False, dry, violations, rewritten, started)

    def _result(
        self,
        plan: Plan,
        applied: bool,
        dry: bool,
        violations: list[tuple[str, Any, str, str]],
        rewritten: int,
        started: float,
    ) -> Migration:
        return Migration(
            plan.steps,
            applied=applied,
            dry_run=dry,
            violations=violations,
            from_hash=plan.old.hash,
            to_hash=plan.new.hash,
            from_version=plan.old.version,
            to_version=plan.new.version,
            documents=rewritten,
            duration=time.perf_counter() - started,
        )

    def _walk(
        self,
        pair: Pair,
        counts: dict[str, int],
        violations: list[tuple[str, Any, str, str]],
        dry: bool,
        progress: bool,
    ) -> int:
        """Read every document of ``pair``, transform, check, and (unless ``dry``) rewrite it;
        append what the new model refuses to ``violations``; return how many were rewritten."""
        assert pair.old is not None and pair.new is not None
        store, new, fn = self.store, pair.new, pair.transform
        checker = Collection(store, new)  # checks against the new declaration, writes its table
        reader = checker if not dry else store.collection(pair.old.name)
        validator = jsonschema_rs.validator_for(new.schema)
        keyed = new.key is not None
        total = counts[pair.old.name]
        what = "transform" if fn is not None else "check"
        bar = frames.progress(total, f"{what} {new.name}", progress and total > 0)
        rewritten = 0
        loads = orjson.loads
        holding = dict.fromkeys(pair.undeclared, 0)
        for page in reader.pages(PAGE):
            updates: list[tuple[Any, str, dict[str, Any]]] = []
            deletes: list[Any] = []
            for key, text in page:
                doc, shown = loads(text), checker.shown(key)
                if fn is not None:
                    try:
                        out = fn(doc)
                    except Exception as exc:
                        raise MigrationError(
                            "JD0023",
                            f"the transform of {new.name!r} raised {type(exc).__name__}: {exc}; "
                            "nothing was migrated",
                            collection=new.name,
                            key=shown,
                        ) from exc
                    if out is None:
                        deletes.append(key)
                        continue
                else:
                    out = doc
                for member in holding:
                    if isinstance(out, dict) and member in out:
                        holding[member] += 1
                try:
                    own, good, written = checker.prepare(out)
                except ValidationError as err:
                    if err.code != "JD2003":
                        raise _not_a_document(new.name, shown, err) from err
                    for e in validator.iter_errors(out):
                        violations.append((new.name, shown, pointer.of(e.instance_path), e.message))
                    continue
                except StoreError as err:
                    raise _not_a_document(new.name, shown, err) from err
                if keyed and own != key:
                    raise MigrationError(
                        "JD0024",
                        f"the transform of {new.name!r} changed the key {shown!r} to "
                        f"{checker.shown(own)!r}: a migration keeps every document under its key",
                        collection=new.name,
                        key=shown,
                    )
                if fn is not None and written != text:
                    updates.append((key, written, good))
            if not dry and not violations and (updates or deletes):
                checker.rewrite(updates, deletes)
            rewritten += len(updates) + len(deletes)
            bar.update(len(page))
        bar.close()
        undeclared = iter(pair.undeclared)
        for step in pair.steps:
            if step.kind == "transform":
                step.documents = rewritten
            elif step.kind == "undeclared member":
                step.documents = holding[next(undeclared)]
        return rewritten

    def _check_intervals(self, pair: Pair, dry: bool, violations: list[tuple[str, Any, str, str]]) -> None:
        """Stored records against the new declarations (a clash names both keys). A dry run
        checks the stored data when no transform will change it, and lists a clash as a violation."""
        assert pair.old is not None and pair.new is not None
        spec = pair.new
        if dry:
            if pair.transform is not None:
                return
            spec = dataclasses.replace(pair.new, name=pair.old.name)  # the table keeps its old name
        try:
            intervals.check_existing(self.store.db, spec, pair.new.name)
        except JarenlabError as err:
            if dry:
                violations.append((pair.new.name, err.key, "", err.reason))
                return
            raise MigrationError(
                "JD0023",
                f"an interval declaration of {pair.new.name!r} does not hold for the stored records: "
                f"{err.reason}; nothing was migrated",
                collection=pair.new.name,
                key=err.key,
            ) from err

    def _check_links(self, plan: Plan, dry: bool, violations: list[tuple[str, Any, str, str]]) -> None:
        """The join documents of the many-to-many relations the plan adds (:mod:`.links`). A dry
        run reads the stored data, so it checks a relation only when no transform changes it."""
        store = self.store
        sources = {p.new.name: p for p in plan.pairs if p.new is not None}

        def read(name: str) -> Collection | None:
            pair = sources[name]
            if pair.old is None:
                return None
            return store.collection(pair.old.name) if dry else Collection(store, plan.new.collections[name])

        for rel in plan.links:
            ends = (rel.holder, rel.target, rel.to)
            if dry and any(sources[n].transform is not None for n in ends):
                continue
            found = link_violations(rel, read)
            if found and not dry:
                first = found[0]
                raise MigrationError(
                    "JD0023",
                    f"the many-to-many relation {rel.collection}.{rel.name} does not hold for the stored "
                    f"{rel.holder} documents: {len(found):,} problems (first: key {first[1]!r}, "
                    f"{first[2] or '(root)'}: {first[3]}); nothing was migrated (unlink or fix them first)",
                    collection=rel.holder,
                    key=first[1],
                    errors=[f"{c} {k!r} {p or '(root)'}: {m}" for c, k, p, m in found[:_LISTED]],
                )
            violations.extend(found)

    def _after(self, pair: Pair, statements: tuple[str, ...]) -> None:
        db = self.store.db
        for sql in statements:
            try:
                with db.translating(collection=pair.name):
                    db.run_built(sql)
            except StoreError as err:
                if err.condition not in ("duplicate", "exclusion"):
                    raise
                raise MigrationError(
                    "JD0023",
                    f"{pair.name!r} cannot take its new "
                    + ("unique index" if err.condition == "duplicate" else "interval constraint")
                    + f": two stored documents share a value it refuses ({err.reason}); "
                    "nothing was migrated (a transform can make them distinct)",
                    collection=pair.name,
                ) from err


def _count(pair: Pair, counts: dict[str, int], rebuild: bool) -> None:
    """Put the collection's document count on its steps; mark a rebuild."""
    n = 0 if pair.old is None else counts.get(pair.old.name)
    for step in pair.steps:
        if step.kind != "transform":
            step.documents = n
    if rebuild:
        pair.steps.append(
            Step(
                "rebuild",
                pair.name,
                "the table is copied into a new one (typed columns reordered)",
                "rebuild",
                n,
            )
        )


def _not_a_document(collection: str, key: Any, err: StoreError) -> MigrationError:
    return MigrationError(
        "JD0024",
        f"the transform of {collection!r} returned something that cannot be stored ({err.reason})",
        collection=collection,
        key=key,
    )


def _refusal(plan: Plan, violations: list[tuple[str, Any, str, str]]) -> MigrationError:
    """JD0021 (no transform for a refused collection) or JD0023 (a transform's output is refused)."""
    first = violations[0]
    transformed = {p.name for p in plan.pairs if p.transform is not None}
    code = "JD0023" if first[0] in transformed else "JD0021"
    keys = len({(c, k) for c, k, _, _ in violations})
    why = (
        "the transform's output is refused by the new schema"
        if code == "JD0023"
        else "the new schema refuses stored documents and no transform fixes them"
    )
    err = MigrationError(
        code,
        f"{why}: {keys:,} documents ({len(violations):,} problems; first: key {first[1]!r}, "
        f"{first[2] or '(root)'}: {first[3]}); nothing was migrated. err.violations lists them all; "
        "store.migrate(..., dry_run=True) shows the plan",
        collection=first[0],
        key=first[1],
        errors=[f"{c} {k!r} {p or '(root)'}: {m}" for c, k, p, m in violations[:_LISTED]],
    )
    err.violations = violations_frame(violations)
    return err


def _version_text(model: Model) -> str:
    return f"model {model.hash[:12]}" + ("" if model.version is None else f", version {model.version}")
