"""The columns' exact sums against the engine's ``$sum`` (``exact_sum``), value for value."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jarenlab.query.columnar.exact import group_levels, group_sums, int_sums
from jarenlab.query.lang.functions import exact_sum

FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-1000, max_value=1000).map(lambda x: round(x, 2)),
    st.sampled_from([0.1, 0.2, 0.3, 1e16, -1e16, 1.0, 2.0**60, 5e-324, -0.0, 1.7e308, -1.7e308]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), FLOATS), max_size=60))
def test_group_sums_are_the_engines_sums(pairs: list[tuple[int, float]]) -> None:
    groups = np.array([g for g, _ in pairs], dtype=np.int64)
    values = np.array([v for _, v in pairs], dtype=np.float64)
    got = group_sums(values, groups, 4)
    for g in range(4):
        items = [v for gg, v in pairs if gg == g]
        want = exact_sum(items, "") if items else 0.0
        assert repr(got[g]) == repr(want) or (math.isnan(got[g]) and math.isnan(want)), (g, items)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), FLOATS), max_size=60), st.integers(1, 9))
def test_levels_worked_on_in_blocks_hold_each_groups_exact_sum(
    pairs: list[tuple[int, float]], block: int
) -> None:
    """Blocks of any size give levels whose sums are each group's exact sum, and leave out the
    groups one block gives."""
    groups = np.array([g for g, _ in pairs], dtype=np.int64)
    values = np.array([v for _, v in pairs], dtype=np.float64)
    levels, slow = group_levels(values, groups, 4, block=block)
    assert slow == group_levels(values, groups, 4, block=len(pairs) or 1)[1]
    for g in range(4):
        if g not in slow:
            want = sum((Fraction(v) for gg, v in pairs if gg == g), Fraction(0))
            assert sum((Fraction(float(level[g])) for level in levels), Fraction(0)) == want, g


def test_blocks_of_different_spreads_sum_exactly() -> None:
    """A million values in blocks whose magnitudes differ by block (one block needs more levels
    than the others, one is spread too widely for any), grouped and whole."""
    rng = np.random.default_rng(5)
    values = rng.uniform(-1, 1, 1_000_000) * 1e6
    values[40_000:41_000] *= 1e-9  # a block of small values: more levels there
    values[900_000] = 1e-250  # too wide a spread for the levels: its group is left out
    groups = rng.integers(0, 4, len(values))
    got = group_sums(values, groups, 4)
    assert got == [exact_sum(values[groups == g].tolist(), "") for g in range(4)]
    whole, slow = group_levels(values[:900_000], None, 1)
    assert not slow and math.fsum(float(level[0]) for level in whole) == exact_sum(
        values[:900_000].tolist(), ""
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(-(2**63), 2**63 - 1)), max_size=40))
def test_int_sums_are_exact_python_integers(pairs: list[tuple[int, int]]) -> None:
    groups = np.array([g for g, _ in pairs], dtype=np.int64)
    values = np.array([v for _, v in pairs], dtype=np.int64)
    assert int_sums(values, groups, 3) == [sum(v for gg, v in pairs if gg == g) for g in range(3)]


def test_a_million_values_in_many_levels_sum_exactly() -> None:
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.uniform(-1, 1, 5000) * 10.0 ** rng.integers(-30, 30, 5000), [1e16, -1e16]])
    groups = rng.integers(0, 3, len(values))
    got = group_sums(values, groups, 3)
    assert got == [exact_sum(values[groups == g].tolist(), "") for g in range(3)]


def test_group_keys_whose_product_passes_64_bits_are_renumbered() -> None:
    """Three keys of 2^21 values each: their mixed-radix code would pass 2^62, so the keys so far
    are renumbered, and each group's key values are read at its first row."""
    from jarenlab.query.columnar.keys import encode

    rng = np.random.default_rng(1)
    big = 2**21
    keys = [(rng.integers(0, 5, 200) * (big // 5), list(range(big))) for _ in range(3)]
    groups, per_key, count = encode(keys)
    tuples = list(zip(*(codes.tolist() for codes, _ in keys)))
    first_seen = list(dict.fromkeys(tuples))
    assert count == len(first_seen)
    assert [tuples.index(t) for t in first_seen] == sorted(tuples.index(t) for t in first_seen)
    assert [first_seen[g] for g in groups.tolist()] == tuples
    assert list(zip(*per_key)) == first_seen
