"""``EdiT5Config``: the EdiT5's hyper-parameters, in its own file as transformers keeps a model's
configuration apart from its modeling code (``editspec.modeling.modeling_edit5`` has the model and
the design that these settings shape).

    EdiT5Config(vocab_size=16256, d_model=256, num_layers=4, num_decoder_layers=1, ...)
        -> t5_config()              the T5Config of the encoder-side layers
        -> t5_config(decoder=True)  the T5Config of the 1-layer insertion decoder
"""

from __future__ import annotations

from transformers import PreTrainedConfig, T5Config


class EdiT5Config(PreTrainedConfig):
    r"""EdiT5 hyper-parameters. The T5 fields (``d_model`` .. ``feed_forward_proj``) mean what
    they mean in ``T5Config``; ``num_layers`` is the encoder depth. Defaults are T5-base with a
    one-layer insertion decoder.

    max_order_positions: size of the new-order position embedding; inputs (with EOS) may have
        at most ``max_order_positions - 1`` tokens.
    tag_embedding_dim: size of the tag embedding concatenated to the encoder states.
    loss_weighting: ``"tokens"`` or ``"mean"`` (see the module docstring).
    keep_bias, order_bias: inference confidence biases added to the KEEP logit and to the
        pointer logit of the source-order successor (precision over recall, as GECToR's).
    stop_bias: inference bias added to the insertion decoder's EOS logit: positive ends the
        insertions sooner (fewer, surer), negative lets more through (recall).
    pointer_offset_bias: add a learned scalar per relative offset bucket to the pointer logits.
    marker_ids: the position markers' token ids (``editspec.tokenization.tokens.marker_ids``), to point
        markers at kept tokens (see "Pointed markers" above); None: markers are plain
        vocabulary outputs, as in the paper.
    marker_gap: a pointed marker's key also sees the kept token after the gap (see above).
    tie_word_embeddings: lm head = input embedding, decoder output scaled by d_model**-0.5
        (T5 1.0); False: a separate lm head, no scaling (T5 1.1).
    t5_encoder: the T5 checkpoint whose encoder and embeddings this EdiT5 reads (a path relative
        to the EdiT5's own directory, ``../t5`` in a bundle): the heads sit on that T5's encoder,
        which is stored once, with the T5. None: the EdiT5 has an encoder of its own.
    """

    model_type = "edit5"
    attribute_map = {
        "hidden_size": "d_model",
        "num_attention_heads": "num_heads",
        "num_hidden_layers": "num_layers",
        "head_dim": "d_kv",
    }

    vocab_size: int = 32128
    d_model: int = 768
    d_kv: int = 64
    d_ff: int = 3072
    num_heads: int = 12
    num_layers: int = 12
    num_decoder_layers: int = 1
    relative_attention_num_buckets: int = 32
    relative_attention_max_distance: int = 128
    dropout_rate: float = 0.1
    layer_norm_epsilon: float = 1e-6
    initializer_factor: float = 1.0
    feed_forward_proj: str = "relu"
    max_order_positions: int = 512
    tag_embedding_dim: int = 64
    tag_loss_weight: float = 1.0
    pointer_loss_weight: float = 1.0
    insertion_loss_weight: float = 1.0
    loss_weighting: str = "tokens"
    keep_bias: float = 0.0
    order_bias: float = 0.0
    stop_bias: float = 0.0
    pointer_offset_bias: bool = True
    marker_ids: list[int] | None = None
    marker_gap: bool = False
    pad_token_id: int | None = 0
    eos_token_id: int | None = 1
    decoder_start_token_id: int | None = 0
    tie_word_embeddings: bool = True
    t5_encoder: str | None = None

    def __post_init__(self, **kwargs):
        if self.loss_weighting not in ("tokens", "mean"):
            raise ValueError(f"loss_weighting must be 'tokens' or 'mean', not {self.loss_weighting!r}")
        super().__post_init__(**kwargs)

    def t5_config(self, decoder: bool = False) -> T5Config:
        """The ``T5Config`` of the encoder-side layers, or of the insertion decoder."""
        config = T5Config(
            vocab_size=self.vocab_size, d_model=self.d_model, d_kv=self.d_kv, d_ff=self.d_ff,
            num_heads=self.num_heads, num_layers=self.num_decoder_layers if decoder else self.num_layers,
            relative_attention_num_buckets=self.relative_attention_num_buckets,
            relative_attention_max_distance=self.relative_attention_max_distance,
            dropout_rate=self.dropout_rate, layer_norm_epsilon=self.layer_norm_epsilon,
            initializer_factor=self.initializer_factor, feed_forward_proj=self.feed_forward_proj,
            is_decoder=decoder, use_cache=decoder, pad_token_id=self.pad_token_id,
            eos_token_id=self.eos_token_id,
        )
        config._attn_implementation = self._attn_implementation
        return config
