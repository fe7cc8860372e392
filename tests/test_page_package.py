"""The page clock as a package: one source, two builds, types, and an npm tarball a page imports.

``clock/web/build.py`` writes ``speechclock.js`` (classic script) and
``speechclock.mjs`` (ES module) from ``clock/web/src/speechclock.js``; the
committed builds must be what it writes. ``npm pack`` of ``clock/web`` must
make a tarball that installs into a scratch project, and a page must import
the installed module, load the classic script twice, and get one error naming
the key for each bad config.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from browser import POST_JS, run_page

from clock.core.beats import LEVEL_AFTER_STOPPED
from clock.core.rules import Rule
from clock.core.thresholds import Thresholds
from clock.web import build, page_config, script

WEB = Path(build.__file__).resolve().parent


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
        "types": "./speechclock.d.ts",
        "import": "./speechclock.mjs",
        "default": "./speechclock.js",
    }
    assert set(package["files"]) == {"speechclock.js", "speechclock.mjs", "speechclock.d.ts"}
    types = (WEB / "speechclock.d.ts").read_text(encoding="utf-8")
    for name in build.EXPORTS:
        assert name in types, name


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


def test_npm_pack_installs_and_a_page_imports_it(chromium, tmp_path):
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed")
    run = dict(capture_output=True, text=True, check=True, timeout=120)
    packed = subprocess.run([npm, "pack", str(WEB), "--pack-destination", str(tmp_path), "--silent"], **run)
    tarball = tmp_path / packed.stdout.strip().splitlines()[-1]
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "package.json").write_text('{"name": "scratch", "private": true}')
    install = [npm, "install", "--offline", "--no-audit", "--no-fund", "--silent", str(tarball)]
    subprocess.run(install, cwd=scratch, **run)
    installed = scratch / "node_modules" / "speechclock"
    assert sorted(p.name for p in installed.iterdir()) == sorted(
        ["package.json", "speechclock.d.ts", "speechclock.js", "speechclock.mjs"]
    )
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
