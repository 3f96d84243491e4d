"""The demo writer's order ids (no Spark): what each batch updates and adds, and the latest values."""

from __future__ import annotations

import pytest

from service.demo.hudi_writer import demo_first_order, demo_latest

BATCHES = 12


def _orders(batch: int, rows_per_batch: int) -> list[int]:
    first = demo_first_order(batch, rows_per_batch)
    return list(range(first, first + rows_per_batch))


@pytest.mark.parametrize("rows_per_batch", [2, 3, 20, 200, 399, 400])
def test_demo_batch_updates_previous_batch_newest_half_and_adds_new_orders(rows_per_batch: int) -> None:
    assert _orders(0, rows_per_batch) == list(range(rows_per_batch))
    seen = set(_orders(0, rows_per_batch))
    for batch in range(1, BATCHES):
        previous, orders = _orders(batch - 1, rows_per_batch), _orders(batch, rows_per_batch)
        updates = [o for o in orders if o in seen]
        # Exactly half (rounded down) of the batch updates orders, and those are the previous batch's
        # newest (highest ids) half; every other order of the batch is new to the table.
        assert len(updates) == rows_per_batch // 2, (batch, rows_per_batch)
        assert sorted(updates) == sorted(previous)[-(rows_per_batch // 2) :], (batch, rows_per_batch)
        assert len(set(orders)) == rows_per_batch
        seen.update(orders)


@pytest.mark.parametrize(
    "written", [list(range(BATCHES)), [0], [0, 1], [0, 1, 3, 4, 7], [0, 2, 4, 6], [5, 2, 0]]
)
@pytest.mark.parametrize("rows_per_batch", [2, 7, 200, 400])
def test_demo_latest_agrees_with_replaying_the_batches(written: list[int], rows_per_batch: int) -> None:
    model: dict[int, int] = {}
    for batch in sorted(written):  # Hudi's precombine keeps the greatest `updated_at`: the later batch
        for order in _orders(batch, rows_per_batch):
            model[order] = batch
    assert demo_latest(written, rows_per_batch) == model
    if written == list(range(BATCHES)):
        rows = rows_per_batch * BATCHES
        assert rows - len(model) == (BATCHES - 1) * (rows_per_batch // 2)  # the updates among the rows
