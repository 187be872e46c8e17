"""``prepare`` (here, on the CPU machine): the folder that travels to a lent GPU, and the calls.

A lent machine gets the repository and the git-ignored folders a call names in ``carry``, 64 MiB
in all, and reaches nothing else: not ../shared/data, not a package index. So the folder holds::

    .lease/data/wi_locness/ABC.train.gold.bea19.m2.xz      the plan's M2 files, xz-compressed
    .lease/data/wi_locness/ABCN.dev.gold.bea19.m2.xz       (start unpacks them)
    .lease/data/fce/fce.train.gold.bea19.m2.xz
    .lease/data/wikipedia_en_sentences/lease.00.txt.xz     a slice of the Wikipedia sentences from
                                                           line ``wiki_start`` on (the continuation
                                                           says where the last lease stopped), as many
                                                           as the size limit leaves room for
    .lease/data/synthetic/patterns.json.xz                 the learners' edit patterns the synthetic
                                                           errors replay, built from the W&I and FCE
                                                           train files (training.synthetic.patterns)
    .lease/data/respelled.json.xz                          the M2 files' sources after the spelling step
                                                           (training.respelling: the machine has no
                                                           dictionaries; the fine-tune and its dev read them)
    .lease/lexicon.json.xz     the synthetic errors' word lists (spaCy's lemmatizer tables and
                               ERRANT's words: neither package is in the machine's image)
    .lease/wheels.tar.xz       wheels of the packages the training imports that the image lacks
    .lease/prepared.json       what was packed: sizes, sentence counts, the slice, the continuation

Before anything is packed, the continuation checkpoint (``training.lease.continuation``, tracked:
it travels with the tree) is checked; then the shipped bundle is parked (``training.lease.park``)
so that it does not travel. Size: 64 MiB - (tracked + untracked files that git does not ignore) -
a margin is what the folder may take; the M2 files, the lexicon and the wheels go first, the
Wikipedia sentences fill the rest (in independent xz streams of ``CHUNK`` lines, which ``lzma``
reads as one file). Fewer than ``--min-wiki-sentences`` (700,000) is refused: no call is printed.
Say the tree takes 2.2 MiB and the continuation 23 MiB: 64 - 25.2 - 1 (margin) - 4.7 (M2, lexicon,
wheels) = 33 MiB hold ~850,000 sentences at ~40 bytes each.
"""

from __future__ import annotations

import importlib.metadata
import io
import itertools
import json
import lzma
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator


from editspec.data.corpora import data_dir as default_data_dir, read_m2
from editspec.data.m2 import read_blocks
from editspec.errors import EditspecError
from training.lease import continuation
from training.lease.park import BUNDLE_MODELS, CONTINUATION, REPORTS, park, unpark
from training.lease.plan import REPO_ROOT, WHEELS, load_plan
from training import respelling
from training.synthetic.lexicon import save_tables
from training.synthetic.pairs import WIKI_DIR, read_lines, shard_files
from training.synthetic.patterns import TRAIN_M2, build as build_patterns

PATTERN_TABLE = "synthetic/patterns.json.xz"  # inside the data directory: a synthetic source's `patterns`

LIMIT = 64 * 2**20  # what travels with a call: the working tree and the carried folders
CHUNK = 20_000  # Wikipedia lines per xz stream
XZ = lzma.PRESET_DEFAULT | lzma.PRESET_EXTREME
PIP_PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
                 "manylinux1_x86_64")


def repo_path(path: Path) -> Path:
    """``path`` relative to the repository when it lies inside (what travels there), else absolute."""
    path = path.resolve()
    return path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path


def tree_bytes(root: Path = REPO_ROOT) -> int:
    """Bytes of what travels without ``carry``: tracked files and untracked ones git does not ignore."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                            capture_output=True, check=True).stdout.decode().split("\0")
    return sum((root / f).stat().st_size for f in set(listed) if f and (root / f).is_file())


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def write_m2(src: Path, dest: Path, limit: int | None) -> int:
    """The first ``limit`` sentences (all without one) of an M2 file, xz-compressed; their count."""
    blocks = read_blocks(src)[:limit]
    dest.parent.mkdir(parents=True, exist_ok=True)
    with lzma.open(dest, "wt", encoding="utf-8", preset=XZ) as f:
        f.writelines(block.rstrip("\n") + "\n\n" for block in blocks)
    return len(blocks)


def wiki_lines(wiki: Path, start: int) -> Iterator[str]:
    """The Wikipedia shards' non-empty lines from line ``start`` on, around to the first again once:
    each lease reads the next slice, and all of them are seen over a few leases."""
    def all_lines() -> Iterator[str]:
        return (line for shard in shard_files(wiki) for line in read_lines(shard) if line.strip())

    skipped = sum(1 for _ in itertools.islice(all_lines(), start))
    if skipped < start:  # past the end: around again
        return wiki_lines(wiki, start % skipped) if skipped else iter(())
    return itertools.chain(itertools.islice(all_lines(), start, None), itertools.islice(all_lines(), start))


def respelled_table(m2_files: list[Path], dest: Path) -> int:
    """The M2 files' sources (as the training reads them: annotator 0, detokenized) after the
    spelling step, into ``dest`` (``training.respelling``); how many sentences it changed."""
    entries = {}
    with tempfile.TemporaryDirectory() as tmp:
        for src in m2_files:
            plain = Path(tmp) / src.name.removesuffix(".xz")
            with lzma.open(src, "rb") as f, open(plain, "wb") as out:
                shutil.copyfileobj(f, out)
            key, entry = respelling.entry(list(read_m2(plain)["source"]))
            entries[key] = entry
    respelling.save(entries, dest)
    return sum(len(e["changed"]) for e in entries.values())


def write_sentences(wiki: Path, dest: Path, room: int, limit: int | None, start: int = 0) -> int:
    """The Wikipedia lines from ``start`` on in xz streams of ``CHUNK`` lines while they fit in
    ``room`` bytes (at most ``limit`` lines); how many were written."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    lines = wiki_lines(wiki, start)
    written = 0
    with open(dest, "wb") as out:
        while limit is None or written < limit:
            chunk = [line for _, line in zip(range(min(CHUNK, (limit or CHUNK + written) - written)), lines)]
            if not chunk:
                break
            packed = lzma.compress(("\n".join(chunk) + "\n").encode("utf-8"), preset=XZ)
            if out.tell() + len(packed) > room:
                keep = int(len(chunk) * (room - out.tell()) / len(packed) * 0.95)  # a last, shorter stream
                if keep < 100:
                    break
                chunk, packed = chunk[:keep], lzma.compress(("\n".join(chunk[:keep]) + "\n").encode(), preset=XZ)
                if out.tell() + len(packed) > room:
                    break
            out.write(packed)
            written += len(chunk)
    return written


def fetch_wheel(spec: str, cache: Path) -> Path:
    """A wheel for the machine's Python 3.12 on x86-64: ``spec`` is a .whl path, or a package name
    (the version installed here, so that the code ran here against it) fetched into ``cache`` with
    the device README's pip command unless already there."""
    if spec.endswith(".whl"):
        return Path(spec)
    version = importlib.metadata.version(spec)
    stem = spec.replace("-", "_").lower()
    found = [w for w in cache.glob("*.whl") if w.name.lower().startswith(f"{stem}-{version}-")]
    if not found:
        platforms = [a for p in PIP_PLATFORMS for a in ("--platform", p)]
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version",
                        "3.12", "--implementation", "cp", *platforms, "-d", str(cache), f"{spec}=={version}"],
                       check=True, stdout=subprocess.DEVNULL)
        found = [w for w in cache.glob("*.whl") if w.name.lower().startswith(f"{stem}-{version}-")]
    if not found:
        raise EditspecError(f"no wheel of {spec}=={version} for Python 3.12 on x86-64 in {cache}")
    return found[0]


def stored(wheel: Path) -> bytes:
    """The wheel re-zipped without compression (same files, same RECORD), so xz sees the bytes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data = src.read(info)
            info.compress_type = zipfile.ZIP_STORED
            dst.writestr(info, data)
    return buf.getvalue()


def write_wheels(wheels: list[Path], dest: Path) -> list[str]:
    with tarfile.open(dest, "w:xz", preset=XZ) as tar:
        for wheel in wheels:
            data = stored(wheel)
            info = tarfile.TarInfo(wheel.name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return [w.name for w in wheels]


@dataclass(frozen=True)
class Text:
    """The text a call carries: each M2 file's first ``m2_sentences`` (None: all), and from line
    ``wiki_start`` (None: where the series stopped) at most ``wiki_sentences`` Wikipedia sentences
    (None: as many as fit), refusing a call with fewer than ``min_wiki``."""

    m2_sentences: int | None = None
    wiki_sentences: int | None = None
    wiki_start: int | None = None
    min_wiki: int = 700_000


@dataclass(frozen=True)
class Room:
    """What a call carries at most: ``limit`` bytes, less a ``margin``."""

    limit: int = LIMIT
    margin: int = 2**20


@dataclass(frozen=True)
class Wheels:
    """The wheels a call carries: ``names`` (packages or .whl files; None: ``WHEELS``), fetched into ``cache``."""

    names: list[str] | None = None
    cache: Path = REPO_ROOT / ".whl"


def prepare(folder: Path, plan_path: Path, data: Path | None = None, text: Text = Text(), room: Room = Room(),
            wheels: Wheels = Wheels(), pack: Path | None = continuation.PACK, park_bundle: bool = True) -> dict:
    """Pack ``folder``; ``pack`` None starts a new series from scratch (no continuation)."""
    m2_sentences, wiki_sentences, min_wiki = text.m2_sentences, text.wiki_sentences, text.min_wiki
    limit, margin = room.limit, room.margin
    plan = load_plan(plan_path)
    series = any(s.get("continue") for s in plan["stages"])  # a plan that continues the series
    pack = pack if series else None
    resumed = continuation.verify(pack) if pack is not None else None  # before anything is spent
    data = default_data_dir(data)
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    counts = {}
    for rel in plan["m2"]:
        src = data / rel
        if not src.is_file():
            raise EditspecError(f"{src} does not exist (the plan's m2 files are read from {data})")
        counts[rel] = write_m2(src, tmp / "data" / (rel + ".xz"), m2_sentences)
    respelled = None  # the fine-tune's sources and dev, as the shipped pipeline feeds the T5
    if plan.get("respelled"):
        respelled = respelled_table(sorted((tmp / "data").rglob("*.m2.xz")), tmp / "data" / respelling.TABLE)
    save_tables(tmp / "lexicon.json.xz")
    if plan.get("wiki", True):  # a synthetic stage: the patterns it replays, from the train files only
        build_patterns([data / rel for rel in TRAIN_M2]).save(tmp / "data" / PATTERN_TABLE)
    names = write_wheels([fetch_wheel(w, wheels.cache) for w in (WHEELS if wheels.names is None else wheels.names)],
                         tmp / "wheels.tar.xz")
    # what does not travel: the shipped bundle's models, or for a plan that ships it as it is (park: false), the
    # continuation checkpoint, which only the series' plan reads
    parking = [*BUNDLE_MODELS, REPORTS] if plan.get("park", True) else [CONTINUATION, REPORTS]
    if pack is None and CONTINUATION not in parking:
        parking.append(CONTINUATION)  # a new series, or a plan that does not continue one: it stays here
    if not plan.get("wiki", True):
        wiki_sentences, min_wiki = 0, 0  # a plan with no synthetic stage carries no Wikipedia slice
    if park_bundle:
        park(paths=parking)
    try:
        room = limit - margin - tree_bytes() - folder_bytes(tmp) - 4096  # prepared.json
        if room < 0:
            raise EditspecError(f"the repository and the folder take {(limit - margin - room) / 2**20:.1f} MiB: over "
                                f"the {limit / 2**20:.0f} MiB a call carries (less a {margin / 2**20:.1f} MiB margin)")
        start = text.wiki_start if text.wiki_start is not None else int((resumed or {}).get("wiki_next", 0))
        sentences = write_sentences(data / WIKI_DIR, tmp / "data" / WIKI_DIR / "lease.00.txt.xz", room,
                                    wiki_sentences, start) if wiki_sentences != 0 else 0
        if sentences < min(min_wiki, min_wiki if wiki_sentences is None else wiki_sentences):
            raise EditspecError(f"room for {sentences} Wikipedia sentences, fewer than {min_wiki}: the call would "
                                f"carry too little text (free some of the working tree)")
    except BaseException:
        if park_bundle:
            unpark()
        raise
    report = {"plan": str(plan_path.resolve().relative_to(REPO_ROOT)), "m2_sentences": counts,
              "wiki_start": start, "wiki_sentences": sentences, "wheels": names, "folder_bytes": folder_bytes(tmp),
              "tree_bytes": tree_bytes(), "limit_bytes": limit, "parked": parking if park_bundle else [],
              "continuation": None if pack is None else str(repo_path(pack)),
              "resumed": resumed, "series": series, "respelled_sentences": respelled}
    (tmp / "prepared.json").write_text(json.dumps(report, indent=1) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    return report


def device_calls(folder: Path, plan: dict) -> str:
    """The device tool's calls, in order, and the join here. A plan with ``one_call`` runs start,
    its wait and collect in one call: the machine goes back 30 s after a call, and a lease of 15
    minutes cannot afford a second machine start if the next call comes late."""
    inside = folder.resolve().is_relative_to(REPO_ROOT)
    rel = repo_path(folder) if inside else folder  # carry names repository paths
    env = "PYTHONUNBUFFERED=1 python3 -m training.lease"
    start, collect = f"{env} start --folder {rel}", f'{env} collect --out "$OUT"'
    wait = f"{env} wait --minutes {plan['wait_minutes']}"
    if plan.get("interim_call"):
        final_wait = f"{env} wait --minutes {plan['final_wait_minutes']}"
        calls = [("start, wait, collect the interim weights (and stable/ once the decay began): unpack, train; the run "
                  "goes on after the call",
                  {"command": f"{start} && {{ {wait}; w=$?; {collect} --interim && exit $w; }}", "carry": [str(rel)],
                   "timeout_s": 600}),
                 ("right after, on the still-warm machine: the run's end, collect (the candidates and the "
                  "continuation)" + (", the CUDA checks" if plan["check_minutes"] else ""),
                  {"command": f"{final_wait}; {collect} --check-minutes {plan['check_minutes']}", "carry": [str(rel)],
                   "timeout_s": int(60 * (plan["final_wait_minutes"] + plan["check_minutes"]) + 90)})]
    elif plan.get("one_call"):
        calls = [("start, wait, collect in one call: unpack, train, ship, dev loss, shards + manifest into $OUT",
                  # collect even when the recipe failed (it ships what the stages saved), never when
                  # start failed (a warm machine could still hold an earlier run); wait's failure is the exit code
                  {"command": f"{start} && {{ {wait}; w=$?; {collect} && exit $w; }}", "carry": [str(rel)],
                   "timeout_s": 600}),
                 ("the rest of the lease, on the still-warm machine: the CUDA checks (speculative == greedy, profiles)",
                  {"command": f'{env} checks --out "$OUT" --minutes 2.5', "carry": [str(rel)], "timeout_s": 200})]
    else:
        calls = [
            ("start: unpack, install the wheels, start the recipe detached, return",
             {"command": start, "carry": [str(rel)], "timeout_s": 300}),
            *[(f"wait {i + 1}: follow the log (returns early when the recipe ends)",
               {"command": wait, "carry": [str(rel)], "timeout_s": 600}) for i in range(plan["waits"])],
            ("collect: stop what still runs, ship, dev loss, shards + manifest into $OUT",
             {"command": collect, "carry": [str(rel)], "timeout_s": 480}),
        ]
    # every call carries the folder: a call that does not would remove it there (the recipe reads
    # runs/lease/, which start unpacked and the calls keep, but a stage must never find it gone)
    lines = ["Device calls, in order (the run tool; leave `kind` out), each right after the last:"]
    if not inside:
        lines.insert(0, f"note: {folder} is outside the repository, which is all a call carries")
    for n, (what, call) in enumerate(calls, 1):
        lines += [f"  {n}. {what}", f"     run {json.dumps(call)}"]
    lines += ["Then give the machine back (give_back), and here, with the files_at folder of the call that collected",
              "(the last one that did: an interim collect is the lease's result only if the next call failed):",
              "  python -m training.lease join FILES_AT runs/lease-bundle",
              "  python -m training.lease pick runs/lease-bundle --ship      # ERRANT on W&I dev, paired bootstrap"]
    return "\n".join(lines)


def main(args) -> None:
    report = prepare(Path(args.folder), Path(args.plan), Path(args.data_dir) if args.data_dir else None,
                     Text(args.m2_sentences, args.wiki_sentences, args.wiki_start, args.min_wiki_sentences),
                     Room(int(args.limit_mib * 2**20), int(args.margin_mib * 2**20)),
                     Wheels(args.wheel or None, Path(args.wheel_cache)),
                     None if args.from_scratch else Path(args.continuation), not args.no_park)
    total = report["tree_bytes"] + report["folder_bytes"]
    resumed = report["resumed"]
    print(f"{args.folder}: {report['folder_bytes'] / 2**20:.2f} MiB ({report['wiki_sentences']} Wikipedia sentences "
          f"from line {report['wiki_start']}, M2 {report['m2_sentences']}, wheels {', '.join(report['wheels'])}); "
          f"the working tree {report['tree_bytes'] / 2**20:.2f} MiB; the call carries {total / 2**20:.2f} of "
          f"{report['limit_bytes'] / 2**20:.0f} MiB")
    if report["respelled_sentences"] is not None:
        print(f"respelled here (the spelling step): {report['respelled_sentences']:,} of the M2 files' sentences")
    if report["series"]:
        print(f"continues {report['continuation']} (lease {resumed.get('leases', 0) + 1} of the series, "
              f"{resumed.get('examples', 0):,} pairs seen)" if resumed else "a new series: from scratch")
    if report["parked"]:
        print(f"parked (not tracked, ignored, so they do not travel) until `join` or `python -m training.lease unpark`: "
              f"{', '.join(report['parked'])}")
    print(device_calls(Path(args.folder), load_plan(Path(args.plan))))
