from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.config import java_properties
from service.errors import (
    CorruptTableError,
    NotAHudiTableError,
    TableServicesRefusedError,
    UnsupportedTableError,
)
from service.table.mdt.mdt_format import MDT_FORMAT_V6
from service.table.properties import (
    PROPERTIES_FILE,
    TableConfig,
    TableServiceKind,
    load_table_config,
    store_table_config,
    table_checksum,
)
from service.table.storage import Storage
from service.table.table import refuse_unreproduced_merge

# A hoodie.properties as Hudi 0.14 writes it (from a real table, abridged).
REAL = r"""#Updated at 2024-07-07T05:13:03.310Z
#Sun Jul 07 00:13:03 CDT 2024
hoodie.table.precombine.field=ts
hoodie.datasource.write.drop.partition.columns=false
hoodie.table.partition.fields=byteField,shortField
hoodie.table.type=COPY_ON_WRITE
hoodie.archivelog.folder=archived
hoodie.timeline.layout.version=1
hoodie.table.version=6
hoodie.table.recordkey.fields=id,name
hoodie.database.name=default
hoodie.datasource.write.hive_style_partitioning=true
hoodie.table.keygenerator.class=org.apache.hudi.keygen.ComplexKeyGenerator
hoodie.table.name=v6_simplekeygen_nonhivestyle_overwritetable
hoodie.table.create.schema={"type"\:"record","name"\:"t_record","fields"\:[{"name"\:"a","type"\:"int"}]}
hoodie.table.checksum=3443920226
"""


def test_checksum_matches_hudi_fixture() -> None:
    assert table_checksum("default", "v6_simplekeygen_nonhivestyle_overwritetable") == 3443920226


def test_properties_parse_real_file() -> None:
    config = TableConfig.from_text(REAL, "x")
    assert config.version == 6
    assert config.partition_fields == ["byteField", "shortField"]
    assert config.record_key_fields == ["id", "name"]
    assert config.hive_style_partitioning
    assert config.checksum_valid
    assert config.raw["hoodie.table.create.schema"].startswith('{"type":"record"')


def test_properties_store_round_trips_and_recomputes_checksum(tmp_path: Path) -> None:
    storage = Storage.for_base_uri(str(tmp_path))
    config = TableConfig.from_text(REAL, "x").with_updates({"hoodie.table.name": "renamed"})
    store_table_config(storage, config)
    loaded = load_table_config(storage)
    assert loaded.name == "renamed"
    assert loaded.raw["hoodie.table.checksum"] == str(table_checksum("default", "renamed"))
    assert not storage.exists(".hoodie/hoodie.properties.backup")


def test_properties_falls_back_to_backup(tmp_path: Path) -> None:
    (tmp_path / ".hoodie").mkdir()
    (tmp_path / ".hoodie" / "hoodie.properties.backup").write_text(REAL)
    assert load_table_config(Storage.for_base_uri(str(tmp_path))).version == 6


def test_properties_bad_checksum_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".hoodie").mkdir()
    (tmp_path / ".hoodie" / "hoodie.properties").write_text(REAL.replace("3443920226", "1"))
    with pytest.raises(CorruptTableError, match="checksum"):
        load_table_config(Storage.for_base_uri(str(tmp_path)))


def test_properties_missing_is_not_a_hudi_table(tmp_path: Path) -> None:
    with pytest.raises(NotAHudiTableError, match=str(tmp_path)):
        load_table_config(Storage.for_base_uri(str(tmp_path)))


@pytest.mark.parametrize(
    ("updates", "message"),
    [
        ({"hoodie.table.format": "iceberg"}, r"hoodie.table.format=iceberg"),
        ({"hoodie.table.base.file.format": "LANCE"}, r"hoodie.table.base.file.format=LANCE"),
        (
            {"hoodie.table.metadata.partitions": "column_stats,files,partition_stats"},
            r"partition\(s\) partition_stats .*DROP INDEX.*index disabled.*hoodie.metadata.enable=false",
        ),
        ({"hoodie.table.metadata.partitions.inflight": "files"}, r"still initialising"),
    ],
)
def test_properties_unsupported_tables_are_refused_with_reason(updates: dict[str, str], message: str) -> None:
    config = TableConfig.from_text(REAL, "x").with_updates(updates)
    with pytest.raises(UnsupportedTableError, match=message):
        config.check_supported("file:/t", MDT_FORMAT_V6.partitions)


def test_java_properties_escapes_and_continuations() -> None:
    text = "a\\:b=c\\=d\\u00e9\nkey value with spaces\nlong=one\\\n    two\n! comment\nempty=\n"
    assert java_properties.loads(text) == {
        "a:b": "c=dé",
        "key": "value with spaces",
        "long": "onetwo",
        "empty": "",
    }


@given(st.dictionaries(st.text(min_size=1), st.text(), max_size=8))
def test_java_properties_round_trip(props: dict[str, str]) -> None:
    assert java_properties.loads(java_properties.dumps(props)) == props


def test_properties_file_constant() -> None:
    assert PROPERTIES_FILE == ".hoodie/hoodie.properties"


def test_merge_on_read_is_served_unless_its_merge_is_not_reproduced() -> None:
    mor = TableConfig.from_text(REAL, "x").with_updates({"hoodie.table.type": "MERGE_ON_READ"})
    for service in TableServiceKind:
        mor.check_service_supported(service, "file:/t")
    custom = mor.with_updates({"hoodie.compaction.payload.class": "com.example.MyPayload"})
    with pytest.raises(
        TableServicesRefusedError, match=r"MERGE_ON_READ.*clustering.*com\.example\.MyPayload"
    ):
        refuse_unreproduced_merge(custom, "file:/t")
    refuse_unreproduced_merge(mor, "file:/t")
    custom.check_service_supported(TableServiceKind.CLEANING, "file:/t")
    cow = TableConfig.from_text(REAL, "x")
    with pytest.raises(TableServicesRefusedError, match=r"COPY_ON_WRITE.*only MERGE_ON_READ"):
        cow.check_service_supported(TableServiceKind.COMPACTION, "file:/t")
    for service in (TableServiceKind.CLUSTERING, TableServiceKind.CLEANING):
        cow.check_service_supported(service, "file:/t")


def test_a_refusal_for_the_table_type_names_the_properties_file() -> None:
    """A damaged `hoodie.table.type` line reads as Hudi's default, COPY_ON_WRITE: the refusal then
    points at the file to look at instead of at a key the file does not have."""
    cow = TableConfig.from_text(REAL, "x").with_updates({"hoodie.table.type": "COPY_ON_WRITE"})
    with pytest.raises(
        TableServicesRefusedError, match=r"\(hoodie\.table\.type in \.hoodie/hoodie\.properties\)"
    ):
        cow.check_service_supported(TableServiceKind.COMPACTION, "file:/t")
    text = "\n".join(line for line in REAL.splitlines() if not line.startswith("hoodie.table.type="))
    damaged = TableConfig.from_text(text, "x")
    assert "hoodie.table.type" not in damaged.raw
    with pytest.raises(
        TableServicesRefusedError, match=r"\.hoodie/hoodie\.properties sets no hoodie\.table\.type"
    ):
        damaged.check_service_supported(TableServiceKind.COMPACTION, "file:/t")
