"""What a lent GPU machine can import: its image's packages (KINDS.md) and the carried wheels.

A CPU run proves the lease's code path imports nothing else by refusing, in its own processes,
any module whose distribution is neither there nor carried::

    guard(carried={"datasets", "dill", "multiprocess", "rapidfuzz"})
    import torch      # torch is in the image: imported
    import spacy      # ModuleNotFoundError: spacy (distribution spacy) is not on the lent GPU machine
                      # (its image has no such package and .lease/ carries no wheel of it)

Only the imports of this repository's code and of the carried wheels are judged: what the image's
own packages import depends on their versions there, not here. Modules that belong to no installed
distribution (the standard library, this repository) pass.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.metadata
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from training.lease.plan import REPO_ROOT

# The 'cuda' image's Python packages, as the device tool's KINDS.md listed them (2026-11-17).
DEVICE_PACKAGES = frozenset("""
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build
certifi charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core
cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock
flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx
huggingface-hub humanize hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt
jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver lazy-loader lightning lightning-utilities
linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes
mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind narwhals networkx ninja numba
numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime
nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse
nvidia-cusparselt-cu13 nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx
onnx-ir onnxruntime onnxscript opencv-python-headless optax opt-einsum opt-einsum-fx optimistix
orbax-checkpoint packaging pandas pathspec patsy peft pillow pip pluggy portalocker prometheus-client
propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing pyproject-hooks pyre-extensions
pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist python-dateutil
pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core scikit-image
scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham simplejson six
sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl
tifffile tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics
torchvision tqdm transformers treescope triton typer typing-extensions typing-inspect urllib3 uvloop
wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp
""".split())


OUR_PACKAGES = frozenset({"editspec", "training", "eval", "tests"})


def normalize(name: str) -> str:
    """A distribution's name as package indexes compare them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


class DeviceOnly(importlib.abc.MetaPathFinder):
    """Refuses a top-level module whose installed distribution the lent machine lacks."""

    def __init__(self, carried: Iterable[str]):
        self.carried = {normalize(c) for c in carried}
        self.allowed = DEVICE_PACKAGES | self.carried
        self.owners = importlib.metadata.packages_distributions()

    def allows(self, top: str) -> bool:
        owners = self.owners.get(top)
        return top in OUR_PACKAGES or not owners or any(normalize(d) in self.allowed for d in owners)

    def ours(self) -> bool:
        """Whether this repository's code or a carried wheel does the import. What the image's own
        packages import is the image's business (their versions there differ from this machine's)."""
        frame = sys._getframe(2)
        while frame is not None and frame.f_globals.get("__name__", "").startswith(("importlib", "_frozen")):
            frame = frame.f_back
        if frame is None:
            return True
        filename = Path(frame.f_code.co_filename).resolve()
        if filename.is_relative_to(REPO_ROOT) and "site-packages" not in filename.parts:
            return True
        importer = frame.f_globals.get("__name__", "").partition(".")[0]
        return any(normalize(d) in self.carried for d in self.owners.get(importer) or ())

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        owners = self.owners.get(top)
        if path is None and not self.allows(top) and self.ours():
            raise ModuleNotFoundError(
                f"{top} (distribution {owners[0]}) is not on the lent GPU machine (its image has no "
                f"such package and .lease/ carries no wheel of it)", name=fullname)
        return None  # the ordinary finders do the import


def guard(carried: Iterable[str]) -> None:
    """Install the finder in this process (a stage's; spawned data workers inherit nothing, but
    they run the modules this process imported first)."""
    if not any(isinstance(f, DeviceOnly) for f in sys.meta_path):
        sys.meta_path.insert(0, DeviceOnly(carried))


@contextlib.contextmanager
def guarded(carried: Iterable[str]) -> Iterator[None]:
    """The finder for a block only (``collect`` when called in-process, as the CPU test does)."""
    finder = DeviceOnly(carried)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
