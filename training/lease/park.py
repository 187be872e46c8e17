"""What a lease's call does not need stays here while the call travels.

A device call carries the working tree: tracked files, and untracked ones git does not ignore
(64 MiB in all). The shipped bundle's weights (``editspec/models/default/{t5,edit5}/model.safetensors``,
52 MiB) are tracked, so they left room for only ~30k Wikipedia sentences; the rest of the bundle (its
models' configs and tokenizers, each folder's own, and the corrector config; 3 MiB) travels, since the
stages' configs and ``collect`` read them. A plan that ships the
bundle as it is (EdiT5 heads on the shipped T5) needs the bundle there but not the continuation
checkpoint. ``reports/`` never travels: the device reads none of it. Parked, a path is out of
the index and ignored (``.git/info/exclude``): its files stay on disk, untouched, and do not
travel. ``unpark`` (also run by ``join``) puts the index back as HEAD has it. While anything is
parked, a pre-commit hook refuses commits, which would otherwise record the removal.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Sequence

from editspec.errors import EditspecError
from training.lease.plan import REPO_ROOT

BUNDLE = "editspec/models/default"
BUNDLE_MODELS = (f"{BUNDLE}/t5/model.safetensors", f"{BUNDLE}/edit5/model.safetensors")  # the weights
REPORTS = "reports"  # decision records and profiles (2 MiB, ~46k Wikipedia sentences): nothing on the device reads them
CONTINUATION = "training/continuation"
COMMENT = "# parked by training.lease (unpark: python -m training.lease unpark)\n"
HOOK = """#!/bin/sh
# installed by training.lease park
if [ -e "$(git rev-parse --git-path editspec-parked)" ]; then
  echo "a path is parked for a lease: run 'python -m training.lease unpark' before committing" >&2
  exit 1
fi
"""


def git(*args: str, root: Path = REPO_ROOT) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def git_path(name: str, root: Path = REPO_ROOT) -> Path:
    """Where git keeps ``name`` for this checkout: the common directory's, also from a linked
    worktree, and ``core.hooksPath``'s for hooks (``git rev-parse --git-path``)."""
    path = Path(git("rev-parse", "--git-path", name, root=root).strip())
    return path if path.is_absolute() else root / path


def marker(root: Path = REPO_ROOT) -> Path:
    return git_path("editspec-parked", root)


def parked(root: Path = REPO_ROOT) -> list[str]:
    m = marker(root)
    return m.read_text().split() if m.exists() else []


def exclude_lines(paths: Sequence[str]) -> list[str]:
    return [COMMENT, *(f"/{p}\n" for p in paths)]  # a file or a folder


def park(root: Path = REPO_ROOT, paths: Sequence[str] = BUNDLE_MODELS) -> None:
    paths = [p for p in paths if p not in parked(root) and (root / p).exists()]
    if not paths:
        return
    if git("status", "--porcelain", "--", *paths, root=root).strip():
        raise EditspecError(f"{', '.join(paths)}: uncommitted changes; commit them before parking for a lease")
    m, exclude, hook = marker(root), git_path("info/exclude", root), git_path("hooks/pre-commit", root)
    if hook.exists() and "installed by training.lease park" not in hook.read_text(errors="replace"):
        raise EditspecError(f"{hook} exists: parking needs its own pre-commit hook there (it refuses commits "
                            f"while a path is parked); move yours aside first")
    exclude.parent.mkdir(parents=True, exist_ok=True)
    text = exclude.read_text() if exclude.exists() else ""
    have = set(text.splitlines(keepends=True))
    exclude.write_text(text + ("" if text.endswith("\n") or not text else "\n")
                       + "".join(line for line in exclude_lines(paths) if line not in have))
    if not hook.exists():
        hook.parent.mkdir(parents=True, exist_ok=True)
        hook.write_text(HOOK)
        hook.chmod(0o755)
    m.write_text("".join(f"{p}\n" for p in [*parked(root), *paths]))
    git("rm", "-r", "-q", "--cached", "--", *paths, root=root)


def unpark(root: Path = REPO_ROOT) -> bool:
    """Every parked path tracked again, as HEAD has it; whether any was parked."""
    paths, m = parked(root), marker(root)
    if paths:
        git("reset", "-q", "--", *paths, root=root)
    exclude = git_path("info/exclude", root)
    if exclude.exists():
        drop = set(exclude_lines(paths))
        exclude.write_text("".join(line for line in exclude.read_text().splitlines(keepends=True) if line not in drop))
    m.unlink(missing_ok=True)
    return bool(paths)
