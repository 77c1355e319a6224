#!/usr/bin/env bash
# The base install, as a researcher who wants the judge client and the metrics in a project of their own gets it: a
# clean virtual environment, the package without any extra (the lock as constraints, so the versions are the tested
# ones), then .ci/base_check.py: the base subpackages import, no extra's package is there, a part that needs an extra
# says which, and one judgment runs against the fake OpenAI server through a remote-endpoint judge profile.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
src=$(mktemp -d)
work=$(mktemp -d)
# a fresh folder per run unless one is named: two runs on one machine never share (and break) one environment
venv=${RECJUDGE_BASE_VENV:-$work/venv}
trap 'rm -rf "$src" "$work"' EXIT

# the package from a copy of its sources, so the build writes nothing into the checkout
tar -c --exclude=__pycache__ pyproject.toml README.md LICENSE recjudge_utils | tar -x -C "$src"
rm -rf "$venv"
start=$(date +%s)
"${PYTHON:-python3}" -m venv "$venv"
# (pip's configured extra indexes here warn for every package they lack: noise, filtered)
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -c requirements/lock.txt "$src" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
echo "base install: $(( $(date +%s) - start )) s, $(du -sh "$venv" | cut -f1) in $venv"

# -I and another working directory: the installed package is imported, not the checkout's source tree
cd "$work"
"$venv/bin/python" -I "$repo/.ci/base_check.py" "$repo"
