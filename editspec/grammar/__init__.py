"""The grammar step: candidates from the parse, judged by an n-gram language model."""
