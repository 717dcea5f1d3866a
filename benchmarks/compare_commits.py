#!/usr/bin/env python3
"""Side-by-side performance comparison of two revisions, each run with its own code and its own
benchmark scripts, alternating in one session.

    .venv/bin/python benchmarks/compare_commits.py BASE HEAD [--rounds 5] [--only engine,server,client]
                                                  [--quick] [--json OUT.json] [--wait-quiet S] [--keep]

BASE and HEAD are anything ``git rev-parse`` takes (``a1da1ea``, ``main``, ``HEAD~3``), or
``WORKTREE`` for the working tree as it is now (tracked and untracked, not-ignored files copied at
the start, so edits made while the comparison runs do not leak into it). The same revision may be
given twice (``a1da1ea a1da1ea``): that measures the noise of the method.

Figures (each parsed from that revision's own script):

* ``engine``: ``benchmarks/bench_engine.py --runs 5``: complete games/s and ``apply``/s for both
  variants (``view``/s and actions/game are shown, not gated);
* ``server``: ``benchmarks/bench_server.py --mode saturation --runs 1 --seconds 15 --json F``
  (200 matches, ~21 s per run): accepted actions/s and server CPU µs per action;
* ``client``: ``benchmarks/bench_client.py --json --seconds 5 --runs 3``: frame time median and
  p99 while animating at 390×844 and 468×1013 (CPU while animating/idle and the first frame are
  shown, not gated).

A round runs, for each benchmark, BASE then HEAD, so the two runs of one figure are at most
~25 s apart and slow drift of the (shared) machine hits both; the report gives per figure the
median over the rounds of each revision (with min–max), the ratio HEAD/BASE and whether HEAD is
within 5 % (no more than 5 % fewer per second, no more than 5 % more µs/ms; being faster always
passes). It prints a Markdown table for docs/PERFORMANCE.md with the command line, date and the
CPU other processes used meanwhile. Defaults: 5 rounds, 11–13 minutes in all (12.4 on a busy machine) (engine ~17 s,
server ~22 s, client ~25 s per revision and round). ``--quick``:
2 rounds of small runs (~2 minutes), to check the tool, not for figures.

How each revision is isolated (the point of the tool)
-----------------------------------------------------
Each revision is exported with ``git archive REV | tar -x`` into
``/tmp/mineduel-bench-XXXX/<base|head>-<sha>/tree`` (nothing is registered in the shared
``.git``, unlike ``git worktree add``, so a killed run leaves nothing to prune and takes no lock).
Beside it, ``imp/mineduel/{client,server,shared,assets,locales}`` are symlinks into that tree (the
package-dir mapping of pyproject.toml) and the benchmark runs with ``PYTHONPATH=imp``.

PYTHONPATH alone is NOT enough with /work/main/.venv's interpreter: its editable install is a
``.pth`` file that appends a meta-path finder (``__editable___mine_duel_*_finder._EditableFinder``)
mapping ``mineduel.shared`` etc. to /work/main. It sits after ``PathFinder`` in
``sys.meta_path``, so the revision's modules do win — but any module that the revision does NOT
have falls through to the finder and is silently imported from /work/main (tried: under
a1da1ea's tree, ``import mineduel.shared.rules.engine`` loaded /work/main/shared/rules/engine.py).
A mixed tree like that would measure neither revision.

So the benchmarks run under a throw-away venv (``python -m venv --without-pip``, made from the
same base interpreter binary as .venv, so the same CPython) whose only addition is one ``.pth``
line naming .venv's site-packages directory. A directory added by a ``.pth`` line is put on
``sys.path`` but its own ``.pth`` files are not executed, so the dependencies (pygame-ce, Twisted,
orjson, ...) import from .venv while the editable finder is never installed. Subprocesses that the
benchmarks start (``sys.executable``: the server, the client scenarios, the load generator)
inherit the venv and PYTHONPATH, so they are isolated the same way. Before measuring, a probe run
under each revision's environment prints where ``mineduel.shared`` resolved and fails unless it is
inside that revision's tree, no editable finder is on ``sys.meta_path`` and no ``mineduel``
module came from elsewhere; it also imports every module of ``shared``, ``server`` and ``client``
and warns about those that fail (a commit that imports a file its author never added: with the
editable finder that would have come silently from /work/main's working tree). Each tree is
byte-compiled first, so the first round does not pay for writing ``.pyc`` files.

Cleanup: the temporary folder goes on normal exit, on Ctrl-C and on SIGTERM (each benchmark runs
in its own process group, which is killed on interruption; ``--keep`` keeps the folder).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import platform
import re
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("client", "server", "shared", "assets", "locales")
TOLERANCE = 0.05
BENCHES = ("engine", "server", "client")

# (key, label, unit, higher_is_better (None: neither), gated)
FIGURES: dict[str, list[tuple[str, str, str, bool | None, bool]]] = {
    "engine": [
        ("engine.cpu.games_per_s", "engine cpu: complete games/s", "/s", True, True),
        ("engine.online.games_per_s", "engine online: complete games/s", "/s", True, True),
        ("engine.cpu.apply_per_s", "engine cpu: `apply`/s", "/s", True, True),
        ("engine.online.apply_per_s", "engine online: `apply`/s", "/s", True, True),
        ("engine.cpu.view_per_s", "engine cpu: `view`/s", "/s", True, False),
        ("engine.online.view_per_s", "engine online: `view`/s", "/s", True, False),
        ("engine.cpu.actions_per_game", "engine cpu: actions/game", "", None, False),
        ("engine.online.actions_per_game", "engine online: actions/game", "", None, False),
    ],
    "server": [
        ("server.actions_per_s", "server saturation: accepted actions/s", "/s", True, True),
        ("server.cpu_us_per_action", "server CPU per action", "µs", False, True),
        ("server.rtt_p99_ms", "server round trip p99", "ms", False, False),
        ("server.loadgen_cpu_percent", "load generator CPU (% of a core)", "%", False, False),
    ],
    "client": [
        ("client.animate_390x844.frame_ms_median", "client frame median, animating 390×844", "ms", False, True),
        ("client.animate_390x844.frame_ms_p99", "client frame p99, animating 390×844", "ms", False, True),
        ("client.animate_468x1013.frame_ms_median", "client frame median, animating 468×1013", "ms", False, True),
        ("client.animate_468x1013.frame_ms_p99", "client frame p99, animating 468×1013", "ms", False, True),
        ("client.animate_390x844.cpu_percent_of_core", "client CPU animating 390×844 (% of a core)", "%", False, False),
        ("client.idle_390x844.cpu_percent_of_core", "client CPU idle 390×844 (% of a core)", "%", False, False),
        ("client.first_frame_s", "client start to first frame", "s", False, False),
    ],
}

SETTINGS = {
    False: {
        "rounds": 5,
        "engine": ["--runs", "5", "--seconds", "1.0"],
        "server": ["--mode", "saturation", "--runs", "1", "--seconds", "15"],
        "client": ["--json", "--seconds", "5", "--runs", "3"],
    },
    True: {  # --quick: checks the tool, the figures are only indicative
        "rounds": 2,
        "engine": ["--runs", "1", "--seconds", "0.5"],
        "server": ["--mode", "saturation", "--runs", "1", "--seconds", "3", "--matches", "100"],
        "client": ["--json", "--seconds", "2", "--runs", "1"],
    },
}


class BenchError(RuntimeError):
    pass


# ----- preparing a revision ------------------------------------------------------------------------
def git(*args: str, **kw: Any) -> str:
    return subprocess.run(["git", "--no-optional-locks", "-C", str(REPO), *args], check=True,
                          capture_output=True, text=True, **kw).stdout


class Revision:
    def __init__(self, role: str, spec: str, root: Path) -> None:
        self.role, self.spec = role, spec
        if spec.upper() == "WORKTREE":
            head = git("rev-parse", "HEAD").strip()
            dirty = [ln for ln in git("status", "--porcelain", "--untracked-files=normal").splitlines() if ln.strip()]
            self.sha = head
            self.label = f"WORKTREE ({head[:7]} + {len(dirty)} changed path{'s' * (len(dirty) != 1)})"
        else:
            self.sha = git("rev-parse", "--verify", f"{spec}^{{commit}}").strip()
            self.label = f"{self.sha[:7]}"
        self.subject = git("log", "-1", "--format=%s", self.sha).strip()[:90]
        self.dir = root / f"{role}-{self.sha[:12]}"
        self.tree = self.dir / "tree"
        self.imp = self.dir / "imp"
        self.resolved: str = ""
        self.broken: dict[str, str] = {}

    def export(self) -> None:
        self.tree.mkdir(parents=True)
        if self.spec.upper() == "WORKTREE":
            files = git("ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
            for rel in filter(None, files):
                src = REPO / rel
                if not src.is_file():  # deleted but still in the index
                    continue
                dst = self.tree / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst, follow_symlinks=False)
        else:
            archive = subprocess.Popen(["git", "-C", str(REPO), "archive", self.sha], stdout=subprocess.PIPE)
            subprocess.run(["tar", "-x", "-C", str(self.tree)], stdin=archive.stdout, check=True)
            archive.stdout.close()  # type: ignore[union-attr]
            if archive.wait() != 0:
                raise BenchError(f"git archive {self.sha} failed")
        pkg = self.imp / "mineduel"
        pkg.mkdir(parents=True)
        for name in PACKAGES:
            if (self.tree / name).is_dir():
                (pkg / name).symlink_to(self.tree / name, target_is_directory=True)


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.settings = SETTINGS[args.quick]
        self.root = Path(tempfile.mkdtemp(prefix="mineduel-bench-"))
        self.venv_python = self.root / "venv" / "bin" / "python"
        self.current: subprocess.Popen[str] | None = None

    # the isolated interpreter ------------------------------------------------------------------------
    def make_venv(self) -> None:
        src = Path(self.args.venv) / "bin" / "python"
        info = json.loads(subprocess.run(
            [str(src), "-c", "import json, site, sys; print(json.dumps({'base': sys._base_executable, "
             "'site': site.getsitepackages(), 'version': sys.version}))"],
            check=True, capture_output=True, text=True).stdout)
        self.python_version = info["version"].split()[0]
        subprocess.run([info["base"], "-m", "venv", "--without-pip", str(self.root / "venv")], check=True)
        site = subprocess.run([str(self.venv_python), "-c", "import site; print(site.getsitepackages()[0])"],
                              check=True, capture_output=True, text=True).stdout.strip()
        Path(site, "mineduel-bench-deps.pth").write_text("\n".join(info["site"]) + "\n")
        for sp in info["site"]:
            for pth in Path(sp).glob("*.pth"):
                if not (pth.name.startswith("__editable__") or pth.name == "distutils-precedence.pth"):
                    print(f"note: {pth} is not executed in the bench venv", file=sys.stderr)

    def env(self, rev: Revision) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", "PYTHONNOUSERSITE")}
        env.update(PYTHONPATH=str(rev.imp), PYTHONNOUSERSITE="1", VIRTUAL_ENV=str(self.root / "venv"),
                   PATH=f"{self.root / 'venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}",
                   SDL_VIDEODRIVER="dummy", SDL_AUDIODRIVER="dummy", PYGAME_HIDE_SUPPORT_PROMPT="1")
        return env

    def check_isolation(self, rev: Revision) -> None:
        probe = (
            "import sys, json, importlib.util, mineduel, mineduel.shared as s\n"
            "from pathlib import Path\n"
            "finders = [repr(f) for f in sys.meta_path if 'editable' in repr(f).lower()]\n"
            "import importlib, pkgutil\n"
            "broken = {}\n"
            "for sub in ('shared', 'server', 'client'):\n"
            "    try:\n"
            "        pkg = importlib.import_module('mineduel.' + sub)\n"
            "    except Exception as exc:\n"
            "        broken['mineduel.' + sub] = repr(exc); continue\n"
            "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
            "        if m.name.endswith('__main__'):\n"
            "            continue\n"
            "        try:\n"
            "            importlib.import_module(m.name)\n"
            "        except Exception as exc:\n"
            "            broken[m.name] = repr(exc)\n"
            "print(json.dumps({'shared': str(Path(s.__path__[0]).resolve()), 'ns': list(mineduel.__path__),"
            " 'editable': finders, 'exe': sys.executable, 'broken': broken,"
            " 'leaked': sorted(k for k, v in sys.modules.items() if k.startswith('mineduel.')"
            " and getattr(v, '__file__', None) and not str(Path(v.__file__).resolve()).startswith(sys.argv[1]))}))\n"
        )
        out = subprocess.run([str(self.venv_python), "-c", probe, str(rev.tree.resolve())], env=self.env(rev), cwd=rev.tree,
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise BenchError(f"{rev.label}: the isolation probe failed:\n{out.stderr}")
        info = json.loads(out.stdout.strip().splitlines()[-1])
        tree = str(rev.tree.resolve())
        ok = info["shared"].startswith(tree + os.sep) or info["shared"] == str((rev.tree / "shared").resolve())
        print(f"  {rev.role} {rev.label}: mineduel.shared -> {info['shared']}"
              f" (namespace {info['ns']}; editable finders: {info['editable'] or 'none'})", file=sys.stderr)
        if not ok or info["editable"] or len(info["ns"]) != 1 or info["leaked"]:
            raise BenchError(f"{rev.label}: not isolated: {info}")
        # e.g. a commit that imports a file its author never added: a warning, since the benchmarks
        # may not need that module (one they need fails its run: nothing falls back to /work/main)
        rev.broken = info["broken"]
        for k, v in info["broken"].items():
            print(f"  WARNING {rev.role} {rev.label}: {k} does not import in this revision: {v}", file=sys.stderr)
        rev.resolved = info["shared"]

    def prepare(self, rev: Revision) -> None:
        t = time.monotonic()
        rev.export()
        self.check_isolation(rev)
        subprocess.run([str(self.venv_python), "-m", "compileall", "-q", "-j", "0",
                        *[str(rev.tree / d) for d in (*PACKAGES[:3], "benchmarks") if (rev.tree / d).is_dir()]],
                       env=self.env(rev), check=False, stdout=subprocess.DEVNULL)
        print(f"  {rev.role}: {rev.label} '{rev.subject}' ready in {time.monotonic() - t:.1f} s", file=sys.stderr)

    # running one benchmark ---------------------------------------------------------------------------
    def run(self, rev: Revision, bench: str) -> dict[str, Any]:
        script = rev.tree / "benchmarks" / f"bench_{bench}.py"
        if not script.exists():
            raise BenchError(f"{rev.label} has no {script.relative_to(rev.tree)}")
        cmd = [str(self.venv_python), str(script), *self.settings[bench]]
        json_out = None
        if bench == "server":
            json_out = rev.dir / "server.json"
            json_out.unlink(missing_ok=True)
            cmd += ["--json", str(json_out)]
        if self.args.wait_quiet:
            wait_quiet(self.args.wait_quiet)
        busy0, kids0, wall0 = _busy_seconds(), _children_cpu(), time.monotonic()
        nice = self.args.nice
        self.current = subprocess.Popen(cmd, env=self.env(rev), cwd=rev.tree, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, start_new_session=True,
                                        preexec_fn=(lambda: _renice(nice)) if nice else None)
        try:
            stdout, stderr = self.current.communicate(timeout=900)
        except subprocess.TimeoutExpired:
            self.kill_current()
            raise BenchError(f"{rev.label} {bench}: timed out") from None
        rc = self.current.returncode
        self.current = None
        wall = time.monotonic() - wall0
        other = max(0.0, (_busy_seconds() - busy0) - (_children_cpu() - kids0)) / wall
        try:
            if bench == "engine":
                figures = parse_engine(stdout)
            elif bench == "server":
                figures = parse_server(read_json_report(json_out))
            else:
                figures = parse_client(stdout)
        except (ValueError, KeyError, json.JSONDecodeError) as exc:
            raise BenchError(f"{rev.label} {bench}: rc {rc}, could not parse ({exc}):\n"
                             f"{stdout[-2000:]}\n{stderr[-2000:]}") from exc
        warning = None
        if rc != 0:  # bench_server exits 1 when the server logged errors; the figures are still there
            warning = f"{bench} exited {rc}: {(stdout + stderr).strip().splitlines()[-1:]}"
            print(f"    warning: {warning}", file=sys.stderr)
        return {"figures": figures, "seconds": round(wall, 1), "other_cpu_cores": round(other, 2), "warning": warning}

    def kill_current(self) -> None:
        proc, self.current = self.current, None
        if proc is not None and proc.poll() is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=5)
                    break
                except subprocess.TimeoutExpired:
                    continue

    def cleanup(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # a second Ctrl-C must not stop the cleanup half-way
        self.kill_current()
        if self.args.keep:
            print(f"kept {self.root}", file=sys.stderr)
        else:
            shutil.rmtree(self.root, ignore_errors=True)


def _renice(nice: int) -> None:
    """In the benchmark's child, after its setsid: with the kernel's autogroup scheduling on (the
    default), CPU is shared between sessions first and niceness only counts inside a session, so
    the new session's autogroup gets the niceness too."""
    os.nice(nice)
    with contextlib.suppress(OSError):
        Path("/proc/self/autogroup").write_text(f"{nice}\n")


# ----- parsing each script's output ---------------------------------------------------------------
ENGINE_LINE = re.compile(
    r"^(?P<variant>\w+)\s+games/s\s+(?P<games>[\d,.]+)\s+\(actions/game\s+(?P<apg>[\d.]+)\)"
    r"\s+apply/s\s+(?P<apply>[\d,.]+)\s+view/s\s+(?P<view>[\d,.]+)", re.M)


def parse_engine(stdout: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for m in ENGINE_LINE.finditer(stdout):
        v = m["variant"]
        out[f"engine.{v}.games_per_s"] = float(m["games"].replace(",", ""))
        out[f"engine.{v}.apply_per_s"] = float(m["apply"].replace(",", ""))
        out[f"engine.{v}.view_per_s"] = float(m["view"].replace(",", ""))
        out[f"engine.{v}.actions_per_game"] = float(m["apg"])
    if "engine.cpu.games_per_s" not in out or "engine.online.games_per_s" not in out:
        raise ValueError("no 'cpu'/'online' games/s lines")
    return out


def read_json_report(path: Path | None) -> Any:
    """The ``--json`` file bench_server wrote; ValueError when there is none."""
    if path is None or not path.exists():
        raise ValueError("no --json file written")
    return json.loads(path.read_text())


def parse_server(data: dict[str, Any]) -> dict[str, float]:
    runs = data["saturation"]
    med = lambda key: statistics.median(r[key] for r in runs)  # noqa: E731
    return {
        "server.actions_per_s": med("actions_per_s"),
        "server.cpu_us_per_action": med("server_cpu_us_per_action"),
        "server.rtt_p99_ms": med("rtt_p99_ms"),
        "server.loadgen_cpu_percent": 100 * med("loadgen_cpu"),
        "server.errors": float(sum(sum((r.get("errors") or {}).values()) for r in runs)),
        "server.refused": float(sum(sum((r.get("refused") or {}).values()) for r in runs)),
    }


def parse_client(stdout: str) -> dict[str, float]:
    start = stdout.find("{")
    if start < 0:
        raise ValueError("no JSON object in the output")
    data = json.loads(stdout[start:])
    out = {"client.first_frame_s": float(data["first_frame_s"]["median"])}
    for scenario, values in data.items():
        if isinstance(values, dict) and "frame_ms_median" in values:
            for key in ("frame_ms_median", "frame_ms_p99", "cpu_percent_of_core"):
                if values.get(key) is not None:
                    out[f"client.{scenario}.{key}"] = float(values[key])
    return out


# ----- the machine ----------------------------------------------------------------------------------
def _stat() -> tuple[int, int]:
    with open("/proc/stat") as f:
        parts = [int(x) for x in f.readline().split()[1:]]
    return sum(parts), parts[3] + parts[4]


def _busy_seconds() -> float:
    total, idle = _stat()
    return (total - idle) / os.sysconf("SC_CLK_TCK")


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def wait_quiet(max_wait: float, idle_cores: float = 1.7) -> None:
    ncpu = os.cpu_count() or 1
    end = time.monotonic() + max_wait
    while True:
        a = _stat()
        time.sleep(1.0)
        b = _stat()
        idle = (b[1] - a[1]) / max(1, b[0] - a[0]) * ncpu
        if idle >= min(idle_cores, ncpu - 0.3) or time.monotonic() > end:
            return


# ----- the report -----------------------------------------------------------------------------------
def fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "–"
    if unit == "/s" or abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}" if abs(v) >= 1 or unit in ("%", "") else f"{v:.3f}"


def fmt_range(median: float | None, values: list[float], unit: str) -> str:
    """One table cell: the median and the (min–max) range, with the unit after the median (none for /s)."""
    suffix = "" if unit in ("/s", "") else f" {unit}"
    return f"{fmt(median, unit)}{suffix} ({fmt(min(values), unit)}–{fmt(max(values), unit)})"


def summarise(results: dict[str, list[dict[str, Any]]], benches: list[str]) -> list[dict[str, Any]]:
    rows = []
    for bench in benches:
        for key, label, unit, higher, gated in FIGURES[bench]:
            vals = {role: [r["figures"][key] for r in results[role] if r["bench"] == bench and key in r["figures"]]
                    for role in ("base", "head")}
            if not vals["base"] or not vals["head"]:
                continue
            b, h = statistics.median(vals["base"]), statistics.median(vals["head"])
            ratio = h / b if b else None
            within = None
            if gated and ratio is not None:
                within = ratio >= 1 - TOLERANCE if higher else ratio <= 1 + TOLERANCE
            rows.append({"key": key, "label": label, "unit": unit, "higher_is_better": higher, "gated": gated,
                         "base": vals["base"], "head": vals["head"], "base_median": b, "head_median": h,
                         "ratio": ratio, "within_5_percent": within})
    return rows


def _spread(values: list[float]) -> float:
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m else 0.0


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    base, head = meta["base"], meta["head"]
    nice = f", benchmarks at niceness {meta['nice']}" if meta.get("nice") else ""
    out = [
        f"Command: `{meta['command']}` — {meta['date']}, {meta['rounds']} rounds alternating base/head per "
        f"benchmark, {meta['elapsed_min']:.1f} min{nice}; CPython {meta['python']}, {meta['cpus']} cores "
        f"(other processes used {meta['other_cpu']['base']:.2f} / {meta['other_cpu']['head']:.2f} cores "
        f"during the base / head runs, median).",
        "",
        f"Base: `{base['label']}` {base['subject']}  ",
        f"Head: `{head['label']}` {head['subject']}",
        "",
        "| figure | base: median (min–max) | head: median (min–max) | spread base / head | head/base | within 5 % |",
        "| --- | ---: | ---: | ---: | ---: | :---: |",
    ]
    for r in rows:
        direction = {True: " ↑", False: " ↓", None: ""}[r["higher_is_better"]]
        verdict = "–" if r["within_5_percent"] is None else ("yes" if r["within_5_percent"] else "**NO**")
        ratio = "–" if r["ratio"] is None else f"{r['ratio']:.3f}"
        label = r["label"] + ("" if r["gated"] else " *(info)*")
        spread = " / ".join(f"{_spread(r[role]):.0%}" for role in ("base", "head"))
        base_cell = fmt_range(r["base_median"], r["base"], r["unit"])
        head_cell = fmt_range(r["head_median"], r["head"], r["unit"])
        out.append(f"| {label}{direction} | {base_cell} | {head_cell} | {spread} | {ratio} | {verdict} |")
    gated = [r for r in rows if r["within_5_percent"] is not None]
    failed = [r["label"] for r in gated if not r["within_5_percent"]]
    out += ["", f"↑ higher is better, ↓ lower is better; *spread*: (max − min) / median over the rounds of each "
            f"revision (a ratio is only as good as that); *within 5 %*: head is at most 5 % worse (faster always "
            f"passes). {len(gated) - len(failed)} of {len(gated)} gated figures within 5 %"
            + (f"; outside: {', '.join(failed)}." if failed else ".")]
    if meta.get("warnings"):
        out.append("Warnings: " + "; ".join(meta["warnings"]))
    return "\n".join(out)


# ----- main -----------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base", help="the revision before the change (git rev or WORKTREE)")
    parser.add_argument("head", help="the revision after the change (git rev or WORKTREE)")
    parser.add_argument("--rounds", type=int, default=None, help="base/head pairs per benchmark (default 5, --quick 2)")
    parser.add_argument("--only", default=",".join(BENCHES), help="comma-separated subset of engine,server,client")
    parser.add_argument("--quick", action="store_true", help="small runs, 2 rounds (~2 min): checks the tool")
    parser.add_argument("--json", default=None, metavar="PATH", help="write every raw figure and the summary here")
    parser.add_argument("--wait-quiet", type=float, default=0.0, metavar="S",
                        help="before each benchmark run wait up to S s for an idle machine (1.7 cores free)")
    parser.add_argument("--nice", type=int, default=0, metavar="N",
                        help="run the benchmarks at this niceness (negative needs root: e.g. -10 on a shared machine "
                             "makes other processes' CPU use disturb the figures less, and slows them down)")
    parser.add_argument("--venv", default=str(REPO / ".venv"), help="venv whose interpreter and dependencies are used")
    parser.add_argument("--keep", action="store_true", help="keep the temporary trees (for debugging)")
    args = parser.parse_args(argv)
    benches = [b.strip() for b in args.only.split(",") if b.strip()]
    if not benches or any(b not in BENCHES for b in benches):
        parser.error(f"--only takes a subset of {','.join(BENCHES)}")
    rounds = args.rounds or SETTINGS[args.quick]["rounds"]
    command = "python benchmarks/compare_commits.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))

    bench = Bench(args)

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    # SIGINT too: a background job of a non-interactive shell starts with SIGINT ignored, and
    # Python then raises no KeyboardInterrupt for it.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_term)
    started = time.monotonic()
    results: dict[str, list[dict[str, Any]]] = {"base": [], "head": []}
    warnings: list[str] = []
    revs: list[Revision] = []
    try:
        print(f"preparing in {bench.root} ...", file=sys.stderr)
        revs = [Revision("base", args.base, bench.root), Revision("head", args.head, bench.root)]
        bench.make_venv()
        for rev in revs:
            bench.prepare(rev)
            warnings += [f"{rev.role} {rev.label}: `{k}` does not import ({v})" for k, v in rev.broken.items()]
        for i in range(rounds):
            for name in benches:
                for rev in revs:
                    print(f"[round {i + 1}/{rounds}] {name:6s} {rev.role} {rev.label} ...", end=" ", file=sys.stderr, flush=True)
                    res = bench.run(rev, name)
                    res.update(bench=name, round=i + 1)
                    results[rev.role].append(res)
                    if res["warning"]:
                        warnings.append(f"round {i + 1} {rev.role}: {res['warning']}")
                    key, label, unit = FIGURES[name][0][:3]
                    print(f"{label} {fmt(res['figures'].get(key), unit)}, {res['seconds']} s, "
                          f"others {res['other_cpu_cores']:.2f} cores", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        print("\ninterrupted: cleaning up", file=sys.stderr)
        bench.cleanup()
        return 130
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        bench.cleanup()
        return 2
    except BaseException:
        bench.cleanup()
        raise
    bench.cleanup()

    rows = summarise(results, benches)
    meta = {
        "command": command, "date": _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "rounds": rounds, "quick": args.quick, "nice": args.nice, "only": benches, "settings": {b: SETTINGS[args.quick][b] for b in benches},
        "elapsed_min": (time.monotonic() - started) / 60, "python": bench.python_version,
        "cpus": os.cpu_count(), "machine": platform.platform(),
        "base": {"spec": revs[0].spec, "sha": revs[0].sha, "label": revs[0].label, "subject": revs[0].subject,
                 "mineduel_shared": revs[0].resolved},
        "head": {"spec": revs[1].spec, "sha": revs[1].sha, "label": revs[1].label, "subject": revs[1].subject,
                 "mineduel_shared": revs[1].resolved},
        "other_cpu": {role: statistics.median(r["other_cpu_cores"] for r in results[role]) for role in results},
        "warnings": warnings,
    }
    table = markdown(rows, meta)
    print(table)
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": meta, "summary": rows, "runs": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
