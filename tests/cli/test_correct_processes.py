"""``editspec correct`` as two CPU processes (torchrun): each corrects its share of every block,
process 0 writes all lines in the input's order, byte for byte what one process writes."""

import os
import random
import subprocess
import sys

from editspec import cli
from editspec.files import BLOCK_LINES
from tests.helpers import sentences, tiny_bundle


def test_two_processes_write_what_one_writes(tmp_path, tokenizer):
    bundle = tiny_bundle(tmp_path, tokenizer) / "bundle"
    rng = random.Random(0)
    texts = sentences(300, seed=2) + ["", "  two  spaces ", "tab\there", "Ünïcode ☃ and 🇫🇷 flags"]
    lines = [rng.choice(texts) for _ in range(BLOCK_LINES + 101)]  # two blocks, the last short
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    common = ["correct", source, "--model", bundle, "--mode", "edit5", "--format", "diff",
              "--threads", "1", "--no-progress"]
    # one process: this one (a process of its own would add ~4 s of start, not a check)
    assert cli.main([*map(str, common), "-o", str(tmp_path / "one.txt")]) == 0
    env = dict(os.environ, OMP_NUM_THREADS="1")
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                          "-m", "editspec", *map(str, common), "-o", tmp_path / "two.txt"],
                         capture_output=True, text=True, env=env)
    assert two.returncode == 0, two.stderr[-2000:]
    written = (tmp_path / "two.txt").read_bytes()
    assert written == (tmp_path / "one.txt").read_bytes()
    assert written.count(b"\n") == len(lines)
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".two")]  # no temporary left

    stdin = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                            "-m", "editspec", "correct", "-", "--model", str(bundle)],
                           input="He go .\n", capture_output=True, text=True, env=env)
    assert stdin.returncode != 0 and "give a file, not stdin" in stdin.stderr
