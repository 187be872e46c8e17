"""The shipped bundle stays here while a lease's call travels.

A device call carries the working tree: tracked files, and untracked ones git does not ignore
(64 MiB in all). The shipped bundle (``editspec/models/default``, 57 MiB) is tracked, so it
left room for only ~30k Wikipedia sentences. Parked, it is out of the index and ignored
(``.git/info/exclude``): the files stay on disk, untouched, and do not travel. ``unpark`` (also run
by ``join``) puts the index back as HEAD has it. While parked, a pre-commit hook refuses commits,
which would otherwise record the bundle's removal.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from editspec.errors import EditspecError
from training.lease.plan import REPO_ROOT

BUNDLE = "editspec/models/default"
LINES = ("# parked by training.lease (unpark: python -m training.lease unpark)\n", f"/{BUNDLE}/\n")
HOOK = """#!/bin/sh
# installed by training.lease park
if [ -e "$(git rev-parse --git-dir)/editspec-parked" ]; then
  echo "the shipped bundle is parked for a lease: run 'python -m training.lease unpark' before committing" >&2
  exit 1
fi
"""


def git(*args: str, root: Path = REPO_ROOT) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def git_dir(root: Path = REPO_ROOT) -> Path:
    return Path(git("rev-parse", "--absolute-git-dir", root=root).strip())


def parked(root: Path = REPO_ROOT) -> bool:
    return (git_dir(root) / "editspec-parked").exists()


def park(root: Path = REPO_ROOT) -> None:
    if parked(root):
        return
    if git("status", "--porcelain", "--", BUNDLE, root=root).strip():
        raise EditspecError(f"{BUNDLE} has uncommitted changes: commit them before parking it for a lease")
    gd = git_dir(root)
    exclude = gd / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    text = exclude.read_text() if exclude.exists() else ""
    if LINES[1] not in text.splitlines(keepends=True):
        exclude.write_text(text + ("" if text.endswith("\n") or not text else "\n") + "".join(LINES))
    hook = gd / "hooks" / "pre-commit"
    if not hook.exists():
        hook.parent.mkdir(parents=True, exist_ok=True)
        hook.write_text(HOOK)
        hook.chmod(0o755)
    (gd / "editspec-parked").touch()
    git("rm", "-r", "-q", "--cached", "--", BUNDLE, root=root)


def unpark(root: Path = REPO_ROOT) -> bool:
    """The bundle tracked again, as HEAD has it; whether it was parked."""
    gd = git_dir(root)
    was = parked(root)
    git("reset", "-q", "--", BUNDLE, root=root)
    exclude = gd / "info" / "exclude"
    if exclude.exists():
        exclude.write_text("".join(line for line in exclude.read_text().splitlines(keepends=True)
                                   if line not in LINES))
    (gd / "editspec-parked").unlink(missing_ok=True)
    return was
