"""No tracked file names a machine's own folders (issue 76): a report, a docstring's example or a
test names data as ``$EDITSPEC_DATA/...``, relative to the repository, or by a placeholder; a path
under a home, the work area or /tmp is one machine's and means nothing on the next."""

import re
import subprocess

from editspec.data.corpora import REPO_ROOT, shown

MACHINE_PATH = re.compile(rb"(?<![\w.~$-])/(?:work|root|tmp|home|Users)/")


def machine_paths(data: bytes) -> list[str]:
    return [m.group().decode() for m in MACHINE_PATH.finditer(data)]


def test_no_tracked_text_file_names_a_machine_path():
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, check=True, capture_output=True).stdout
    found = {}
    for rel in filter(None, listed.decode().split("\0")):
        path = REPO_ROOT / rel
        if not path.is_file() or path.stat().st_size > 4 << 20:
            continue
        with open(path, "rb") as f:
            data = f.read(8192)
            if b"\0" in data:  # binary: weights, images
                continue
            data += f.read()
        lines = [n for n, line in enumerate(data.splitlines(), 1) if machine_paths(line)]
        if lines:
            found[rel] = lines[:5]
    assert not found, f"machine paths (file: lines): {found}"


def test_the_scan_finds_what_it_is_for():
    slash = b"/"  # joined here, so that this file does not hold what it scans for
    found = machine_paths(b'"m2": "' + slash + b'work/shared/x.m2", see ' + slash + b"tmp/x and " + slash + b"home/me/y")
    assert found == [f"/{d}/" for d in ("work", "tmp", "home")]
    assert machine_paths(b'"$EDITSPEC_DATA/wi/x.m2" ../base runs/tok /usr/share www.example.com/tmp/x ~/tmp/') == []


def test_reports_record_data_under_the_corpus_folder_by_placeholder(tmp_path, monkeypatch):
    (tmp_path / "data" / "fce").mkdir(parents=True)
    monkeypatch.setenv("EDITSPEC_DATA", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    assert shown(tmp_path / "data" / "fce" / "dev.m2") == "$EDITSPEC_DATA/fce/dev.m2"
    assert shown(tmp_path / "runs" / "conf.jsonl") == "runs/conf.jsonl"
    assert shown("/elsewhere/dev.m2") == "dev.m2"
