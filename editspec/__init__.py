"""editspec: fast grammatical error correction with EdiT5, T5 and speculative T5 (drafted by EdiT5 or the source)."""

__version__ = "0.1.0"


def __getattr__(name):  # lazy: `import editspec` must not import torch
    if name == "Corrector":
        from editspec.corrector import Corrector

        return Corrector
    raise AttributeError(name)
