"""Hypothesis strategies for the codec models, derived from their type hints."""

from __future__ import annotations

import types
from collections.abc import Mapping
from enum import Enum
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

import annotated_types
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from service.table.codecs import WriteStat

T = TypeVar("T")

# Control characters, quotes, backslashes, non-ASCII and non-BMP characters exercise every escaping rule.
TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from('"\\/\b\t\n\f\r\x00\x01\x1f\x7f\x85\u2028\u20ac\U0001f600 -_.:'),
        st.characters(codec="utf-8"),
    ),
    max_size=12,
)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
_LONG = (-(2**63), 2**63 - 1)


def models(
    model_type: type[T], overrides: Mapping[str, st.SearchStrategy[Any]] | None = None
) -> st.SearchStrategy[T]:
    """Any valid instance of a pydantic model: every field drawn from its annotation."""
    assert issubclass(model_type, BaseModel)
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for name, info in model_type.model_fields.items():
        if overrides and name in overrides:
            fields[name] = overrides[name]
        else:
            fields[name] = for_type(info.annotation, info.metadata)
    # Keyword names, not `builds`: pydantic's signature lists aliases, which `builds` would add as well.
    return st.fixed_dictionaries(fields).map(lambda kwargs: model_type(**kwargs))


def for_type(tp: Any, metadata: list[Any] | tuple[Any, ...] = ()) -> st.SearchStrategy[Any]:
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        return for_type(args[0], args[1:])
    if origin in (Union, types.UnionType):
        return st.one_of(*(st.none() if a is type(None) else for_type(a) for a in args))
    if origin is tuple:
        return st.lists(for_type(args[0]), max_size=3).map(tuple)
    if origin in (Mapping, dict):
        return st.dictionaries(TEXT, for_type(args[1]), max_size=3)
    if tp is bool:
        return st.booleans()
    if tp is int:
        bounds = next((m for m in metadata if isinstance(m, annotated_types.Interval)), None)
        low, high = (bounds.ge, bounds.le) if bounds else _LONG
        assert isinstance(low, int) and isinstance(high, int)
        return st.integers(low, high)
    if tp is float:
        return FLOATS
    if tp is str:
        return TEXT
    if isinstance(tp, type) and issubclass(tp, Enum):
        return st.sampled_from(list(tp))
    if isinstance(tp, type) and issubclass(tp, WriteStat):
        return write_stats()
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return models(tp)
    raise TypeError(f"no strategy for {tp!r}")


JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), TEXT)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)


def write_stats(with_other_fields: bool = False) -> st.SearchStrategy[WriteStat]:
    """Write stats; `other_fields` (delta-stat extras) only when asked, and never shadowing a base field."""
    base = {info.serialization_alias for info in WriteStat.model_fields.values()}
    other = (
        st.dictionaries(TEXT.filter(lambda k: k not in base), JSON_VALUES, max_size=3)
        if with_other_fields
        else st.just({})
    )
    return models(WriteStat, overrides={"other_fields": other})


def collect(strategy: st.SearchStrategy[T], count: int) -> list[T]:
    """`count` examples drawn deterministically, for batching many files into one JVM run."""
    found: list[T] = []

    @settings(
        max_examples=count,
        database=None,
        derandomize=True,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @given(strategy)
    def gather(example: T) -> None:
        found.append(example)

    gather()
    return found


def lists_to_plain(value: Any) -> Any:
    """Tuples to lists, recursively, to compare with parsed JSON."""
    if isinstance(value, tuple | list):
        return [lists_to_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: lists_to_plain(v) for k, v in value.items()}
    return value
