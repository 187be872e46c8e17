"""editspec/profiling/report.py: the markdown tables of a report."""

from editspec.profiling.report import markdown
from editspec.profiling.stats import summary

HEAD = {"device": "cpu: test", "threads": 1, "dtype": "float32", "torch": "x", "transformers": "y",
        "data": "dev.m2", "sentences": 2, "skipped_long": 0, "batch_size": 1, "warmup": 0, "gamma": 4,
        "options": {"limit": 2, "trace": False}}


def _entry(latency: list[float], speedup: float) -> dict:
    s = summary(latency)
    return {"status": "ok", "latency_ms": s, "encoder_ms": s, "decoder_step_ms": s, "decoder_steps": s,
            "decoder_ms": s, "draft_ms": None, "other_ms": s, "speedup_vs_t5": speedup, "identical_to_t5": 1.0,
            "acceptance_rate": None}


def test_markdown_rows_and_notes():
    report = {**HEAD, "modes": {"t5": _entry([4.0, 6.0], 1.0), "edit5": _entry([1.0, 2.0], 3.3333),
                                "hf-assisted": {"status": "skipped", "reason": "no t5-draft model"}},
              "architectures": {}}
    md = markdown(report)
    assert "| `t5` | 5.00 | 6.00 | 5.00 |" in md and "| `edit5` | 1.50 | 2.00 | 1.50 |" in md
    assert "| 3.33 | 1.000 |" in md
    assert "- `hf-assisted`: skipped: no t5-draft model" in md
    assert "options: limit=2" in md and "trace" not in md.split("options:")[1].splitlines()[0]
    assert "Leviathan" not in md and "Architectures" not in md  # no speculative mode, no architectures
