"""`--props` files (Hudi's DFSPropertiesConfiguration rules, or java.util.Properties) and `--hoodie-conf`."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.config.hoodie import HoodieConfig
from service.config.props import load_hoodie_props, parse_hoodie_conf, parse_props_text, read_props_file
from service.errors import ConfigError

HUDI_STYLE = (
    "# cleaning\n"
    "hoodie.cleaner.commits.retained = 12\n"
    "hoodie.clustering.plan.strategy.sort.columns=city,   ts  \n"
    "hoodie.clustering.plan.strategy.partition.regex.pattern=dt=\\d{4}-\\d{2}\n"
    "hoodie.table.name orders\n"
    "!not.a.comment=1\n"
    "no_separator_line\n"
    "\n"
    "hoodie.cleaner.commits.retained=15\r\n"
    "hoodie.write.lock.zookeeper.url=zk1\\:2181\n"
)


def test_props_hudi_syntax_as_dfs_properties_configuration() -> None:
    assert parse_props_text(HUDI_STYLE) == {
        "hoodie.cleaner.commits.retained": "15",  # later line wins; CRLF ends a line
        "hoodie.clustering.plan.strategy.sort.columns": "city, ts",  # trimmed, whitespace runs collapsed
        # split at the first '='
        "hoodie.clustering.plan.strategy.partition.regex.pattern": "dt=\\d{4}-\\d{2}",
        "hoodie.table.name": "orders",  # no '=': split at the first space
        "!not.a.comment": "1",
        # backslashes are literal, unlike java.util.Properties
        "hoodie.write.lock.zookeeper.url": "zk1\\:2181",
    }


def test_props_java_syntax_applies_java_escapes(tmp_path: Path) -> None:
    path = tmp_path / "java.properties"
    path.write_text(
        "! comment\n"
        "hoodie.write.lock.zookeeper.url=zk1\\:2181,zk2\\:2181\n"
        "hoodie.clustering.plan.strategy.partition.regex.pattern=dt\\=\\\\d{8}\n"
        "hoodie.table.name=caf\\u00e9\n"
        "hoodie.clustering.plan.strategy.sort.columns=city,\\\n"
        "    ts\n",
        encoding="utf-8",
    )
    assert read_props_file(path, syntax="java") == {
        "hoodie.write.lock.zookeeper.url": "zk1:2181,zk2:2181",
        "hoodie.clustering.plan.strategy.partition.regex.pattern": "dt=\\d{8}",
        "hoodie.table.name": "café",
        "hoodie.clustering.plan.strategy.sort.columns": "city,ts",
    }


def test_props_include_is_relative_to_including_file(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "base.properties").write_text("a=1\nb=base\n", encoding="utf-8")
    (tmp_path / "abs.properties").write_text("d=abs\n", encoding="utf-8")
    main = tmp_path / "conf" / "table.properties"
    main.write_text(
        f"b=before\ninclude=base.properties\nc=3\ninclude = {tmp_path / 'abs.properties'}\n", encoding="utf-8"
    )
    # included files act as if inline: base.properties' b overrides the earlier line
    assert read_props_file(main) == {"b": "base", "a": "1", "c": "3", "d": "abs"}


def test_props_include_loop_rejected(tmp_path: Path) -> None:
    (tmp_path / "a.properties").write_text("include=b.properties\n", encoding="utf-8")
    (tmp_path / "b.properties").write_text("include=a.properties\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"a\.properties: include loop detected"):
        read_props_file(tmp_path / "a.properties")


def test_props_missing_file_named_with_includer(tmp_path: Path) -> None:
    main = tmp_path / "main.properties"
    main.write_text("include=gone.properties\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        read_props_file(main)
    assert (
        str(info.value) == f"props file {tmp_path / 'gone.properties'} (included from {main}) does not exist"
    )


def test_props_not_utf8_rejected(tmp_path: Path) -> None:
    path = tmp_path / "latin1.properties"
    path.write_bytes("hoodie.table.name=caf\u00e9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="is not UTF-8"):
        read_props_file(path)


def test_hoodie_conf_pairs_later_wins_and_keeps_equals_in_value() -> None:
    assert parse_hoodie_conf(
        [
            "hoodie.cleaner.commits.retained=5",
            "hoodie.clustering.plan.strategy.partition.regex.pattern=dt=2024.*",
            "hoodie.cleaner.commits.retained = 6",
        ]
    ) == {
        "hoodie.cleaner.commits.retained": "6",
        "hoodie.clustering.plan.strategy.partition.regex.pattern": "dt=2024.*",
    }


@pytest.mark.parametrize(
    ("pair", "reason"), [("hoodie.cleaner.commits.retained", "is not KEY=VALUE"), ("=5", "has an empty key")]
)
def test_hoodie_conf_malformed_pair_rejected(pair: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        parse_hoodie_conf([pair])


def test_load_hoodie_props_files_in_order_then_hoodie_conf(tmp_path: Path) -> None:
    first = tmp_path / "first.properties"
    second = tmp_path / "second.properties"
    first.write_text(
        "hoodie.cleaner.commits.retained=11\nhoodie.clean.max.commits=2\nhoodie.keep.min.commits=25\n",
        encoding="utf-8",
    )
    second.write_text("hoodie.cleaner.commits.retained=12\nhoodie.clean.max.commits=3\n", encoding="utf-8")
    merged = load_hoodie_props([first, second], ["hoodie.clean.max.commits=4"])
    assert merged == {
        "hoodie.cleaner.commits.retained": "12",
        "hoodie.clean.max.commits": "4",
        "hoodie.keep.min.commits": "25",
    }
    config = HoodieConfig.from_mapping(merged, "orders")
    assert (config.clean.commits_retained, config.clean.max_commits, config.archival.min_commits_to_keep) == (
        12,
        4,
        25,
    )
    # only what was set is recorded as set: the policy is inferred from commits.retained
    assert config.clean.policy_inferred
    assert config.archival.max_commits_to_keep == 30
