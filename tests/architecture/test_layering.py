"""Dependencies point one way, and every `hoodie.*` key is named in one place.

`service.config` is the bottom layer: it imports only the standard library, third-party packages, itself
and `service.errors`. Strategies are pure planning and layout code: no Spark. Keys of Hudi's configuration
are defined once, in the registry `service.config.hoodie_keys`.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from service.config.hoodie_keys import ALTERNATIVE_NAMES, HOODIE_KEYS

ROOT = Path(__file__).resolve().parents[2]
PROJECT_PACKAGES = ("service", "strategies", "bench", "tests")
# Third-party packages one config module may import besides yaml and pydantic, each with why.
THIRD_PARTY_IN_CONFIG = {
    # Maintenance windows are parsed by APScheduler's CronTrigger (the daemon's scheduler library)
    # when the config is loaded, so a bad cron expression is a ConfigError, not a failing tick.
    "service/config/windows.py": {"apscheduler"},
}
KEY_NAME = re.compile(r"hoodie\.[a-z0-9_]+(\.[a-z0-9_]+)+")


def _modules(package: str) -> list[Path]:
    return sorted(p for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import"
            assert node.module is not None
            names.add(node.module)
    return names


def _names_keys(value: object) -> bool:
    """A whole key name, or a key prefix such as `hoodie.write.lock.`."""
    if not isinstance(value, str) or not value.startswith("hoodie."):
        return False
    return bool(KEY_NAME.fullmatch(value) or KEY_NAME.fullmatch(value.rstrip(".")))


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("path", _modules("service/config"), ids=_rel)
def test_config_imports_nothing_above_it(path: Path) -> None:
    allowed_project = ("service.config", "service.errors")
    above = sorted(
        name
        for name in _imported(path)
        if name.split(".")[0] in PROJECT_PACKAGES
        and name != "service"
        and not any(name == p or name.startswith(p + ".") for p in allowed_project)
    )
    assert not above, f"{_rel(path)} imports {above}"
    # the standard library and third-party packages only, besides those
    outside = {n.split(".")[0] for n in _imported(path)} - set(PROJECT_PACKAGES) - {"__future__"}
    allowed = {"yaml", "pydantic"} | THIRD_PARTY_IN_CONFIG.get(_rel(path), set())
    assert all(name in sys.stdlib_module_names or name in allowed for name in outside), outside


@pytest.mark.parametrize("path", _modules("strategies"), ids=_rel)
def test_strategies_do_not_import_spark(path: Path) -> None:
    spark = sorted(name for name in _imported(path) if name.split(".")[0] in ("pyspark", "py4j"))
    assert not spark, f"{_rel(path)} imports {spark}"


@pytest.mark.parametrize("path", [*_modules("service"), *_modules("strategies")], ids=_rel)
def test_hoodie_keys_are_defined_only_in_the_registry(path: Path) -> None:
    """No module but the registry binds a `hoodie.*` key name to a module-level constant."""
    if _rel(path) == "service/config/hoodie_keys.py":
        return
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defined = [
        const.value
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
        for const in ast.walk(node.value)
        if isinstance(const, ast.Constant) and _names_keys(const.value)
    ]
    assert not defined, f"{_rel(path)} defines {defined}; name them in service/config/hoodie_keys.py"


@pytest.mark.parametrize("path", _modules("service/config"), ids=_rel)
def test_config_views_read_only_registry_keys(path: Path) -> None:
    """A key name written in a typed view is a registry key (KeyReader would fail at runtime otherwise)."""
    known = set(HOODIE_KEYS) | set(ALTERNATIVE_NAMES)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and KEY_NAME.fullmatch(node.value)
    }
    assert names <= known, f"{_rel(path)}: {sorted(names - known)} are not in the registry"
