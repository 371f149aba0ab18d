"""Packaging (issue 14): the sdist and the wheel carry the samples and the licence, the sdist carries no
test suite, and the built wheel's ``histmig demo`` shows every sample session (docs/install.md).

Everything is built offline with the setuptools of this environment (the test extra pins the version
pyproject.toml's build-system asks for): sdist from a copy of the tree, wheel from that sdist (what
``python -m build``, pipx and ``uv tool install`` do from an sdist), then the wheel goes into a fresh
venv with ``pip install --no-deps --no-index``. The fresh venv reaches the already-installed
dependencies through a ``.pth`` line (a plain path: the editable histmig of this environment is not
on it), so the histmig that runs is the wheel's.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from email.parser import Parser
from importlib import metadata
from pathlib import Path

import pytest

from histmig.cli import samples
from histmig.tools.catalog import discover_all

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "histmig" / "samples"
# what the sdist is built from: the files pyproject.toml names, the package, and tests/ (to see it left out)
SOURCES = ["pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "histmig", "tests"]
JUNK = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".hypothesis", ".pytest_cache")


def run(cmd, cwd, env=None):
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, f"{cmd}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def sample_files() -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in SAMPLES.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def build_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "HISTMIG_"))}
    env.update(HOME=str(home), PIP_NO_INDEX="1", PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    base = tmp_path_factory.mktemp("packaging")
    src, out, env = base / "src", base / "dist", build_env(base / "home")
    src.mkdir()
    for name in SOURCES:
        p = ROOT / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=JUNK)
        else:
            shutil.copy2(p, src / name)
    stray = src / "histmig" / "samples" / "__pycache__" / "make_shadowed.cpython-311.pyc"
    stray.parent.mkdir()
    stray.write_bytes(b"a checkout that ran compileall")                  # must not be shipped
    hook = "import sys, setuptools.build_meta as b; print(getattr(b, sys.argv[1])(sys.argv[2]))"
    sdist = out / run([sys.executable, "-c", hook, "build_sdist", out], src, env).strip().splitlines()[-1]
    with tarfile.open(sdist) as tar:
        tar.extractall(base / "unpacked", **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    unpacked = base / "unpacked" / sdist.name.removesuffix(".tar.gz")
    wheel = out / run([sys.executable, "-c", hook, "build_wheel", out], unpacked, env).strip().splitlines()[-1]
    return {"base": base, "sdist": sdist, "wheel": wheel, "env": env}


def test_sdist_ships_the_samples_and_the_licence_and_no_tests(dists):
    with tarfile.open(dists["sdist"]) as tar:
        top = dists["sdist"].name.removesuffix(".tar.gz") + "/"
        names = {m.name.removeprefix(top) for m in tar.getmembers() if m.isfile()}
    assert sample_files() <= names, sorted(sample_files() - names)[:5]
    assert "LICENSE" in names
    assert not [n for n in names if n.endswith(".pyc")]
    # tests/ needs the repository around it (docs/, bench/, conftest.py, the real clients): left out
    assert not [n for n in names if n.startswith("tests/")]


def test_wheel_ships_the_samples_the_licence_and_the_metadata(dists):
    with zipfile.ZipFile(dists["wheel"]) as whl:
        names = set(whl.namelist())
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(whl.read(meta_name).decode())
    assert sample_files() <= names, sorted(sample_files() - names)[:5]
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert meta["License-Expression"] == "MIT"
    assert "Environment :: Console" in meta.get_all("Classifier")
    assert "codex" in meta["Keywords"] and "claude code" in meta["Keywords"]
    assert not [n for n in names if n.startswith("tests/") or n.endswith(".pyc")]


def test_built_wheel_demo_shows_every_sample_session(dists, tmp_path):
    fresh = dists["base"] / "venv"
    venv.EnvBuilder(with_pip=False).create(fresh)
    py = fresh / "bin" / "python"
    run([sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-deps", "--no-index", dists["wheel"]],
        tmp_path, dists["env"])
    # click, orjson, zstandard, tomlkit from this environment; a plain path line loads no .pth of its own
    site = Path(run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], tmp_path).strip())
    dep_dirs = {str(metadata.distribution(d).locate_file("")) for d in ("click", "orjson", "zstandard", "tomlkit")}
    (site / "zz_histmig_test_deps.pth").write_text("\n".join(sorted(dep_dirs)) + "\n")

    env = {**dists["env"], "HOME": os.environ["HOME"]}
    where = run([py, "-c", "import histmig; print(histmig.__file__)"], tmp_path, env).strip()
    assert Path(where).is_relative_to(site), where          # the wheel's histmig, not the checkout
    assert list((site / "histmig" / "cli" / "__pycache__").glob("*.pyc")), "pip compiles at install"
    assert sysconfig.get_path("purelib") != str(site)

    out = run([fresh / "bin" / "histmig", "demo"], tmp_path, env)
    want = list(discover_all(samples.install(tmp_path / "expected")))
    assert len(want) >= 16
    lines = out.splitlines()
    missing = [(r.format, r.id, r.title) for r in want
               if not any(r.format in line and r.id[:8] in line and (r.title or "")[:24] in line for line in lines)]
    assert not missing, f"demo from the wheel does not show {missing}\n{out}"


def test_egg_info_is_not_tracked():
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    tracked = run(["git", "ls-files"], ROOT).splitlines()
    assert not [n for n in tracked if ".egg-info" in n]
    assert "*.egg-info/" in (ROOT / ".gitignore").read_text().splitlines()


def test_licence_file_matches_pyproject():
    assert 'license = "MIT"' in (ROOT / "pyproject.toml").read_text()
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "Copyright (c) 2026 histmig developers" in text
