"""Fixtures of the training and tuning scripts' tests: the tiny random bundle ``Corrector`` loads."""

import pytest

from tests.helpers import tiny_bundle


@pytest.fixture(scope="module")
def models(tmp_path_factory, tokenizer):
    """``bundle/`` (a tiny random EdiT5 and T5) and ``identity/`` (see ``tiny_bundle``)."""
    return tiny_bundle(tmp_path_factory.mktemp("models"), tokenizer)
