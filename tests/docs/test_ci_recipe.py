"""docs/ci.md's GitHub Actions job, run step by step on fresh runners.

The job is read from the doc's YAML. Each run is a fresh runner: its own workspace (the checkout: this
repository's recordings), temporary folder and home folder. The steps run as written: ``run`` steps in bash with
the job's and the step's environment (``${{ ... }}`` expressions filled in as GitHub does: the workspace, the
runner's temporary folder, the secret, ``hashFiles``); ``actions/cache`` restores the folder saved under its key
(or a ``restore-keys`` prefix) before the steps after it and saves it at the end of the job; the checkout, the
Python setup and the upload are what a runner does anyway. The one step not run is ``pip install .``: the test
asserts it installs this repository (whose project is ``speech-clock``, with the ``speechclock`` command) and
runs the command from the environment ``make install`` made the same way, with each runner's own fresh install of
the decoders (PyAV, soundfile, soxr: their files and wheel records copied anew, so every file has a new time, as
pip writes it on a fresh runner) first on its ``PYTHONPATH``: the trace cache names the tool by them.

With the secret, the second runner decodes nothing: its restored cache is warm (no entry is added). Without it
(a fork's pull request), the second runner's cache is cold (every recording's entries are made again) and its
verdicts are the same.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SECRET = "0123456789abcdef" * 4
#: ``pip install speech-clock`` (or with extras): a name the package index does not have (a direct reference,
#: ``speech-clock @ git+URL``, is not one).
INDEX_NAME = r"pip install ['\"]?speech-clock\b(?!\s*@)"


def job() -> dict:
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    section = text[text.index("## GitHub Actions") :]
    (block,) = re.findall(r"```yaml\n(.*?)```", section[: section.index("## GitLab CI")], re.S)
    return yaml.safe_load(block)["jobs"]["check"]


def hash_files(workspace: Path, pattern: str) -> str:
    digest = hashlib.sha256()
    for path in sorted(workspace.glob(pattern)):
        if path.is_file():
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def fill(text: str, context: dict[str, str], workspace: Path) -> str:
    def one(m: re.Match) -> str:
        expression = m.group(1).strip()
        found = re.fullmatch(r"hashFiles\('([^']+)'\)", expression)
        if found:
            return hash_files(workspace, found.group(1))
        return context[expression]

    return re.sub(r"\$\{\{(.*?)\}\}", one, str(text))


def fresh_decoders(site: Path) -> None:
    """The decoders' packages and their wheel records, copied into ``site`` as a fresh install writes them (new
    file times; the records last, as pip writes them)."""
    from clock.run.cache import _DECODERS

    installed = Path(np.__file__).resolve().parent.parent  # the environment's site-packages
    site.mkdir(parents=True)
    for name in _DECODERS:
        if (installed / name).is_dir():
            shutil.copytree(installed / name, site / name, copy_function=shutil.copyfile)
        elif (installed / f"{name}.py").is_file():
            shutil.copyfile(installed / f"{name}.py", site / f"{name}.py")
    for record in sorted(installed.glob("*.dist-info/RECORD")):
        if any(line.startswith(("av/", "soundfile.py", "soxr/")) for line in record.read_text().splitlines()):
            shutil.copytree(record.parent, site / record.parent.name, copy_function=shutil.copyfile)


def run_job(tmp: Path, workspace: Path, store: dict[str, Path], *, secret: str) -> tuple[list[str], set[str], set[str]]:
    """One fresh runner: the job's steps, in ``workspace`` (emptied first: a runner's workspace is at the same path
    on every runner). Returns the check step's output lines and the cache folder's files when it was restored and
    at the end."""
    spec = job()
    if workspace.exists():
        shutil.rmtree(workspace)
    temp, home = tmp / "temp", tmp / "home"
    for folder in (workspace, temp, home):
        folder.mkdir(parents=True)
    fresh_decoders(tmp / "site")
    context = {"github.workspace": str(workspace), "runner.temp": str(temp), "secrets.SPEECHCLOCK_CACHE_KEY": secret}
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(tmp / "site"),
    }
    env |= {k: fill(v, context, workspace) for k, v in spec["env"].items()}
    restored: set[str] = set()
    cached: tuple[Path, str] | None = None
    printed: list[str] = []
    for step in spec["steps"]:
        uses = step.get("uses", "")
        if uses.startswith("actions/checkout@"):
            shutil.copytree(ROOT / "recordings", workspace / "recordings")
        elif uses.startswith(("actions/setup-python@", "actions/upload-artifact@")):
            pass
        elif uses.startswith("actions/cache@"):
            options = {k: fill(v, context, workspace) for k, v in step["with"].items()}
            path = workspace / options["path"]
            key = options["key"]
            hit = store.get(key) or next((v for k, v in store.items() if k.startswith(options["restore-keys"])), None)
            if hit is not None:
                shutil.copytree(hit, path)
                restored = {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}
            cached = (path, key)
        elif step.get("run", "").strip() == "pip install .":
            # This repository, installed: its project and its command (the test's environment was made so).
            project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
            assert project["name"] == "speech-clock" and "speechclock" in project["scripts"]
            assert shutil.which("speechclock", path=env["PATH"]) is not None
        else:
            command = step["run"]
            step_env = env | {k: fill(v, context, workspace) for k, v in step.get("env", {}).items()}
            done = subprocess.run(
                ["bash", "-e", "-c", command], cwd=workspace, env=step_env, capture_output=True, text=True, timeout=300
            )
            assert done.returncode == 0, f"{command!r}: {done.stdout}{done.stderr}"
            if "speechclock check" in command:
                printed = done.stdout.splitlines()
    assert cached is not None and printed, "the job has a cache step and a check step"
    path, key = cached
    end = {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}
    if key not in store:
        store[key] = tmp / "saved"
        shutil.copytree(path, store[key])
    return printed, restored, end


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The cache action's store, after a first runner ran the job with the secret."""
    saved: dict[str, Path] = {}
    workspace = tmp_path_factory.mktemp("work") / "repo"
    printed, restored, end = run_job(tmp_path_factory.mktemp("runner-1"), workspace, saved, secret=SECRET)
    assert not restored and end, "the first runner starts cold and leaves a cache"
    return saved, printed, workspace


def test_the_recipe_installs_this_repository_not_an_index_name():
    runs = [step.get("run", "") for step in job()["steps"]]
    assert "pip install ." in runs and not any(re.search(INDEX_NAME, r) for r in runs)
    # Nor does any doc, or the notebook, tell a reader to install a name the index does not have.
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "notebooks").glob("*"))]:
        text = doc.read_text(encoding="utf-8")
        assert not re.search(INDEX_NAME, text), doc


def test_a_fresh_runner_restores_a_warm_cache_with_the_secret(store, tmp_path):
    saved, first, workspace = store
    printed, restored, end = run_job(tmp_path, workspace, dict(saved), secret=SECRET)
    assert restored and end == restored  # nothing decoded or hashed again: no entry added
    assert printed == first


def test_without_the_secret_a_fresh_runner_decodes_everything_again_to_the_same_verdicts(store, tmp_path):
    saved, first, workspace = store
    printed, restored, end = run_job(tmp_path, workspace, dict(saved), secret="")
    # Every recording decoded anew, its trace filed under the runner's own key.
    audio = [p for p in (ROOT / "recordings").iterdir() if p.suffix in (".webm", ".ogg", ".wav")]
    assert restored and len({f for f in end - restored if f.startswith("traces/")}) == len(audio)
    assert printed == first
