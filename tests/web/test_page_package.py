"""The page clock as a package: one source, its builds, types, and an npm tarball a page imports.

``clock/web/build.py`` writes ``speechclock.js`` (classic script),
``speechclock.mjs`` (ES module), ``speechclock.cjs`` (CommonJS), the worklet's
module, the types and the LICENSE from ``clock/web/src/``; the committed
outputs must be what it writes. The commands docs/clock.md gives (``npm pack
./clock/web``, ``npm install ./speechclock-*.tgz``) run as written in a
scratch copy, and a page must import the installed module, load the classic
script twice, and get one error naming the key for each bad config. A strict
TypeScript consumer compiles against the installed package, as an ES module
and as CommonJS, and runs in node.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from browser import POST_JS, run_page

from clock.core.recommend.rules import Rule
from clock.core.thresholds import LEVEL_AFTER_STOPPED, Thresholds
from clock.web import build, page_config, script

WEB = Path(build.__file__).resolve().parent
ROOT = WEB.parent.parent
TOOLS = ROOT / "tests" / "js" / "node_modules" / ".bin"


def test_the_committed_builds_are_what_the_build_writes():
    for path, text in build.outputs().items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name} is stale: run python clock/web/build.py"


def test_clock_web_still_returns_the_classic_script():
    text = script()
    assert text == (WEB / "speechclock.js").read_text(encoding="utf-8")
    assert "root.SpeechClock = SpeechClock;" in text and "\nexport " not in text


def test_the_package_names_its_files_and_types():
    package = json.loads((WEB / "package.json").read_text(encoding="utf-8"))
    assert package["exports"]["."] == {
        "import": {"types": "./speechclock.d.mts", "default": "./speechclock.mjs"},
        "require": {"types": "./speechclock.d.cts", "default": "./speechclock.cjs"},
    }
    assert package["main"] == "./speechclock.cjs" and package["types"] == "./speechclock.d.cts"
    files = {"speechclock.js", "speechclock.mjs", "speechclock.cjs", "speechclock-worklet.js"}
    assert set(package["files"]) == files | {"speechclock.d.mts", "speechclock.d.cts", "LICENSE"}
    types = (WEB / "speechclock.d.mts").read_text(encoding="utf-8")
    for name in build.EXPORTS:
        assert name in types, name
    # Types for module users declare no window.SpeechClock (it is undefined for them).
    assert "interface Window" not in types.replace("declare global { interface Window", "")


def test_the_license_is_in_the_repository_and_the_package():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and (WEB / "LICENSE").read_text(encoding="utf-8") == text


def test_the_version_is_written_in_one_place():
    # package.json has the version; the clock version (logged as clock_version) is its major version, which the
    # build writes into every build; no doc names a package version.
    version = json.loads((WEB / "package.json").read_text(encoding="utf-8"))["version"]
    for name in ("speechclock.js", "speechclock.mjs", "speechclock.cjs"):
        text = (WEB / name).read_text(encoding="utf-8")
        assert f"const SPEECHCLOCK_VERSION = {version.split('.')[0]};" in text
    assert "SPEECHCLOCK_VERSION =" not in "".join(p.read_text(encoding="utf-8") for p in (WEB / "src").iterdir())
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        assert not re.search(
            r"speechclock-\d+\.\d+\.\d+\.tgz|package \d+\.\d+\.\d+", doc.read_text(encoding="utf-8")
        ), doc


def test_every_build_carries_the_worklet_as_text_made_at_build_time():
    worklet = (WEB / "speechclock-worklet.js").read_text(encoding="utf-8")
    assert "registerProcessor(" in worklet and worklet == build.worklet_source()
    for name in ("speechclock.js", "speechclock.mjs", "speechclock.cjs"):
        text = (WEB / name).read_text(encoding="utf-8")
        assert f"const SPEECHCLOCK_WORKLET_SOURCE = {json.dumps(worklet)};" in text
        assert ".toString()" not in text, name


# Each bad config, and the key its one error must name.
BAD = [
    ({"floor": 0}, "floor"),
    ({"floor": -0.1}, "floor"),
    ({"quiet_s": 0}, "quiet_s"),
    ({"onset_timeout_s": -1}, "onset_timeout_s"),
    ({"tick_s": "0"}, "tick_s"),
    ({"tick_s": "fast"}, "tick_s"),
    ({"fft_size": 1000}, "fft_size"),
    ({"fft_size": 65536}, "fft_size"),
    ({"flor": 0.003}, "flor"),
    ({"rule": "stopped-ish"}, "rule"),
    ({"rule": "level+stopped"}, "hangover_s"),
    ({"rule": "stopped+quiet", "hangover_s": 0}, "hangover_s"),
    ({"rule": "stopped", "hangover_s": 0.3}, "hangover_s"),
    ({"hangover_s": 0.3}, "hangover_s"),
    # The level clock bounds every rule: a hangover at or above the quiet time is refused.
    ({"rule": "level+stopped", "hangover_s": 2.5}, "hangover_s"),
    ({"rule": "stopped+quiet", "quiet_s": 1.0, "hangover_s": 1.5}, "hangover_s"),
]


def page() -> str:
    return f"""<!DOCTYPE html><html><body>
<script src="/node_modules/speechclock/speechclock.js"></script>
<script src="/node_modules/speechclock/speechclock.js"></script>
<script type="module">
{POST_JS}
import SpeechClockDefault, {{ SpeechClock, speechclockLevel }} from '/node_modules/speechclock/speechclock.mjs';
const ctx = new OfflineAudioContext(1, 4096, 48000);
const analyser = new AnalyserNode(ctx);
const errors = [];
for (const [config, key] of {json.dumps(BAD)}) {{
  try {{ new SpeechClock(analyser, config); errors.push([key, null]); }}
  catch (e) {{ errors.push([key, e.message]); }}
}}
const ok = new SpeechClock(analyser, {{floor: 0.004, tick_s: 0.05, fft_size: 512}});
const fftSize = analyser.fftSize;
const ruled = new SpeechClock(analyser, {{quiet_s: 2.5, rule: "level+stopped", hangover_s: 0.35}});
await post('/done', JSON.stringify({{
  classic: typeof window.SpeechClock, same: window.SpeechClock.version === SpeechClock.version,
  default: SpeechClockDefault === SpeechClock, level: speechclockLevel(new Float32Array([3, 4])),
  config: ok.config(), ruled: ruled.config(), fftSize, errors,
}}));
</script></body></html>"""


def install_commands() -> list[str]:
    """The shell blocks of docs/clock.md's Install section, as written."""
    text = (ROOT / "docs" / "clock.md").read_text(encoding="utf-8")
    section = text[text.index("## Install") : text.index("## The model")]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The package as the docs' commands pack and install it, in a scratch project beside a copy of clock/web."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed")
    scratch = tmp_path_factory.mktemp("project")
    shutil.copytree(WEB, scratch / "clock" / "web", ignore=shutil.ignore_patterns("__pycache__"))
    (scratch / "package.json").write_text('{"name": "scratch", "private": true}')
    commands = install_commands()
    assert [c.strip() for c in commands] == ["npm pack ./clock/web", "npm install ./speechclock-*.tgz"]
    # Offline: the package has no dependencies (npm reads these settings from the environment).
    env = os.environ | {"npm_config_offline": "true", "npm_config_audit": "false", "npm_config_fund": "false"}
    for command in commands:
        done = subprocess.run(
            ["bash", "-c", command], cwd=scratch, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"{command!r}: {done.stderr}"
    return scratch


def test_the_docs_commands_pack_and_install_every_file(installed):
    package = json.loads((WEB / "package.json").read_text(encoding="utf-8"))
    (tarball,) = installed.glob("speechclock-*.tgz")
    assert tarball.name == f"speechclock-{package['version']}.tgz"
    found = installed / "node_modules" / "speechclock"
    assert sorted(p.name for p in found.iterdir()) == sorted([*package["files"], "package.json"])


def test_npm_pack_installs_and_a_page_imports_it(chromium, installed):
    installed = installed / "node_modules" / "speechclock"
    files = {f"/node_modules/speechclock/{p.name}": p.read_bytes() for p in installed.iterdir()}
    done = json.loads(run_page(page(), timeout_s=60, files=files)["/done"])
    assert done["classic"] == "function" and done["same"] and done["default"]
    assert done["level"] == pytest.approx(12.5**0.5)
    assert done["config"] == {
        "floor": 0.004,
        "quiet_s": 2.5,
        "onset_timeout_s": 10,
        "tick_s": "5/100",
        "fft_size": 512,
        "rule": "level",
        "hangover_s": None,
    }
    # What derive --format js writes for a rule, the clock takes as it is.
    assert done["ruled"] == page_config(Thresholds(), rule=Rule(LEVEL_AFTER_STOPPED, 2.5, 0.35))
    assert done["fftSize"] == 512
    for key, message in done["errors"]:
        assert message is not None, f"no error for a bad {key}"
        assert f"config.{key} " in message and message.count("config.") == 1, message


CONSUMER = """
import SpeechClockDefault, { SpeechClock, speechclockConfig, speechclockLevel, SPEECHCLOCK_VERSION } from "speechclock";
import type { SpeechClockBeat, SpeechClockConfig } from "speechclock";

RULED_CONFIG
const config: SpeechClockConfig = RULED_CONFIG;
const beats: SpeechClockBeat[] = [];

// A page's use of the clock (type-checked; node has no AnalyserNode to run it on).
export async function page(analyser: AnalyserNode): Promise<number> {
  const clock = new SpeechClock(analyser, config, { path: "auto", workletUrl: "/js/speechclock-worklet.js" });
  clock.addEventListener("fallback", (e) => console.warn(e.detail.reason, e.detail.to));
  clock.addEventListener("track", (e) => console.warn(e.detail.type));
  clock.addEventListener("frozen", (e) => console.warn(e.detail.frozen_s, e.detail.gap_s));
  clock.addEventListener("quiet", (e) => beats.push(e.detail));
  await clock.start();
  clock.providerStopped();
  return clock.terminalResponse({ linger_s: 0.5 });
}

console.log(JSON.stringify({
  sameDefault: SpeechClockDefault === SpeechClock,
  version: SpeechClock.version,
  constant: SPEECHCLOCK_VERSION,
  level: speechclockLevel(new Float32Array([3, 4])),
  checked: Object.keys(speechclockConfig(RULED_CONFIG)).length,
  beats: beats.length,
}));
"""


def test_a_strict_typescript_consumer_compiles_and_runs_as_an_es_module_and_as_commonjs(installed):
    if not (TOOLS / "tsc").exists() or shutil.which("node") is None:
        pytest.skip("TypeScript is not installed (make js-tools)")
    text = (ROOT / "docs" / "clock.md").read_text(encoding="utf-8")
    (ruled,) = re.findall(r"^ *(const RULED_CONFIG = .*?;)$", text, re.S | re.M)  # docs/clock.md's, as written
    consumer = CONSUMER.replace("RULED_CONFIG\n", ruled + "\n", 1)
    for name in ("consumer.mts", "consumer.cts"):
        (installed / name).write_text(consumer, encoding="utf-8")
    tsconfig = {
        "compilerOptions": {
            "strict": True,
            "module": "node16",
            "moduleResolution": "node16",
            "target": "es2022",
            "lib": ["es2022", "dom"],
            "types": [],
            "outDir": "out",
        },
        "files": ["consumer.mts", "consumer.cts"],
    }
    (installed / "tsconfig.json").write_text(json.dumps(tsconfig), encoding="utf-8")
    run = dict(cwd=installed, capture_output=True, text=True, timeout=180)
    compiled = subprocess.run([str(TOOLS / "tsc"), "-p", "tsconfig.json"], **run)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    assert 'require("speechclock")' in (installed / "out" / "consumer.cjs").read_text(encoding="utf-8")
    version = int(json.loads((WEB / "package.json").read_text(encoding="utf-8"))["version"].split(".")[0])
    for name in ("consumer.mjs", "consumer.cjs"):
        ran = subprocess.run(["node", f"out/{name}"], **run)
        assert ran.returncode == 0, f"{name}: {ran.stderr}"
        assert json.loads(ran.stdout) == {
            "sameDefault": True,
            "version": version,
            "constant": version,
            "level": pytest.approx(12.5**0.5),
            "checked": 8,
            "beats": 0,
        }, name
