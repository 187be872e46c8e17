"""The report files: ``report.json`` (every number), ``report.md`` (tables) and the plots.

``report.json`` holds the run's settings (device, threads, torch and transformers versions,
dtype, data, batch size, warm-up, γ, the options) and one entry per mode and architecture. A
mode that ran has ``"status": "ok"`` and summaries in ms (``latency_ms``, ``encoder_ms``,
``decoder_ms``, ``decoder_step_ms``, ``draft_ms``, ``other_ms``, each ``{"median", "p90",
"p95", "mean", "n"}``), ``speedup_vs_t5``, ``identical_to_t5``, and for the speculative modes the
acceptance counts and Leviathan et al.'s expected speedup; a mode that could not run has
``"status": "skipped"`` or ``"unsupported"`` and a ``reason``. ``markdown`` writes them as
tables, one row a mode, e.g.::

    | mode | latency | p90 | mean | encoder | decoder ms/step | steps | decoder | draft | other | speedup vs t5 | ...
    | `t5` | <ms> | <ms> | <ms> | <ms> | <ms> | <steps> | <ms> | – | <ms> | 1.00 | 1.000 | – | 1.00 |

and a skipped mode as a note below the table (``- `hf-assisted`: skipped: no t5-draft model``).
"""

from __future__ import annotations

import json
from pathlib import Path

from editspec.profiling import end_to_end, pipeline
from editspec.profiling.plots import plots
from editspec.profiling.stats import median


def write_report(out: Path, report: dict, raw: dict | None) -> None:
    """report.json, report.md and the plots in ``out`` (``raw``: the modes' samples, for the plots)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out / "report.md").write_text(markdown(report), encoding="utf-8")
    plots(out, report, raw)


def drafts_at_real_sizes(arch: dict, unit: str) -> list[str]:
    """The forced speculative rows (``T5+gold``, ``T5+copy``): where an edit model's draft pays.
    An edit model drafting on the verifier's own encoder costs its heads: the EdiT5 of the same
    size, latency minus encoder."""
    rows = [n for n in arch if "+" in n]
    if not rows:
        return []
    lines = [
        "### Drafts at real sizes (verifier forced to the gold target)", "",
        "The T5's choices are forced to the gold target (its logits replaced after the real computation), "
        "so passes are those a T5 whose greedy output is the gold target needs. `gold`: the target as "
        "the draft (an edit model that drafts the T5's output exactly); `copy`: the source with resync "
        "and n-grams. Heads: the same-size EdiT5's latency minus its encoder (its heads on the "
        f"verifier's encoder). ms per {unit}, medians.", "",
        "| verifier + draft | latency | passes | decoder | acceptance | tokens/pass | + heads | with heads |",
        "|---|" + "---:|" * 7,
    ]
    for name in rows:
        e = arch[name]
        base, draft = name.split("+")
        heads = heads_ms(arch, base) if draft == "gold" else None
        latency = e["latency_ms"]["median"]
        lines.append("| " + " | ".join([
            f"`{name}`", _f(latency), _f(median(e["decoder_steps"]), 1), _f(median(e["decoder_ms"])),
            _f(e.get("acceptance_rate"), 3), _f(e.get("tokens_per_pass")), _f(heads),
            _f(latency + heads if heads is not None else None)]) + " |")
    lines.append("")
    for base in dict.fromkeys(n.split("+")[0] for n in rows):
        gold, copy, heads = arch.get(f"{base}+gold"), arch.get(f"{base}+copy"), heads_ms(arch, base)
        if gold and copy and heads is not None:
            g, c = gold["latency_ms"]["median"] + heads, copy["latency_ms"]["median"]
            lines.append(f"- {base}: a perfect edit-model draft {'pays' if g < c else 'does not pay'}: "
                         f"{_f(g)} ms with its heads against {_f(c)} ms for the copy ({c / g:.2f}×)")
    lines.append("")
    return lines


def heads_ms(arch: dict, t5_name: str) -> float | None:
    """Median latency minus median encoder of the EdiT5 of ``t5_name``'s size (t5-base -> edit5-base)."""
    e = arch.get("edit5-" + t5_name[3:]) if t5_name.startswith("t5-") else None
    return e["latency_ms"]["median"] - median(e["encoder_ms"]) if e else None


def ct2_lines(modes: dict, version: str | None) -> list[str]:
    """The modes against CTranslate2's fp32 greedy search (``ct2-greedy``), and whether its output
    was our T5 greedy output token for token."""
    ct2 = modes.get("ct2-greedy") or {}
    if ct2.get("status") != "ok":
        return []
    ratios = ", ".join(f"`{m}` {_f(e['speedup_vs_ct2_greedy'])}×" for m, e in modes.items()
                       if e.get("status") == "ok" and m != "ct2-greedy")
    same = ct2["identical_to_t5"]
    lines = [f"- against CTranslate2 {version} fp32 greedy (`ct2-greedy` median latency / the mode's; "
             f">1: faster than CTranslate2): {ratios}",
             f"- `ct2-greedy` output equals our T5 greedy output token for token in {_f(100 * same, 1)}% of "
             f"sentences" + ("" if same == 1.0 else " (NOT all: the two compute float32 in another order, "
                                                    "and a near-tie can go either way)"),
             "- `ct2-*`: one `translate_batch` call timed whole (encoder, decoder and draft columns are 0, "
             "steps not seen)", ""]
    return lines


def _f(x, digits: int = 2) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def markdown(report: dict) -> str:
    unit = "sentence" if report["batch_size"] == 1 else f"batch of {report['batch_size']}"
    lines = header_lines(report)
    modes = report.get("modes") or {}
    if modes:
        lines += mode_lines(modes, report, unit) + leviathan_lines(modes)
    if report.get("pipeline"):
        lines += pipeline.markdown(report["pipeline"])
    if report.get("end_to_end"):
        lines += end_to_end.markdown(report["end_to_end"])
    arch = report.get("architectures") or {}
    if arch:
        lines += architecture_lines(arch, unit)
    files = (["latency_breakdown.png", "latency_vs_length.png", "accepted_per_pass.png"] if modes else []) \
        + (["architectures.png"] if arch else [])
    if files:
        lines += ["Plots: " + ", ".join(f"`{f}`" for f in files) + ".", ""]
    return "\n".join(lines)


def header_lines(report: dict) -> list[str]:
    """The report's title and its run's settings; the side steps' timings."""
    lines = [
        "# editspec latency profile", "",
        f"- device: {report['device']}; threads: {report['threads']}; dtype: {report['dtype']}"
        + (f"; quantized: {report['quantize']}" if report.get('quantize') else ""),
        f"- torch {report['torch']}, transformers {report['transformers']}",
        f"- data: {report['data']}: {report['sentences']} sentences "
        f"({report['skipped_long']} longer than the models' input skipped); batch size "
        f"{report['batch_size']}; warm-up {report['warmup']} batches; γ = {report['gamma']}",
        "- options: " + ", ".join(f"{k}={v}" for k, v in report.get("options", {}).items()
                                  if v not in (None, False) and k != "command"), "",
    ]
    if report.get("spelling"):
        s = report["spelling"]
        lines[-1:-1] = [f"- spelling (`editspec.pre.spelling`, on the text before every mode, not in the "
                        f"latencies below): median {s['median']:.3f} ms per sentence, p90 {s['p90']:.3f}; "
                        f"loaded once in {s['load_seconds']:.1f} s"]
    for kind, r in (report.get("rescoring") or {}).items():
        name = "EdiT5" if kind == "edit5" else "T5"
        lines[-1:-1] = [f"- rescoring with the {name} (`editspec.decoding.rescoring`, on its "
                        f"output, every pair forced, not in the latencies below): median {r['median']:.2f} ms per sentence, p90 "
                        f"{r['p90']:.2f}, mean {r['mean']:.2f} ({r['changed']} of {r['n']} outputs changed)"]
        if r.get("real_words"):
            w = r["real_words"]
            lines[-1:-1] = [f"- made-up words check on the {name}'s output "
                            f"(`editspec.post.checks.real_words`, not in the latencies below): median "
                            f"{w['median']:.3f} ms per sentence, p90 {w['p90']:.3f}"]
    return lines


def mode_lines(modes: dict, report: dict, unit: str) -> list[str]:
    """The modes' table, its notes and the CTranslate2 comparison."""
    lines = [
        f"## Modes (trained models; ms per {unit}, medians unless marked)", "",
        "| mode | latency | p90 | mean | encoder | decoder ms/step | steps | decoder | draft | other "
        "| speedup vs t5 | identical to t5 | acceptance | tokens/pass |",
        "|---|" + "---:|" * 13,
    ]
    notes = []
    for mode, e in modes.items():
        if e.get("status") != "ok":
            notes.append(f"- `{mode}`: {e['status']}: {e['reason']}")
            continue
        if "drafter" in e:  # the speculative mode's measured pick (``drafters.Cheapest``)
            costs = ", ".join(f"{n} {_f(v)}" for n, v in e["drafter_cost_ms"].items())
            notes.append(f"- `{mode}` drafts with {e['drafter']}: ms per probed {unit}, drafting "
                         f"and verifier passes together: {costs}")
        lines.append("| " + " | ".join([
            f"`{mode}`", _f(e["latency_ms"]["median"]), _f(e["latency_ms"]["p90"]), _f(e["latency_ms"]["mean"]),
            _f(median(e["encoder_ms"])), _f(median(e["decoder_step_ms"]), 3),
            _f(median(e["decoder_steps"]), 1), _f(median(e["decoder_ms"])), _f(median(e["draft_ms"])),
            _f(median(e["other_ms"])), _f(e["speedup_vs_t5"]), _f(e["identical_to_t5"], 3),
            _f(e["acceptance_rate"], 3), _f(e.get("tokens_per_pass")),
        ]) + " |")
    lines += [""] + notes + ([""] if notes else [])
    lines += ct2_lines(modes, report.get("ctranslate2"))
    lines += [
        "Steps: decoder passes per " + unit + " (T5: one per token; speculative and hf-assisted/"
        "prompt-lookup: verifier passes; edit5: insertion-decoder steps; beam4: passes over its 4 rows "
        "a sentence, whose best hypothesis is no greedy output). Draft: time in the "
        "drafter (EdiT5, small T5, n-gram lookups). Other: latency minus encoder, decoder and "
        "draft (edit5: tag layer and pointer walk). Identical: share of sentences whose output "
        "equals our T5 greedy output (ids; text for an EdiT5 with another vocabulary). "
        "Acceptance: accepted / proposed draft tokens. `hf-prompt-lookup` looks n-grams up in "
        "the decoder's own ids (transformers), never in the source sentence, unlike "
        "`speculative-copy`.", "",
    ]
    return lines


def leviathan_lines(modes: dict) -> list[str]:
    """Speculative decoding's expected (Leviathan et al.) against measured speedups."""
    lines: list[str] = []
    # greedy speculation alone (beam4-drafted's passes are no single output's steps)
    spec = {m: e for m, e in modes.items() if e.get("status") == "ok" and e.get("leviathan") and "tokens_per_pass" in e}
    if spec:
        lines += [
            "## Speculative decoding: expected (Leviathan et al.) vs measured", "",
            "α: per-token acceptance (accepted / (accepted + rejections)); γ: mean draft tokens "
            "per verifier pass (adaptive here, fixed in the formula); c: draft time per proposed "
            "token / median single-token step of `t5`. Expected speedup (1 − α^(γ+1)) / ((1 − α)(γc + 1)) "
            "assumes a verifier pass costs one single-token step; the measured speedup is "
            "median t5 latency / median mode latency in this run. `speculative-perfect` "
            "(T5's own greedy output as the draft) is the limit of a perfect drafter.", "",
            "| mode | α | γ | c | expected tokens/pass | measured tokens/pass | expected speedup "
            "| measured speedup |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for mode, e in spec.items():
            lv = e["leviathan"]
            lines.append(f"| `{mode}` | {_f(lv['alpha'], 3)} | {_f(lv['gamma'])} | {_f(lv['c'], 3)} | "
                         f"{_f(lv['expected_tokens_per_pass'])} | {_f(e['tokens_per_pass'])} | "
                         f"{_f(lv['expected_speedup'])} | {_f(e['speedup_vs_t5'])} |")
        lines.append("")
    return lines


def architecture_lines(arch: dict, unit: str) -> list[str]:
    """The random architectures' table and the drafts at real sizes."""
    lines = [
        "## Architectures at real sizes (random weights, FORCED lengths)", "",
        "Not trained models: decoder steps are forced to the gold targets (T5: target tokens + "
        "EOS; EdiT5: gold tags and order, insertion tokens + EOS). These numbers reproduce the "
        f"structure of the EdiT5 case study (encoder ms, decoder ms/step × steps). ms per {unit}, medians.", "",
        "| architecture | parameters | latency | encoder | decoder ms/step | steps | decoder | other "
        "| speedup vs t5-base |",
        "|---|" + "---:|" * 8,
    ]
    for name, e in ((n, e) for n, e in arch.items() if "+" not in n):
        lines.append("| " + " | ".join([
            f"`{name}`", f"{e['parameters'] / 1e6:.0f}M", _f(e["latency_ms"]["median"]),
            _f(median(e["encoder_ms"])), _f(median(e["decoder_step_ms"]), 3), _f(median(e["decoder_steps"]), 1),
            _f(median(e["decoder_ms"])), _f(median(e["other_ms"])), _f(e["speedup_vs_t5_base"]),
        ]) + " |")
    lines.append("")
    for big, small in (("t5-base", "edit5-base"), ("t5-small", "edit5-small")):
        if big in arch and small in arch:
            a, b = median(arch[big]["decoder_ms"]), median(arch[small]["decoder_ms"])
            if a and b:
                paper = " (the paper's GPU case study: 14.5×)" if big == "t5-base" else ""
                lines.append(f"- median decoder time {big} / {small}: {a / b:.1f}×{paper}")
    lines.append("")
    lines += drafts_at_real_sizes(arch, unit)
    return lines

