"""The page clock survives a production build: a page bundled as a web team would, run in headless Chromium.

A page imports the package (``import { SpeechClock } from "speechclock"``, installed as npm installs it) and is
built with esbuild (as it is, ``--minify``, ``--target=es2017``) and with Rollup and terser. Each build runs a
constructed tour through an OfflineAudioContext on both paths of the clock, as ``tests/web/test_page_clock.py`` runs
the unbundled script: the worklet path must start (no fallback), and every build must decide as the replay does,
tick for tick, and exactly as the unbundled script does. The worklet's module reaches the audio thread as text the
build of the package made, which no bundler rewrites.

A page whose Content-Security-Policy refuses ``blob:`` scripts cannot load that text as a module: the clock falls
back to polling and says so (a ``fallback`` event, a ``clock.fallback`` line in its log), and decides as the
worklet clock of a page that serves ``speechclock-worklet.js`` and passes its URL.

The tools come from ``tests/js`` (``make js-tools``, run by ``make test``: ``npm ci`` of its lock file).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from browser import POST_JS, run_page
from page_clock import constructed_tour, first_parting, offline_page

from clock.web import build, script

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tests" / "js"
BIN = TOOLS / "node_modules" / ".bin"
WEB = Path(build.__file__).resolve().parent

ENTRY = 'import { SpeechClock } from "speechclock";\nwindow.SpeechClock = SpeechClock;\n'
#: The builds: esbuild's arguments, or "rollup".
BUILDS = {
    "esbuild": ["--bundle"],
    "esbuild-minify": ["--bundle", "--minify"],
    "esbuild-es2017": ["--bundle", "--target=es2017"],
    "rollup-terser": "rollup",
}


def install_package(project: Path) -> None:
    """The package's files (those package.json names) in ``project/node_modules/speechclock``, as npm installs it."""
    package = json.loads((WEB / "package.json").read_text(encoding="utf-8"))
    target = project / "node_modules" / "speechclock"
    target.mkdir(parents=True)
    for name in [*package["files"], "package.json"]:
        shutil.copyfile(WEB / name, target / name)


def bundle(project: Path, name: str) -> str:
    how = BUILDS[name]
    out = project / f"{name}.js"
    run = dict(cwd=project, capture_output=True, text=True, timeout=120)
    if how == "rollup":
        env = os.environ | {"SPEECHCLOCK_ENTRY": str(project / "entry.js"), "SPEECHCLOCK_OUT": str(out)}
        done = subprocess.run([str(BIN / "rollup"), "-c", str(TOOLS / "rollup.config.mjs"), "--silent"], env=env, **run)
    else:
        done = subprocess.run([str(BIN / "esbuild"), "entry.js", *how, f"--outfile={out}", "--log-level=error"], **run)
    assert done.returncode == 0, f"{name}: {done.stderr}"
    return out.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def bundles(tmp_path_factory) -> dict[str, str]:
    from browser import CHROMIUM

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    if not (BIN / "esbuild").exists() or not (BIN / "rollup").exists():
        pytest.skip("the bundlers are not installed (make js-tools)")
    project = tmp_path_factory.mktemp("page")
    install_package(project)
    (project / "entry.js").write_text(ENTRY, encoding="utf-8")
    return {name: bundle(project, name) for name in BUILDS}


@pytest.fixture(scope="module")
def case():
    return constructed_tour(1)


@pytest.fixture(scope="module")
def unbundled(bundles, case):
    html, files = offline_page([case])
    return json.loads(run_page(html, files=files, timeout_s=300)["/done"])[0]


def test_the_builds_rewrote_the_package(bundles):
    # What the test is about: the bundlers did rewrite the clock's code (renamed its classes, lowered its syntax).
    # The core's class keeps its name only in the worklet's text (the unbundled script has it there and in code).
    assert script().count("class SpeechClockCore") == 2
    assert bundles["esbuild-minify"].count("class SpeechClockCore") == 1
    assert bundles["rollup-terser"].count("class SpeechClockCore") == 1
    assert "__spreadValues" in bundles["esbuild-es2017"]


@pytest.mark.parametrize("name", list(BUILDS))
def test_a_bundled_page_decides_as_the_replay_and_the_unbundled_script(bundles, case, unbundled, name):
    html, files = offline_page([case], library=bundles[name])
    (result,) = json.loads(run_page(html, files=files, timeout_s=300)["/done"])
    for path in ("poll", "worklet"):
        (one,) = result[path]
        assert first_parting(case, one) is None, f"{name}, {path} path"
        (before,) = unbundled[path]
        for key in ("levels", "states", "heard", "beats"):
            assert one[key] == before[key], f"{name}, {path} path: {key}"
    # The worklet ran the whole tour (offline_page fails a clock whose start() chose another path).
    assert len(result["worklet"][0]["levels"]) == case.trace().n_ticks


CSP_PAGE = """<!DOCTYPE html><html><head>
<meta http-equiv="Content-Security-Policy" content="default-src 'self' 'unsafe-inline'">
</head><body><script>
POST_JS
LIBRARY
const RATE = 48000;
async function run(workletUrl) {
  const ctx = new OfflineAudioContext(1, RATE, RATE);
  const voice = new OscillatorNode(ctx, {frequency: 220});
  const gate = new GainNode(ctx, {gain: 0});
  gate.gain.setValueAtTime(0.1, 0.2);
  gate.gain.setValueAtTime(0, 0.45);
  const analyser = new AnalyserNode(ctx);
  voice.connect(gate).connect(analyser).connect(ctx.destination);
  voice.start();
  const lines = [];
  const capture = {log: (type, fields = {}) => lines.push({type, ...fields}), logLevel: () => undefined};
  const clock = new SpeechClock(analyser, {quiet_s: 0.2}, {capture, workletUrl});
  const fallbacks = [];
  clock.addEventListener('fallback', (e) => fallbacks.push(e.detail));
  const quiet = [];
  clock.addEventListener('quiet', (e) => quiet.push(e.detail.t_s));
  clock.terminalResponse({t_s: 0.1});
  await clock.start();
  const path = clock.path;
  if (path === 'poll') {
    // The fallback polls on a timer; an offline context is polled at each tick instead.
    clock.stop();
    const at = (k) => ctx.suspend(k / 60).then(() => { clock.poll(); if (k < 58) at(k + 1); ctx.resume(); });
    at(0);
  } else {
    await clock.sync();
  }
  await ctx.startRendering();
  const beats = await clock.finish();
  return {path, fallbacks, quiet, beats, lines: lines.filter((l) => l.type !== 'clock.level')};
}
(async () => {
  const refused = await run(null);
  const served = await run('/speechclock-worklet.js');
  await post('/done', JSON.stringify({refused, served}));
})();
</script></body></html>"""


def test_a_worklet_the_page_refuses_falls_back_to_polling_and_says_so(chromium):
    html = CSP_PAGE.replace("POST_JS", POST_JS).replace("LIBRARY", script())
    files = {"/speechclock-worklet.js": script("speechclock-worklet.js").encode()}
    done = json.loads(run_page(html, files=files, timeout_s=120)["/done"])
    refused, served = done["refused"], done["served"]
    assert served["path"] == "worklet" and served["fallbacks"] == []
    assert refused["path"] == "poll"
    (fallback,) = refused["fallbacks"]
    assert fallback["from"] == "worklet" and fallback["to"] == "poll" and fallback["reason"]
    said = [line for line in refused["lines"] if line["type"].startswith("clock.")]
    assert [line["type"] for line in said[:2]] == ["clock.setting", "clock.fallback"] and said[0]["path"] == "poll"
    assert "clock.fallback" not in [line["type"] for line in served["lines"]]
    # Speech from 0.2 s to 0.45 s: both clocks hear it and end the beat at the same tick, 0.2 s of quiet after it.
    assert len(served["quiet"]) == 1 and refused["quiet"] == served["quiet"]
    assert refused["beats"] == served["beats"]
    (beat,) = served["beats"]
    assert beat["ended"] == "quiet" and 0.2 <= beat["start_s"] < 0.25 and 0.45 <= beat["last_word_s"] < 0.5


#: The stand-in's failure: on its first call 0.2 s (of context time) after its beat's first word.
FAILING = (
    "      const b = this.core.beat;\n"
    "      if (b && b.start_s !== null && currentFrame / sampleRate > b.start_s + 0.2) throw new Error('failed');\n"
)
FAILING_PAGE = """<!DOCTYPE html><html><body><script>
POST_JS
LIBRARY
(async () => {
  const RATE = 48000;
  const ctx = new AudioContext({sampleRate: RATE});
  await ctx.resume();
  const voice = new OscillatorNode(ctx, {frequency: 220});
  const gate = new GainNode(ctx, {gain: 0});
  const analyser = new AnalyserNode(ctx);
  voice.connect(gate).connect(analyser);
  voice.start();
  const lines = [];
  const capture = {log: (type, fields = {}) => lines.push({type, ...fields}), logLevel: () => undefined};
  const clock = new SpeechClock(analyser, {quiet_s: 0.5}, {capture, workletUrl: '/failing-worklet.js'});
  const seen = [];
  for (const type of ['fallback', 'speaking', 'quiet', 'state']) {
    clock.addEventListener(type, (e) => seen.push([type, e.detail.t_s, clock.path]));
  }
  await clock.start();
  const path = clock.path;
  // Speech from 0.3 s to 1.5 s of context time, told as a terminal response at 0.1 s.
  const t0 = ctx.currentTime;
  clock.terminalResponse({t_s: t0 + 0.1});
  gate.gain.setValueAtTime(0.1, t0 + 0.3);
  gate.gain.setValueAtTime(0, t0 + 1.5);
  await new Promise((resolve) => clock.addEventListener('quiet', resolve, {once: true}));
  const beats = await clock.finish();
  await ctx.close();
  await post('/done', JSON.stringify({path, t0, seen, beats, lines: lines.filter((l) => l.type === 'clock.fallback')}));
})();
</script></body></html>"""


def test_a_worklet_that_fails_mid_beat_hands_the_beat_to_polling(chromium):
    # A stand-in for an audio thread that fails mid-beat: the clock's own processor, throwing as FAILING says.
    real = script("speechclock-worklet.js")
    marker = "    process(inputs) {\n"
    assert real.count(marker) == 1
    failing = real.replace(marker, marker + FAILING)
    html = FAILING_PAGE.replace("POST_JS", POST_JS).replace("LIBRARY", script())
    done = json.loads(run_page(html, files={"/failing-worklet.js": failing.encode()}, timeout_s=120)["/done"])
    assert done["path"] == "worklet"
    kinds = [(kind, path) for kind, _, path in done["seen"]]
    # The beat opened and heard speech on the audio thread, which then failed; polling ended it.
    assert kinds == [
        ("state", "worklet"),
        ("speaking", "worklet"),
        ("state", "worklet"),
        ("fallback", "poll"),
        ("quiet", "poll"),
        ("state", "poll"),
    ]
    (line,) = done["lines"]
    assert line["path"] == "poll" and line["reason"]
    (beat,) = done["beats"]
    t0 = done["t0"]
    # The beat the audio thread opened, carried over: its terminal response and first word are the worklet's.
    opened, spoke = done["seen"][0][1], done["seen"][1][1]
    assert beat["ended"] == "quiet" and beat["terminal_s"] == opened and beat["start_s"] == spoke
    assert beat["terminal_s"] >= t0 + 0.1 - 1e-9 and beat["start_s"] >= t0 + 0.3
    assert beat["last_word_s"] - t0 >= 1.5 and beat["quiet_declared_s"] - beat["last_word_s"] >= 0.5 - 1e-9
