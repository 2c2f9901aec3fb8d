"""scripts/check_component_names.py: a registered component's name spelled outside the file that
registers it fails the check (here in a small tree of its own), and the repository passes it."""
from __future__ import annotations

import os

import pytest

from conftest import ROOT, script

BIN = os.environ.get("STALE_BIN", os.path.join(ROOT, "build", "stale"))
pytestmark = pytest.mark.skipif(not os.access(BIN, os.X_OK), reason="needs the stale binary (STALE_BIN)")


def _tree(tmp_path, rule_body):
    (tmp_path / "optimizers").mkdir()
    (tmp_path / "src" / "run").mkdir(parents=True)
    (tmp_path / "optimizers" / "rpd.cpp").write_text('const bool registered = MethodRegistry::add({"rpd", "x"});\n'
                                                     'bool is_me(const std::string& m) { return m == "rpd"; }\n')
    (tmp_path / "src" / "run" / "rule.cpp").write_text(rule_body)
    return tmp_path


def test_a_name_outside_its_registration_file_fails(tmp_path):
    root = _tree(tmp_path, 'bool fresh(const std::string& m) { return m == "sgd" || m == "rpd"; }\n')
    r = script("check_component_names.py", BIN, "--root", root)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert [x.split(":")[0:2] for x in lines] == [["src/run/rule.cpp", "1"], ["src/run/rule.cpp", "1"]]
    assert '"rpd"' in lines[0] + lines[1] and '"sgd"' in lines[0] + lines[1]


def test_asking_the_registry_passes(tmp_path):
    root = _tree(tmp_path, "bool fresh(const MethodEntry& e) { return e.kind == MethodKind::Fresh; }\n")
    r = script("check_component_names.py", BIN, "--root", root)
    assert r.returncode == 0, r.stderr


def test_the_repository_spells_no_component_name_outside_its_file():
    r = script("check_component_names.py", BIN)
    assert r.returncode == 0, r.stderr
