"""Where editspec keeps what it derives once and reuses: ``$EDITSPEC_CACHE``, else
``$XDG_CACHE_HOME/editspec``, else ``~/.cache/editspec``.

    spelling/   the spelling step's dictionaries as one index, built once (``editspec.pre.lexicon``)
    ct2/        CTranslate2 conversions of a T5 (``editspec.profiling.ct2``)
    measured/   this machine's measured decoding costs (``editspec.decoding.costs``, ``.measured``)

Everything here can be deleted at any time: it is derived again on the next use.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    """The cache folder (not created), or a path inside it."""
    root = os.environ.get("EDITSPEC_CACHE")
    if not root:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "editspec"
    return Path(root, *parts)
