"""The typed plan and its on-disk form: Avro round trip, Java's field values, plans read back."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.clustering.records import requested_metadata
from service.errors import CorruptTableError, PathOutsideTableError
from service.table import codecs
from service.table.clustering_plan import PlannedClustering, decode_clustering_plan
from service.table.instant import Action, Instant, State
from service.table.layout import LAYOUT_1
from service.table.paths import PathGuard
from service.table.storage import Storage
from service.table.table import HudiTable
from service.table.timeline import create_instant_file
from strategies.clustering import plan_clustering
from strategies.clustering.model import TOTAL_IO_READ_MB
from tests.plan.snapshots import COMMIT, MB, NOW, base_name, config_of, fid, snapshot
from tests.support.fixtures import FileSpec, FixtureTable, ts

SORT = "hoodie.clustering.plan.strategy.sort.columns"


def _guard(storage: Storage, source: str) -> PathGuard:
    return PathGuard(storage.location, "t", partitioned=True, source=source)


def _plan() -> PlannedClustering:
    view = snapshot({"p1": [("a", 10), ("b", 20)], "p2": [("c", 70), ("d", 50)]})
    outcome = plan_clustering(view, config_of({SORT: "v"}), NOW)
    assert outcome.plan is not None
    return outcome.plan


def test_requested_metadata_has_java_clustering_fields(tmp_path: Path) -> None:
    storage = Storage.for_base_uri(str(tmp_path))
    requested = requested_metadata(_plan(), storage)
    assert requested.operation_type == "CLUSTER"
    assert requested.is_clustering
    assert requested.extra_metadata == {}
    assert requested.version == 1
    plan = requested.clustering_plan
    assert plan is not None
    assert (plan.version, plan.preserve_hoodie_metadata, plan.extra_metadata) == (1, True, {})
    assert plan.strategy == codecs.ClusteringStrategy(
        strategy_class_name="org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy",
        strategy_params={SORT: "v"},
        version=1,
    )
    groups = plan.input_groups or ()
    assert [g.num_output_file_groups for g in groups] == [1, 2, 1]
    first = groups[0]
    assert (first.version, first.extra_metadata) == (1, None)
    assert first.metrics is not None and first.metrics[TOTAL_IO_READ_MB] == 30.0
    slice_info = (first.slices or ())[0]
    assert slice_info == codecs.SliceInfo(
        data_file_path=f"file:{tmp_path}/p1/{base_name(fid('b'))}",
        delta_file_paths=(),
        file_id=fid("b"),
        partition_path="p1",
        bootstrap_file_path="",
        version=1,
    )


def test_plan_avro_round_trip(tmp_path: Path) -> None:
    storage = Storage.for_base_uri(str(tmp_path))
    plan = _plan()
    requested = requested_metadata(plan, storage)
    data = codecs.encode(requested)
    assert data[:4] == b"Obj\x01"
    decoded = codecs.decode(codecs.RequestedReplaceMetadata, data, "test")
    assert decoded == requested
    back = decode_clustering_plan(decoded, _guard(storage, "test"))
    assert back.strategy_class == plan.strategy_class
    assert back.strategy_params == plan.strategy_params
    assert back.input_file_groups == plan.input_file_groups
    for ours, read in zip(plan.groups, back.groups, strict=True):
        assert read.partition_path == ours.partition_path
        assert read.num_output_file_groups == ours.num_output_file_groups
        assert read.metrics == ours.metrics
        assert [(s.file_id, s.base_instant_time, s.base_file_path) for s in read.slices] == [
            (s.file_id, s.base_instant_time, s.base_file_path) for s in ours.slices
        ]
        assert all(s.base_file_size_bytes is None for s in read.slices)
    assert back.groups[0].slices[0].base_instant_time == COMMIT


def test_decode_refuses_non_clustering(tmp_path: Path) -> None:
    storage = Storage.for_base_uri(str(tmp_path))
    overwrite = codecs.RequestedReplaceMetadata(operation_type="INSERT_OVERWRITE")
    with pytest.raises(CorruptTableError, match="not a clustering plan"):
        decode_clustering_plan(overwrite, _guard(storage, "x.replacecommit.requested"))


def test_decode_refuses_group_across_partitions(tmp_path: Path) -> None:
    storage = Storage.for_base_uri(str(tmp_path))
    requested = requested_metadata(_plan(), storage)
    assert requested.clustering_plan is not None
    groups = requested.clustering_plan.input_groups or ()
    mixed = groups[0].model_copy(update={"slices": (groups[0].slices or ()) + (groups[1].slices or ())})
    broken = requested.model_copy(
        update={"clustering_plan": requested.clustering_plan.model_copy(update={"input_groups": (mixed,)})}
    )
    with pytest.raises(CorruptTableError, match="spans partitions"):
        decode_clustering_plan(broken, _guard(storage, "plan"))


def test_plan_written_to_fixture_table_is_seen_as_pending_clustering(tmp_path: Path) -> None:
    fixture = FixtureTable(tmp_path / "t")
    fixture.commit(
        ts(1), [FileSpec("p1", fid(n), size_hint=s) for n, s in (("a", 4000), ("b", 8000), ("c", 2000))]
    )
    fixture.commit(
        ts(2), [FileSpec("p2", fid("d"), size_hint=3000), FileSpec("p2", fid("big"), size_hint=90_000)]
    )
    table = HudiTable.open(str(tmp_path / "t"))
    view = table.load_view()
    # big is above the limit; the rest fit two groups (each partition its own).
    config = config_of(
        {
            "hoodie.clustering.plan.strategy.small.file.limit": 30_000,
            "hoodie.clustering.plan.strategy.max.bytes.per.group": 1 * MB,
        }
    )
    outcome = plan_clustering(view, config, NOW)
    assert outcome.plan is not None
    assert [[s.file_id for s in g.slices] for g in outcome.plan.groups] == [
        [fid("b"), fid("a"), fid("c")],
        [fid("d")],
    ]
    instant = Instant(ts(3), Action.REPLACE_COMMIT, State.REQUESTED)
    create_instant_file(
        table.storage, table.layout, instant, codecs.encode(requested_metadata(outcome.plan, table.storage))
    )
    assert table.storage.exists(LAYOUT_1.instant_path(instant))

    after = table.load_view()
    assert dict(after.facts.pending_clustering) == {fg: ts(3) for fg in outcome.plan.input_file_groups}
    again = plan_clustering(after, config, NOW)
    assert again.plan is None
    assert "4 in pending clustering" in again.reason


def test_decode_file_names_only_names_files_in_their_partition(tmp_path: Path) -> None:
    """A table copied elsewhere keeps its plans' absolute paths: readers of file groups and file
    names (view, cleaner, rollback) still read them; execution's full confinement refuses them."""
    old = Storage.for_base_uri(str(tmp_path / "old"))
    new = Storage.for_base_uri(str(tmp_path / "new"))
    plan = _plan()
    requested = requested_metadata(plan, old)
    names = decode_clustering_plan(requested, _guard(new, "plan"), file_names_only=True)
    assert names.input_file_groups == plan.input_file_groups
    assert [s.base_file_path for g in names.groups for s in g.slices] == [
        s.base_file_path for g in plan.groups for s in g.slices
    ]
    with pytest.raises(PathOutsideTableError, match="dataFilePath"):
        decode_clustering_plan(requested, _guard(new, "plan"))


def test_pending_plan_with_a_partition_outside_the_table_refuses_the_view(tmp_path: Path) -> None:
    """The view's pending file groups come from the one decoder, so its partition confinement holds."""
    fixture = FixtureTable(tmp_path / "t")
    fixture.commit(
        ts(1), [FileSpec("p1", fid("a"), size_hint=4000), FileSpec("p1", fid("b"), size_hint=4000)]
    )
    table = HudiTable.open(str(tmp_path / "t"))
    outcome = plan_clustering(table.load_view(), config_of({}), NOW)
    assert outcome.plan is not None
    requested = requested_metadata(outcome.plan, table.storage)
    assert requested.clustering_plan is not None
    group = (requested.clustering_plan.input_groups or ())[0]
    hostile_slices = tuple(s.model_copy(update={"partition_path": "../p1"}) for s in group.slices or ())
    hostile = requested.model_copy(
        update={
            "clustering_plan": requested.clustering_plan.model_copy(
                update={"input_groups": (group.model_copy(update={"slices": hostile_slices}),)}
            )
        }
    )
    instant = Instant(ts(2), Action.REPLACE_COMMIT, State.REQUESTED)
    create_instant_file(table.storage, table.layout, instant, codecs.encode(hostile))
    with pytest.raises(PathOutsideTableError, match="partitionPath"):
        table.load_view()
