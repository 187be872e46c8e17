"""The report's plots (matplotlib, written without a display):

    latency_breakdown.png   per mode, a bar of mean ms split into encoder / decoder / draft / other
    latency_vs_length.png   per batch, latency against output tokens (mean per row), one colour a mode
    accepted_per_pass.png   per speculative mode, the share of verifier passes that accepted
                            0, 1, 2, ... draft tokens (a perfect drafter piles up at γ)
    architectures.png       the breakdown bars of the random architectures (forced lengths)
"""

from __future__ import annotations

import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib.ticker import MaxNLocator  # noqa: E402


def plots(out: Path, report: dict, raw: dict | None) -> None:
    """The plots of ``report`` into ``out`` (``raw``: the modes' samples; None: no scatter points)."""
    unit = "sentence" if report["batch_size"] == 1 else f"batch of {report['batch_size']}"
    parts = [("encoder_ms", "encoder"), ("decoder_ms", "decoder"), ("draft_ms", "draft"), ("other_ms", "other")]

    def stacked(entries: dict, path: Path, title: str):
        names = list(entries)
        fig, ax = plt.subplots(figsize=(8, 0.5 * len(names) + 1.5))
        left = [0.0] * len(names)
        for key, label in parts:
            values = [max(0.0, (entries[n].get(key) or {}).get("mean", 0.0)) for n in names]
            ax.barh(names, values, left=left, label=label)
            left = [a + b for a, b in zip(left, values)]
        ax.invert_yaxis()
        ax.set_xlabel(f"mean ms per {unit}")
        ax.set_title(title)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)

    ok = {m: e for m, e in (report.get("modes") or {}).items() if e.get("status") == "ok"}
    if report.get("architectures"):
        stacked(report["architectures"], out / "architectures.png",
                "Architectures at real sizes (random weights, forced lengths)")
    if not ok:
        return
    stacked(ok, out / "latency_breakdown.png", "Latency: encoder / decoder / draft / other (trained models)")

    fig, ax = plt.subplots(figsize=(7, 5))
    for mode, samples in (raw or {}).get("samples", {}).items():
        xs = [statistics.fmean(len(o) for o in s.outputs) for s in samples]
        ax.scatter(xs, [s.latency for s in samples], s=8, label=mode, alpha=0.6)
    ax.set_xlabel("output tokens (mean per batch row)")
    ax.set_ylabel(f"ms per {unit}")
    ax.set_title("Latency vs output length")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out / "latency_vs_length.png", dpi=120)
    plt.close(fig)

    spec = {m: e["accepted_per_pass"] for m, e in ok.items() if e.get("accepted_per_pass")}
    fig, ax = plt.subplots(figsize=(8, 5))
    width = 0.8 / max(1, len(spec))
    for k, (mode, hist) in enumerate(spec.items()):
        total = sum(hist.values())
        xs = sorted(int(a) for a in hist)
        ax.bar([x + k * width for x in xs], [hist[x] / total for x in xs], width=width, label=mode)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("draft tokens accepted in a verifier pass (per row)")
    ax.set_ylabel("share of passes")
    ax.set_title("Accepted draft tokens per verifier pass")
    if spec:
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "accepted_per_pass.png", dpi=120)
    plt.close(fig)
