"""The division of the tables among replicas (`service.daemon.assignment`): pure."""

from __future__ import annotations

from collections import Counter

from service.daemon.assignment import divide, share_of

TABLES = [f"table-{i:05d}" for i in range(3000)]


def _owner(division: dict[str, frozenset[str]]) -> dict[str, str]:
    return {table: member for member, share in division.items() for table in share}


def test_every_table_has_one_member_and_shares_differ_by_at_most_one() -> None:
    for members in (["a"], ["a", "b"], ["r0", "r1", "r2"], [f"m{i}" for i in range(7)]):
        for count in (0, 1, 4, 10, 31, 3000):
            division = divide(members, TABLES[:count])
            owner = _owner(division)
            assert sorted(owner) == sorted(TABLES[:count])
            assert sum(len(share) for share in division.values()) == count  # disjoint
            sizes = [len(division[m]) for m in members]
            assert max(sizes) - min(sizes) <= 1, (members, count, sizes)


def test_the_division_depends_on_the_sets_not_their_order() -> None:
    members = ["r2", "r0", "r1"]
    assert divide(members, TABLES) == divide(sorted(members), list(reversed(TABLES)))
    assert share_of("r1", members, TABLES) == divide(members, TABLES)["r1"]
    assert share_of("gone", members, TABLES) == frozenset()
    assert divide([], TABLES) == {}


def test_a_member_leaving_moves_little_more_than_its_own_tables() -> None:
    before = _owner(divide(["r0", "r1", "r2"], TABLES))
    after = _owner(divide(["r0", "r1"], TABLES))
    moved = [t for t in TABLES if before[t] != after[t]]
    own = [t for t in TABLES if before[t] == "r2"]
    assert set(own) <= set(moved)
    # kazoo's division by position moves about two thirds of the tables here; this, its own and a few.
    assert len(moved) <= len(own) * 1.02, (len(moved), len(own))


def test_a_member_joining_takes_its_share_mostly_from_the_others_surplus() -> None:
    before = _owner(divide(["r0", "r1", "r2"], TABLES))
    after = _owner(divide(["r0", "r1", "r2", "r3"], TABLES))
    moved = Counter((before[t], after[t]) for t in TABLES if before[t] != after[t])
    to_new = sum(n for (_, new), n in moved.items() if new == "r3")
    assert to_new == len(TABLES) // 4
    assert sum(moved.values()) <= to_new * 1.05, moved
