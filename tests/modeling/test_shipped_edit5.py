"""The shipped EdiT5 (editspec/models/default/edit5) through today's modules: its checkpoint loads
key for key (the flat names of ``CHECKPOINT_NAMES``), saves back under the same names, and gives
the outputs it gave before the model was built from small modules (recorded on hand-written
sentences with the code of commit c244a37; the raw model: no spelling step, guard or rescoring).
The whole of W&I dev gave the same text before and after too (not committed: corpus data)."""

from types import SimpleNamespace

import pytest
import torch
from safetensors import safe_open

from editspec.decoding import modes
from editspec.modeling.features import collate_edit5, edit5_features_batch
from editspec.modeling.loading import DEFAULT_MODEL, load_edit5
from editspec.modeling.modeling_edit5 import CHECKPOINT_NAMES, EdiT5Model
from editspec.tokenization.tokens import encode, marker_ids

SHIPPED = DEFAULT_MODEL / "edit5"

# (input, the shipped EdiT5's fp32 output), recorded before the refactor; mistakes included
EXPECTED = [
    ('He go to school every day.', 'He go to school every day.'),
    ('She have two brothers and one sister.', 'She have two brothers and one sister.'),
    ('I am living in Paris since five years.', 'I am live in Paris since five years.'),
    ("Yesterday I buy a new phone but it don't work.", "Yesterday I buy a new phone but it don't work."),
    ('The informations in this book is very useful.', 'The information in this book is very useful.'),
    ('I look forward to hear from you.', 'I look forward to hearing from you.'),
    ('We discussed about the problem for a long time.', 'We discussed about the problem for a long time.'),
    ('My friend suggested me to visit the museum.', 'My friend suggested me to visit the museum.'),
    ('There is many people in the street today.', 'There is many people in the street today.'),
    ("I didn't went to the party last weekend.", "I didn't went to the party last weekend."),
    ('He is more taller than his brother.', 'He is more taller than his brother.'),
    ('I am agree with your opinion.', 'I am agree with your opinion.'),
    ('The childrens are playing in the garden.', 'The childrens are playing in the garden.'),
    ('She can speaks three languages.', 'She can speaks three languages.'),
    ('I have visited London last year.', 'I have visited London last year.'),
    ('If I will have time, I will call you.', 'If I will have time, I will call you.'),
    ('Its a beautiful day, isnt it?', 'Its a beautiful day, isnt it?'),
    ('I like very much chocolate.', 'I like very much chocolate.'),
    ('The weather were terrible during our holiday.', 'The weather were terrible during our holiday.'),
    ('He explained me the rules of the game.', 'He explained me the rules of the game.'),
    ('I enjoy to swim in the sea.', 'I enjoy swim in the sea.'),
    ('Everybody know that smoking is dangerous.', 'Everybody know that smoking is dangerous.'),
    ('My sister works as a engineer in a big company.', 'My sister works as a engineer in a big company.'),
    ('We was very tired after the long trip.', 'We was very tired after the long trip.'),
    ('I recieved your leter yesterday.', 'I received your leter yesterday.'),
    ('People thinks that technology make our life more easier.', 'People think that technology makes our life more easier.'),
    ('In my opinion , the goverment should do more for the enviroment .', 'In my opinion,, the go transportverment should do more for the environment.'),
    ('she dont like apples', 'Shet like apples'),
    ('Dear Sir or Madam, I am writing to apply for the job wich I saw in the newspaper.', 'Dear Sir or Madam, I am writing to apply for the job. That I saw in the newspaper.'),
    ('I have 23 years old.', 'I have a 23 years old.'),
    ('Last summer I go to London with my family.', 'Last summer I go to London with my family.'),
    ("The weather was very good, it didn't rained at all!", "The weather was very good it didn't rained at all!"),
    ('I still make a lot of mistake in grammar.', 'I still make a lot of mistake in grammar.'),
    ('This is the best film I ever seen.', 'This is the best film I ever seen.'),
    ('He said me that he was busy.', 'He said me that he was busy.'),
    ('Can you help me to find a cheap hotel ?', 'Can you help me to find a cheap hotel ?'),
    ('My father gave to me a present for my birthday.', 'My father gave to me a present for my birthday.'),
    ('They are living here since 2010.', 'They are living here since 2010.'),
    ('This sentence is already correct.', 'This sentence is already correct.'),
    ('Thank you for your help.', 'Thank you for your help.'),
]

# teacher-forced log P(tags, order, insertions | source) of (source, target) pairs, as recorded
LOG_LIKELIHOODS = [
    ("He go to school every day.", "He goes to school every day.", -16.098),
    ("She have two brothers.", "She has two brothers.", -0.4722),
    ("I look forward to hear from you.", "I look forward to hearing from you.", -0.0151),
    ("Yesterday he go home early.", "He went home early yesterday.", -55.1616),
]


@pytest.fixture(scope="module")
def shipped():
    return load_edit5(str(SHIPPED), torch.device("cpu"))  # fp32, as the corrector loads it


def test_checkpoint_keys_load_and_save_unchanged(tmp_path):
    with safe_open(str(SHIPPED / "model.safetensors"), "pt") as f:
        stored = {k: f.get_tensor(k) for k in f.keys()}
    model, info = EdiT5Model.from_pretrained(SHIPPED, output_loading_info=True)
    assert not any(info.values()), info  # nothing missing, unexpected or mismatched
    assert any(k.startswith("pointer_key_layer.") for k in stored)  # the flat names, mapped on load
    state = model.state_dict()
    for key, value in stored.items():
        old = key.split(".")[0]
        assert torch.equal(state[key.replace(old, CHECKPOINT_NAMES.get(old, old), 1)], value), key
    model.save_pretrained(tmp_path)
    with safe_open(str(tmp_path / "model.safetensors"), "pt") as f:
        assert set(f.keys()) == set(stored)
        assert all(torch.equal(f.get_tensor(k), stored[k]) for k in stored)


def test_outputs_as_recorded(shipped):
    model, tok = shipped
    models = SimpleNamespace(edit5=model, edit5_tokenizer=tok, markers=marker_ids(tok), device=model.device)
    encoded = encode(tok, [s for s, _ in EXPECTED])
    outputs, _ = modes.EDIT5.run(models, encoded, 16)
    got = modes.EDIT5.render(models, encoded, outputs)
    assert [(s, g) for (s, _), g in zip(EXPECTED, got)] == EXPECTED
    assert sum(s != t for s, t in EXPECTED) == 11  # the recorded outputs edit: a copying model fails


def test_log_likelihoods_as_recorded(shipped):
    model, tok = shipped
    pairs = edit5_features_batch(tok, [s for s, _, _ in LOG_LIKELIHOODS], [t for _, t, _ in LOG_LIKELIHOODS], 128)
    scores = model.log_likelihood(**collate_edit5(pairs, tok.pad_token_id)).tolist()
    assert scores == pytest.approx([x for _, _, x in LOG_LIKELIHOODS], abs=2e-3)
