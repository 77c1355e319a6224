"""Label Studio for real: a Label Studio server on loopback (SQLite in a temporary folder), a project made from the
exported labelling configuration, the exported tasks imported through its API, two people labelling through the API
with their own tokens, and the project's JSON export read back through :func:`read_labels`.

Label Studio runs from an environment of its own (``make label-studio``: ``.venv-label-studio``; its pins cannot
live beside the project's), named by ``RECJUDGE_LABEL_STUDIO`` (the ``label-studio`` executable) or found there; the
test is skipped without it. It talks HTTP to the server only.

Since 1.23 an organisation's legacy API tokens are disabled by default (a request with one is answered 401), so each
person signs in with the web form, creates a personal access token (a JWT refresh token, ``POST /api/token/``) and
exchanges it for an access token (``POST /api/token/refresh/``), sent as ``Authorization: Bearer``.

``RECJUDGE_LABEL_STUDIO_SAVE=<folder>`` copies the export, the project's files and the sample into that folder
(``tests/fixtures/label_studio/`` holds such a copy, which
``tests/annotation/test_label_studio_export_fixture.py`` reads).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import requests
from annotation_world import NOTEBOOK, make_run
from locations import ROOT
from sklearn.metrics import cohen_kappa_score

from recjudge_utils.annotation import AnnotationSample, Labels, export_tasks, kind_named, read_labels
from recjudge_utils.annotation.agreement_with_people import human_agreement, judge_agreement
from recjudge_utils.annotation.read_labels import LABEL_COLUMNS

KIND = "scores"
N_BOOT = 200
FIRST = ("first.annotator@example.com", "first-Annotator-pw-1")  # made by label-studio start --username/--password
SECOND = ("second.annotator@example.com", "second-Annotator-pw-2")  # signs up through the web form


def _executable() -> Path | None:
    named = os.environ.get("RECJUDGE_LABEL_STUDIO")
    path = Path(named) if named else ROOT / ".venv-label-studio" / "bin" / "label-studio"
    return path if path.is_file() and os.access(path, os.X_OK) else None


pytestmark = [
    pytest.mark.slow,
    pytest.mark.label_studio,
    pytest.mark.skipif(
        _executable() is None,
        reason="no Label Studio: make label-studio installs it in .venv-label-studio, or set RECJUDGE_LABEL_STUDIO to "
        "a label-studio executable",
    ),
]


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path
    started_in: float


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(process: subprocess.Popen[bytes]) -> None:
    """The server and everything it started (its own process group)."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=20)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """``label-studio start`` on 127.0.0.1 and a free port, its data (SQLite database included) in tmp_path."""
    executable = _executable()
    assert executable is not None
    data, port = tmp_path / "label-studio-data", _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(
        LABEL_STUDIO_BASE_DATA_DIR=str(data),
        DJANGO_DB="sqlite",
        DATABASE_NAME=str(data / "label_studio.sqlite3"),
        LATEST_VERSION_CHECK="false",  # no call to pypi.org at start
        COLLECT_ANALYTICS="false",
        SENTRY_DSN="",  # no error reports to Label Studio's Sentry, from the server or the pages
        FRONTEND_SENTRY_DSN="",
    )
    log = tmp_path / "label-studio.log"
    command = [str(executable), "start", "--no-browser", "--internal-host", "127.0.0.1", "--port", str(port)]
    command += ["--data-dir", str(data), "--username", FIRST[0], "--password", FIRST[1]]
    started = time.monotonic()
    with open(log, "wb") as out:
        process = subprocess.Popen(  # cwd: its version page reads the git repository it starts in
            command, env=env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            if process.poll() is not None:
                pytest.fail(f"label-studio start exited with {process.returncode}:\n{log.read_text(errors='replace')}")
            try:
                if requests.get(f"{url}/health", timeout=5).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() - started > 300:
                pytest.fail(f"no /health 200 from Label Studio after 300 s:\n{log.read_text(errors='replace')}")
            time.sleep(1)
        yield Server(url, process, log, time.monotonic() - started)
    finally:
        _stop(process)


def _signed_in(url: str, email: str, password: str, page: str) -> requests.Session:
    """A browser-like session after the login (or sign-up) form, as a person at the keyboard gets one."""
    session = requests.Session()
    session.get(f"{url}{page}", timeout=30).raise_for_status()
    form = {"email": email, "password": password, "csrfmiddlewaretoken": session.cookies["csrftoken"]}
    answer = session.post(f"{url}{page}", data=form, allow_redirects=False, timeout=30)
    assert answer.status_code == 302, f"{page} for {email}: {answer.status_code} {answer.text[:500]}"
    return session


def _api_as(url: str, signed_in: requests.Session) -> requests.Session:
    """An API session with the person's own access token: personal access token, then its access token."""
    made = signed_in.post(f"{url}/api/token/", headers={"X-CSRFToken": signed_in.cookies["csrftoken"]}, timeout=30)
    assert made.status_code == 201, made.text
    refreshed = requests.post(f"{url}/api/token/refresh/", json={"refresh": made.json()["token"]}, timeout=30)
    assert refreshed.status_code == 200, refreshed.text
    api = requests.Session()
    api.headers["Authorization"] = f"Bearer {refreshed.json()['access']}"
    return api


def _ok(answer: requests.Response, *codes: int) -> Any:
    assert answer.status_code in (codes or (200,)), f"{answer.request.method} {answer.url}: {answer.text[:800]}"
    return answer.json()


def _result(control: str, label: str) -> list[dict[str, Any]]:
    """A choice as the labelling interface submits it: the chosen Choice's alias (the bare label)."""
    return [{"from_name": control, "to_name": "case", "type": "choices", "value": {"choices": [label]}}]


def _shifted(label: str, labels: tuple[str, ...]) -> str:
    at = labels.index(label)
    return labels[at + 1] if at + 1 < len(labels) else labels[at - 1]


def _labels_of(rows: list[tuple[str, str, str]]) -> Labels:
    frame = pd.DataFrame(rows, columns=list(LABEL_COLUMNS)).astype(str)
    return Labels(frame.sort_values(["task_id", "annotator"], ignore_index=True), Path("submitted"), 0, 0)


def _user_id(url: str, api: requests.Session) -> str:
    return str(_ok(api.get(f"{url}/api/current-user/whoami", timeout=30))["id"])


def _snapshot_with_emails(url: str, api: requests.Session, project: int, path: Path) -> Path:
    """An export snapshot with each annotation's ``completed_by`` expanded (id, email, names), as Label Studio's own
    ``label-studio export`` command writes by default, downloaded as JSON to ``path``."""
    options = {"serialization_options": {"annotations__completed_by": {"only_id": False}}}
    snapshot = _ok(api.post(f"{url}/api/projects/{project}/exports/", json=options, timeout=60), 201)
    where = f"{url}/api/projects/{project}/exports/{snapshot['id']}"
    for _ in range(120):
        if _ok(api.get(where, timeout=30))["status"] == "completed":
            break
        time.sleep(0.5)
    download = api.get(f"{where}/download", params={"exportType": "JSON"}, timeout=60)
    _ok(download)
    path.write_bytes(download.content)
    return path


def _save(folder: Path, sample: AnnotationSample, files: dict[str, Path], version: dict[str, Any], extra: Any) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, path in files.items():
        shutil.copyfile(path, folder / name)
    record = {
        "label_studio": version,
        "written": datetime.now(UTC).strftime("%Y-%m-%d"),
        "written_by": "tests/annotation/test_label_studio_server.py (RECJUDGE_LABEL_STUDIO_SAVE)",
        "sample": f"{KIND}-sample.json ({sample.run}/{sample.notebook}, {len(sample.tasks)} tasks)",
        **extra,
    }
    (folder / "label_studio.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def test_a_real_label_studio_export_reads_back_with_its_labels_and_agreement(server: Server, tmp_path: Path) -> None:
    url = server.url
    exported = export_tasks(make_run(tmp_path), NOTEBOOK, KIND, per_system=2, seed=2, out_dir=tmp_path / "out")
    sample, spec = exported.sample, kind_named(KIND)

    # the first person (made at start) and the second (signs up); the legacy token is refused, as 1.23 does
    first_browser = _signed_in(url, *FIRST, "/user/login/")
    legacy = _ok(first_browser.get(f"{url}/api/current-user/token", timeout=30))["token"]
    refused = requests.get(f"{url}/api/projects/", headers={"Authorization": f"Token {legacy}"}, timeout=30)
    assert refused.status_code == 401 and "legacy token authentication has been disabled" in refused.text
    first = _api_as(url, first_browser)
    second = _api_as(url, _signed_in(url, *SECOND, "/user/signup/"))
    ids = {who: _user_id(url, api) for who, api in (("first", first), ("second", second))}
    assert ids["first"] != ids["second"]

    # the project from the exported configuration, the exported tasks imported as they are
    config = exported.config_path.read_text(encoding="utf-8")
    project = _ok(
        first.post(
            f"{url}/api/projects/",
            json={"title": f"recjudge {KIND}", "label_config": config, "maximum_annotations": 2},
            timeout=30,
        ),
        201,
    )
    assert project["label_config"] == config.strip()  # kept as given, its last newline aside
    tasks_in = json.loads(exported.tasks_path.read_text(encoding="utf-8"))
    imported = _ok(first.post(f"{url}/api/projects/{project['id']}/import", json=tasks_in, timeout=60), 201)
    assert imported["task_count"] == len(sample.tasks)
    listed = _ok(second.get(f"{url}/api/tasks/", params={"project": project["id"], "page_size": 100}, timeout=30))
    by_id = {task["data"]["recjudge_task"]: task["id"] for task in listed["tasks"]}
    assert set(by_id) == sample.task_ids

    # known labels: the first person gives the recorded truth (relabelling one task on the way), the second the
    # truth on every other task and one level off on the rest, and skips the last task
    order = [t.task_id for t in sample.tasks]
    submitted: dict[str, dict[str, str]] = {"first": {}, "second": {}}
    for number, task_id in enumerate(order):
        truth = sample.truth[task_id]
        first_label = _shifted(truth, spec.labels) if number == 0 else truth
        made = _ok(
            first.post(
                f"{url}/api/tasks/{by_id[task_id]}/annotations/", json={"result": _result(spec.control, first_label)}
            ),
            201,
        )
        if number == 0:  # relabelled: Label Studio updates the person's annotation in place
            _ok(first.patch(f"{url}/api/annotations/{made['id']}/", json={"result": _result(spec.control, truth)}))
        submitted["first"][task_id] = truth
        if number == len(order) - 1:
            body: dict[str, Any] = {"result": [], "was_cancelled": True}  # what the Skip button sends
        else:
            label = truth if number % 2 == 0 else _shifted(truth, spec.labels)
            submitted["second"][task_id] = label
            body = {"result": _result(spec.control, label)}
        _ok(second.post(f"{url}/api/tasks/{by_id[task_id]}/annotations/", json=body), 201)

    # Export > JSON, as the data manager's Export button asks it: annotators as their user ids
    export = tmp_path / f"{KIND}-export.json"
    answer = first.get(f"{url}/api/projects/{project['id']}/export", params={"exportType": "JSON"}, timeout=60)
    _ok(answer)
    export.write_bytes(answer.content)
    read = read_labels(export, sample)
    assert read.annotators == sorted(ids.values())
    assert (read.skipped, read.relabelled) == (1, 0)
    expected = {(t, ids[who], label) for who, by_task in submitted.items() for t, label in by_task.items()}
    assert set(read.frame.itertuples(index=False, name=None)) == expected
    direct = _labels_of(sorted(expected))
    assert read.frame.equals(direct.frame)

    # the agreement from the export is the agreement of the labels submitted, and the kappa is the expected one
    pd.testing.assert_frame_equal(
        human_agreement(read, KIND, n_boot=N_BOOT), human_agreement(direct, KIND, n_boot=N_BOOT)
    )
    pd.testing.assert_frame_equal(
        judge_agreement(read, sample, n_boot=N_BOOT), judge_agreement(direct, sample, n_boot=N_BOOT)
    )
    both = [t for t in order if t in submitted["second"]]
    kappa = human_agreement(read, KIND, n_boot=N_BOOT).set_index("statistic").loc["quadratic-weighted kappa"]
    reference = cohen_kappa_score(
        [submitted["first"][t] for t in both], [submitted["second"][t] for t in both], labels=list(spec.labels),
        weights="quadratic",
    )  # fmt: skip
    assert kappa["value"] == pytest.approx(reference) and kappa["n"] == len(both)

    # an export snapshot with the annotators expanded (Label Studio's CLI export default): read by their emails
    by_email = _snapshot_with_emails(url, first, project["id"], tmp_path / f"{KIND}-export-emails.json")
    emails = read_labels(by_email, sample)
    assert emails.annotators == sorted((FIRST[0], SECOND[0]))
    named = {ids["first"]: FIRST[0], ids["second"]: SECOND[0]}
    assert set(emails.frame.itertuples(index=False, name=None)) == {(t, named[a], lab) for t, a, lab in expected}

    version = _ok(first.get(f"{url}/api/version", timeout=30))
    print(f"Label Studio {version.get('release')}: /health 200 after {server.started_in:.1f} s")
    save = os.environ.get("RECJUDGE_LABEL_STUDIO_SAVE")
    if save:
        files = {
            export.name: export,
            by_email.name: by_email,
            exported.config_path.name: exported.config_path,
            exported.tasks_path.name: exported.tasks_path,
            f"{KIND}-sample.json": exported.sample_path,
        }
        submitted_by_email = {FIRST[0] if who == "first" else SECOND[0]: by_task for who, by_task in submitted.items()}
        what = {
            "user_ids": {FIRST[0]: ids["first"], SECOND[0]: ids["second"]},
            "submitted": submitted_by_email,
            "skipped": {SECOND[0]: [order[-1]]},
            "relabelled": {FIRST[0]: [order[0]]},
        }
        versions = {
            "label-studio": version.get("release"),
            # the SDK's converter writes the export formats; /api/version names it by its old package
            "label-studio-sdk": (version.get("label-studio-converter") or {}).get("version"),
            "edition": version.get("edition"),
        }
        _save(Path(save), sample, files, versions, what)
