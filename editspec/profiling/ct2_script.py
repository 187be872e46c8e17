"""The CTranslate2 peer of ``editspec profile --processes``: what a user would write to correct a file
with the shipped T5 converted for CTranslate2 (``profiling.ct2.converted``), as a whole process.

    python ct2_script.py CT2_DIR TOKENIZER_JSON INPUT OUTPUT THREADS

``tokenizers`` reads the T5's tokenizer (its post-processor appends </s>), ``translate_batch``
decodes greedily in float32 (``max_batch_size=32``: it sorts the lines by length and batches them),
and each output is written as text. It imports nothing of editspec: its start-up is its own.
"""

import sys

import ctranslate2
from tokenizers import Tokenizer

model_dir, tokenizer_file, source, target, threads = sys.argv[1:6]
tokenizer = Tokenizer.from_file(tokenizer_file)
translator = ctranslate2.Translator(model_dir, device="cpu", compute_type="float32", intra_threads=int(threads))
with open(source, encoding="utf-8") as f:
    lines = f.read().splitlines()
results = translator.translate_batch([tokenizer.encode(line).tokens for line in lines], max_batch_size=32, beam_size=1)
with open(target, "w", encoding="utf-8") as f:
    for result in results:
        f.write(tokenizer.decode([tokenizer.token_to_id(t) for t in result.hypotheses[0]]) + "\n")
