"""The daemon's YAML config: structure, per-table hoodie.* resolution, messages naming file/table/key."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from pydantic import ValidationError

from service.config.daemon import load_daemon_config, parse_daemon_config
from service.config.schedule import ClusteringSchedule
from service.config.zones import ZoneChoice, machine_zone
from service.daemon.membership import ClusterZookeeper
from service.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[2]

TWO_TABLES = """
daemon:
  poll_interval_seconds: 5
  lock:
    provider: in-process
    properties:
      hoodie.write.lock.wait_time_ms: 2000
defaults:
  hoodie.cleaner.commits.retained: 7
  hoodie.clustering.async.max.commits: 3
tables:
  - name: orders
    base_path: /data/orders
    timezone: Europe/Berlin
    hoodie:
      hoodie.cleaner.commits.retained: 2
  - name: users
    base_path: s3a://bucket/users/
    storage_options: {endpoint_override: "localhost:9000"}
    clustering: {enabled: false}
    compaction: {enabled: false}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "daemon.yaml"
    path.write_text(text)
    return path


def test_config_repo_example_loads() -> None:
    config = load_daemon_config(REPO_ROOT / "config.yaml")
    assert config.daemon.metrics.host == "127.0.0.1"
    assert config.daemon.deletion.max_delete_fraction == 0.75
    [demo] = config.tables
    assert demo.hoodie.clean.commits_retained == 5
    assert demo.hoodie.clustering.async_max_commits == 4


def test_config_defaults_under_table_overrides(tmp_path: Path) -> None:
    config = load_daemon_config(_write(tmp_path, TWO_TABLES))
    orders, users = config.tables
    assert (orders.hoodie.clean.commits_retained, users.hoodie.clean.commits_retained) == (2, 7)
    assert orders.hoodie.clustering.async_max_commits == users.hoodie.clustering.async_max_commits == 3
    assert orders.hoodie.effective()["hoodie.write.lock.wait_time_ms"] == "2000"
    assert orders.zone == ZoneInfo("Europe/Berlin") and users.zone_choice == machine_zone()
    assert (orders.settings.clustering.enabled, users.settings.clustering.enabled) == (True, False)
    assert users.settings.storage_options == {"endpoint_override": "localhost:9000"}
    assert config.daemon.poll_interval_seconds == 5 and config.daemon.max_concurrent_clusterings == 1
    assert orders.fingerprint != users.fingerprint


def test_config_fingerprint_follows_inherited_defaults() -> None:
    before = parse_daemon_config(TWO_TABLES).table("users").fingerprint
    after = parse_daemon_config(TWO_TABLES.replace("commits.retained: 7", "commits.retained: 8"))
    assert after.table("users").fingerprint != before
    assert parse_daemon_config(TWO_TABLES).table("users").fingerprint == before


def test_daemon_timezone_is_inherited_by_entries_without_one_and_moves_their_fingerprint() -> None:
    zoned = parse_daemon_config(
        TWO_TABLES.replace("  poll_interval_seconds: 5", "  timezone: Asia/Tokyo\n  poll_interval_seconds: 5")
    )
    orders, users = zoned.tables
    assert orders.zone_choice == ZoneChoice(
        ZoneInfo("Europe/Berlin"), "the table entry's timezone: Europe/Berlin"
    )
    assert users.zone_choice == ZoneChoice(ZoneInfo("Asia/Tokyo"), "daemon.timezone: Asia/Tokyo")
    plain = parse_daemon_config(TWO_TABLES)
    assert users.fingerprint != plain.table("users").fingerprint  # a reload rebuilds the table's runtime
    with pytest.raises(ConfigError, match=r"daemon.timezone.*Mars/Olympus"):
        parse_daemon_config(TWO_TABLES.replace("  poll_interval_seconds: 5", "  timezone: Mars/Olympus"))


def test_config_bad_hoodie_value_names_file_table_key_value(tmp_path: Path) -> None:
    path = _write(tmp_path, TWO_TABLES.replace("commits.retained: 2", "commits.retained: many"))
    with pytest.raises(ConfigError) as info:
        load_daemon_config(path)
    message = str(info.value)
    assert str(path) in message and "'orders'" in message
    assert "hoodie.cleaner.commits.retained" in message and "many" in message


def test_config_bad_default_names_the_table_it_breaks() -> None:
    text = TWO_TABLES.replace("hoodie.clustering.async.max.commits: 3", "hoodie.cleaner.policy: KEEP_SOME")
    with pytest.raises(ConfigError, match=r"'orders'.*hoodie.cleaner.policy.*KEEP_SOME"):
        parse_daemon_config(text, "x.yaml")


def test_config_unknown_hoodie_key_warns_with_closest(caplog: pytest.LogCaptureFixture) -> None:
    text = TWO_TABLES.replace("hoodie.cleaner.commits.retained: 2", "hoodie.cleaner.commits.retain: 2")
    with caplog.at_level(logging.WARNING):
        config = parse_daemon_config(text)
    warnings = config.table("orders").hoodie.warnings
    assert any(
        "hoodie.cleaner.commits.retain " in w and "hoodie.cleaner.commits.retained" in w for w in warnings
    )
    assert any("hoodie.cleaner.commits.retain " in r.getMessage() for r in caplog.records)


def test_config_yaml_error_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "daemon:\n  poll_interval_seconds: 5\n tables: [\n")
    with pytest.raises(ConfigError, match=rf"{path}: line 3"):
        load_daemon_config(path)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (("poll_interval_seconds: 5", "poll_interval_secs: 5"), r"daemon.poll_interval_secs: Extra inputs"),
        (("poll_interval_seconds: 5", "max_concurrent_compactions: 0"), r"daemon.max_concurrent_compactions"),
        (
            ("compaction: {enabled: false}", "compaction: {enabled: maybe}"),
            r"table 'users': compaction.enabled",
        ),
        (
            ("compaction: {enabled: false}", "compaction: {every: 5}"),
            r"table 'users': compaction.every: Extra",
        ),
        (("poll_interval_seconds: 5", "poll_interval_seconds: -1"), r"daemon.poll_interval_seconds.*-1"),
        (("provider: in-process", "provider: etcd"), r"daemon.lock.provider.*'etcd'"),
        (("timezone: Europe/Berlin", "timezone: Mars/Olympus"), r"table 'orders': timezone.*Mars/Olympus"),
        (("name: users", "name: orders"), r"table name 'orders' appears more than once"),
        (("base_path: s3a://bucket/users/", "base_path: /data/orders/"), r"base_path '/data/orders'"),
        (("hoodie.write.lock.wait_time_ms: 2000", "hoodie.cleaner.policy: X"), r"hoodie.write.lock.\* keys"),
    ],
)
def test_config_structure_errors(edit: tuple[str, str], expected: str) -> None:
    with pytest.raises(ConfigError, match=expected) as info:
        parse_daemon_config(TWO_TABLES.replace(*edit), "cfg.yaml")
    assert str(info.value).startswith("cfg.yaml: ")


def test_config_zookeeper_provider_requires_url() -> None:
    text = TWO_TABLES.replace("provider: in-process", "provider: zookeeper")
    with pytest.raises(ConfigError, match=r"hoodie.write.lock.zookeeper.url"):
        parse_daemon_config(text)
    ok = text.replace(
        "hoodie.write.lock.wait_time_ms: 2000",
        "hoodie.write.lock.zookeeper.url: zk:2181\n      hoodie.write.lock.zookeeper.base_path: /hudi/locks",
    )
    assert parse_daemon_config(ok).daemon.lock.provider == "zookeeper"


def test_config_empty_file_is_an_idle_daemon() -> None:
    config = parse_daemon_config("")
    assert config.tables == () and config.daemon.metrics.port == 9464


def test_config_models_are_frozen() -> None:
    config = parse_daemon_config(TWO_TABLES)
    with pytest.raises(ValidationError, match="frozen"):
        config.daemon.poll_interval_seconds = 1


WINDOWED = """
daemon:
  maintenance_windows:
    - {cron: "0 22 * * mon-fri", duration_minutes: 360, timezone: Europe/Berlin}
tables:
  - name: orders
    base_path: /data/orders
    clustering:
      priority: 5
      max_bytes_per_run: 1073741824
      small_file_count_trigger: 50
      small_file_bytes_trigger: 268435456
      max_interval_hours: 24
      min_interval_minutes: 30
      plan_outside_windows: false
    cleaning:
      max_interval_hours: 12
      windows: [{cron: "0 * * * sat,sun", duration_minutes: 60}]
  - name: users
    base_path: /data/users
    clustering: {windows: []}
  - name: events
    base_path: /data/events
"""


def test_config_schedule_sections_and_window_inheritance() -> None:
    config = parse_daemon_config(WINDOWED)
    daemon_windows = config.daemon.maintenance_windows
    assert [w.cron for w in daemon_windows] == ["0 22 * * mon-fri"]
    orders, users, events = (t.settings for t in config.tables)
    c = orders.clustering
    assert (c.priority, c.max_bytes_per_run, c.small_file_count_trigger, c.small_file_bytes_trigger) == (
        5, 1 << 30, 50, 256 << 20,
    )  # fmt: skip
    assert (c.max_interval_hours, c.min_interval_minutes, c.plan_outside_windows) == (24, 30, False)
    assert c.effective_windows(daemon_windows) == daemon_windows  # inherited
    assert users.clustering.effective_windows(daemon_windows) == ()  # `[]`: any time
    assert events.clustering.needs_small_files is False and events.clustering.plan_outside_windows
    assert [w.cron for w in orders.cleaning.effective_windows()] == ["0 * * * sat,sun"]
    assert events.cleaning.effective_windows() == ()  # cleaning does not inherit the daemon's windows
    assert orders.cleaning.max_interval_hours == 12


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (("mon-fri", "1-5"), r"daemon.maintenance_windows.0: .*day-of-week '1-5' must use names"),
        (("priority: 5", "priorty: 5"), r"table 'orders': clustering.priorty: Extra inputs"),
        (("max_bytes_per_run: 1073741824", "max_bytes_per_run: 0"), r"clustering.max_bytes_per_run"),
        (("duration_minutes: 60", "duration_minutes: -1"), r"table 'orders': cleaning.windows.0.duration"),
    ],
)
def test_config_schedule_errors_name_the_table_and_setting(edit: tuple[str, str], expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        parse_daemon_config(WINDOWED.replace(*edit), "cfg.yaml")


def test_config_schedule_change_changes_the_fingerprint() -> None:
    before = parse_daemon_config(WINDOWED).table("orders").fingerprint
    assert (
        parse_daemon_config(WINDOWED.replace("priority: 5", "priority: 6")).table("orders").fingerprint
        != before
    )


def test_config_repo_example_commented_schedule_settings_parse() -> None:
    """The commented examples of config.yaml's scheduling settings are valid when uncommented."""
    text = (REPO_ROOT / "config.yaml").read_text()
    keys = "|".join([*ClusteringSchedule.model_fields, "compaction", "archival"])
    uncommented = re.sub(rf"^(\s*)# ({keys}):", r"\1\2:", text, flags=re.M)
    uncommented = uncommented.replace("  maintenance_windows: []\n  #  - ", "  maintenance_windows:\n    - ")
    uncommented = uncommented.replace('\n  #  - {cron: "0 0', '\n    - {cron: "0 0')
    config = parse_daemon_config(uncommented)
    assert [w.cron for w in config.daemon.maintenance_windows] == ["0 22 * * mon-fri", "0 0 * * sat"]
    [demo] = config.tables
    assert demo.settings.clustering.small_file_count_trigger == 50
    assert demo.settings.clustering.effective_windows(config.daemon.maintenance_windows) == ()
    assert demo.settings.cleaning.max_interval_hours == 12 and demo.settings.cleaning.effective_windows()
    assert demo.settings.compaction.enabled is True
    assert demo.settings.archival.enabled is True
    # As shipped, the demo is served at any time.
    assert load_daemon_config(REPO_ROOT / "config.yaml").daemon.maintenance_windows == ()


def test_config_compaction_section_and_slots() -> None:
    """`compaction.enabled` unset: left to the table's type (on for merge-on-read); `false` turns it
    off; `daemon.max_concurrent_compactions` defaults to one slot, like clustering."""
    config = parse_daemon_config(TWO_TABLES)
    orders, users = (t.settings.compaction for t in config.tables)
    assert orders.enabled is None and not orders.disabled
    assert users.enabled is False and users.disabled
    assert config.daemon.max_concurrent_compactions == 1
    text = TWO_TABLES.replace(
        "poll_interval_seconds: 5", "poll_interval_seconds: 5\n  max_concurrent_compactions: 3"
    )
    assert parse_daemon_config(text).daemon.max_concurrent_compactions == 3
    on = parse_daemon_config(
        TWO_TABLES.replace("compaction: {enabled: false}", "compaction: {enabled: true}")
    )
    assert on.table("users").settings.compaction.enabled is True
    assert on.table("users").fingerprint != config.table("users").fingerprint


def test_config_cluster_is_off_by_default_and_defaults_to_the_locks_zookeeper() -> None:
    assert parse_daemon_config(TWO_TABLES).daemon.cluster.enabled is False
    config = parse_daemon_config(
        """
daemon:
  cluster: {enabled: true}
  lock:
    provider: zookeeper
    properties:
      hoodie.write.lock.zookeeper.url: "zk1:2181,zk2:2181"
      hoodie.write.lock.zookeeper.base_path: /hudi/locks
      hoodie.write.lock.zookeeper.session_timeout_ms: 6000
"""
    )
    cluster = config.daemon.cluster
    assert cluster.path == "/hudi-table-service/members"
    assert re.fullmatch(r".+-\d+", cluster.effective_replica_id())
    zookeeper = ClusterZookeeper.of(config)
    assert (zookeeper.connect_string, zookeeper.session_timeout_s) == ("zk1:2181,zk2:2181", 6.0)


@pytest.mark.parametrize(
    ("cluster", "expected"),
    [
        ("{enabled: true}", "daemon.cluster.zookeeper_url: needed"),
        ("{enabled: true, zookeeper_url: 'zk:2181', path: members}", "absolute znode path"),
        ("{enabled: true, zookeeper_url: 'zk:2181', replica_id: 'a/b'}", "znode name"),
    ],
)
def test_config_cluster_errors(cluster: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        parse_daemon_config(f"daemon:\n  cluster: {cluster}\n")
