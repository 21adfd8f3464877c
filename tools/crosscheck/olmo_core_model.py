"""OLMo-core's own Olmo 3 model from a Hugging Face Olmo 3 directory (a replica/HF parity case).

    config = transformer_config(hf)            # TransformerConfig.olmo3_7B(...), shrunk to `hf`
    model = build_model(case_dir)              # built by OLMo-core, weights via its HF conversion
    tm = train_module(model, batch_tokens=B*T, seq_len=T, z_loss_multiplier=1e-5)
    out = train_batch(tm, input_ids, labels)   # OLMo-core's train_batch: losses and gradients

Everything that decides the math is OLMo-core's code: the config builder of the official Olmo 3
scripts (`TransformerConfig.olmo3_7B`: reordered-norm blocks, QK-norm, 3:1 sliding windows) with
the sizes of the case put in by the builder's own arguments (layers, heads, KV heads, theta,
window pattern) and `dataclasses.replace` of the built config (width, MLP width, norm eps, which
the 7B builder fixes); YaRN through `TransformerConfig.with_rope_scaling` (full-attention layers
only, as the official long-context script does); the weights through
`olmo_core.nn.hf.convert_state_from_hf`; the loss and the gradients through
`TransformerTrainModule.train_batch` (summed cross-entropy + z-loss divided by the batch's label
count, `olmo_core.nn.functional.cross_entropy_loss`), gradients renamed to HF names by
`convert_state_to_hf`. A config OLMo-core cannot express is refused naming the field.
"""
import dataclasses
import json
import logging
import math
import os
import warnings

import numpy as np

import common

CASES = {
    "tiny-mha": "tests/data/olmo3/tiny-mha",
    "tiny-gqa": "tests/data/olmo3/tiny-gqa",
    "tiny-yarn": "tests/data/olmo3/tiny-yarn",
    "bytes-mqa-2048": "tests/data/long/bytes-mqa-2048",
}
Z_LOSS_MULTIPLIER = 1e-5  # the official Olmo 3 scripts' train module setting


def quiet():
    """OLMo-core warns on CPU that its flash backends are unavailable; the torch backend is asked
    for explicitly, so those messages say nothing here."""
    warnings.filterwarnings("ignore", message=".*GPUs are not available.*")
    warnings.filterwarnings("ignore", message=".*flash.*")
    logging.getLogger("olmo_core").setLevel(logging.ERROR)


def _refuse(path, field, why):
    raise ValueError(f"{path}: {field}: {why}; OLMo-core's Olmo 3 config cannot express it")


def _layer_types(cfg, n_layers):
    """HF layer types ('sliding_attention' / 'full_attention') of an SWA config."""
    return ["sliding_attention" if cfg.should_use_swa(i, n_layers) else "full_attention"
            for i in range(n_layers)]


def sliding_window_config(hf, path="config.json"):
    """The SlidingWindowAttentionConfig that gives `hf`'s layer_types: the Olmo 3 builders' own
    (pattern [W, W, W, -1], last layer forced full) when it does, else the same pattern without the
    forced last layer, else the explicit per-layer pattern. Returns (config, which)."""
    from olmo_core.nn.attention import SlidingWindowAttentionConfig
    n = hf["num_hidden_layers"]
    types = hf.get("layer_types")
    window = hf.get("sliding_window")
    if types is None:
        types = ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention" for i in range(n)]
    if len(types) != n:
        _refuse(path, "layer_types", f"{len(types)} entries for {n} layers")
    if any(t not in ("sliding_attention", "full_attention") for t in types):
        _refuse(path, "layer_types", f"a type other than sliding/full in {types}")
    if all(t == "full_attention" for t in types):
        return None, "no sliding layers"
    if not isinstance(window, int) or window <= 0:
        _refuse(path, "sliding_window", f"{window!r} with sliding layers")
    candidates = [
        ("the Olmo 3 builders' default (pattern [W, W, W, -1], last layer full)",
         SlidingWindowAttentionConfig(pattern=[window, window, window, -1],
                                      force_full_attention_on_first_layer=False,
                                      force_full_attention_on_last_layer=True)),
        ("pattern [W, W, W, -1] without the forced full last layer",
         SlidingWindowAttentionConfig(pattern=[window, window, window, -1],
                                      force_full_attention_on_first_layer=False,
                                      force_full_attention_on_last_layer=False)),
        ("an explicit per-layer pattern",
         SlidingWindowAttentionConfig(
             pattern=[window if t == "sliding_attention" else -1 for t in types],
             force_full_attention_on_first_layer=False,
             force_full_attention_on_last_layer=False)),
    ]
    for which, cfg in candidates:
        if _layer_types(cfg, n) == list(types):
            return cfg, which
    raise AssertionError("the explicit pattern reproduces any layer_types")


def rope_by_layer_type(hf):
    """{"sliding_attention": {...}, "full_attention": {...}}: each layer type's RoPE settings as
    the config's spelling means them (docs/formats.md): legacy top-level rope_theta (default
    10000) for every layer with rope_scaling on the full-attention layers; rope_parameters per
    layer type as written; one flat rope_parameters object: its theta for every layer, its scaling
    on the full-attention layers (Olmo 3 never scales its sliding layers)."""
    rp = hf.get("rope_parameters")
    if isinstance(rp, dict) and ("full_attention" in rp or "sliding_attention" in rp):
        return {k: dict(rp.get(k) or {"rope_type": "default"})
                for k in ("sliding_attention", "full_attention")}
    if isinstance(rp, dict):
        theta, scaling = rp.get("rope_theta", hf.get("rope_theta", 10000.0)), dict(rp)
    else:
        theta, scaling = hf.get("rope_theta", 10000.0), dict(hf.get("rope_scaling") or {})
    scaling.pop("rope_theta", None)
    if "type" in scaling and "rope_type" not in scaling:
        scaling["rope_type"] = scaling.pop("type")
    scaling.setdefault("rope_type", "default")
    return {"sliding_attention": {"rope_type": "default", "rope_theta": theta},
            "full_attention": dict(scaling, rope_theta=theta)}


def yarn_scaling(rs, path="config.json", where="rope_parameters.full_attention"):
    """OLMo-core's YaRNRoPEScalingConfig for one layer type's RoPE settings `rs`
    (rope_by_layer_type), None for plain RoPE."""
    from olmo_core.nn.rope import YaRNRoPEScalingConfig
    kind = rs.get("rope_type", "default")
    if kind == "default":
        return None
    if kind != "yarn":
        _refuse(path, f"{where}.rope_type", f"{kind!r} (only yarn is mapped)")
    factor = float(rs["factor"])
    default_m = 0.1 * math.log(factor) + 1.0
    if rs.get("attention_factor") is not None and abs(rs["attention_factor"] - default_m) > 1e-12:
        _refuse(path, f"{where}.attention_factor",
                f"{rs['attention_factor']} (OLMo-core always uses 0.1 ln(factor) + 1 = {default_m})")
    if rs.get("truncate", True) is not True:
        _refuse(path, f"{where}.truncate", "false (OLMo-core always floors/ceils the ramp)")
    if rs.get("mscale") or rs.get("mscale_all_dim"):
        _refuse(path, f"{where}.mscale", "set (OLMo-core has no mscale)")
    beta_fast, beta_slow = rs.get("beta_fast", 32), rs.get("beta_slow", 1)
    for name, b in (("beta_fast", beta_fast), ("beta_slow", beta_slow)):
        if float(b) != int(b):
            _refuse(path, f"{where}.{name}", f"{b} is not an integer (OLMo-core's is an int)")
    return YaRNRoPEScalingConfig(factor=factor, beta_fast=int(beta_fast),
                                 beta_slow=int(beta_slow),
                                 old_context_len=int(rs["original_max_position_embeddings"]))


def transformer_config(hf, path="config.json"):
    """OLMo-core's TransformerConfig for the HF Olmo 3 config dict `hf`. Returns (config, notes):
    notes says which sliding-window pattern was needed."""
    from olmo_core.nn.attention import AttentionBackendName
    from olmo_core.nn.transformer import TransformerConfig
    if hf.get("model_type") != "olmo3":
        _refuse(path, "model_type", f"{hf.get('model_type')!r}, expected 'olmo3'")
    if hf.get("hidden_act", "silu") != "silu":
        _refuse(path, "hidden_act", repr(hf.get("hidden_act")))
    if hf.get("attention_bias", False):
        _refuse(path, "attention_bias", "true")
    rope = rope_by_layer_type(hf)
    theta = rope["full_attention"]["rope_theta"]
    if float(rope["sliding_attention"]["rope_theta"]) != float(theta):
        _refuse(path, "rope_parameters.sliding_attention.rope_theta",
                f"{rope['sliding_attention']['rope_theta']} differs from the full-attention "
                f"layers' {theta} (OLMo-core has one theta for every layer)")
    if rope["sliding_attention"].get("rope_type", "default") != "default":
        _refuse(path, "rope_parameters.sliding_attention.rope_type",
                "not 'default' (Olmo 3 scales the full-attention layers only)")
    if float(theta) != int(theta):
        _refuse(path, "rope_theta", f"{theta} is not an integer (OLMo-core's theta is an int)")
    D, H = hf["hidden_size"], hf["num_attention_heads"]
    head_dim = hf.get("head_dim") or D // H
    swa, which = sliding_window_config(hf, path)
    # The builder of the official Olmo 3 scripts, at the case's depth, heads and theta; the torch
    # attention backend (the flash ones need a GPU; the math is the same SDPA).
    config = TransformerConfig.olmo3_7B(
        vocab_size=hf["vocab_size"],
        n_layers=hf["num_hidden_layers"],
        n_heads=H,
        n_kv_heads=hf.get("num_key_value_heads") or H,
        rope_theta=int(theta),
        sliding_window=swa,
        attn_backend=AttentionBackendName.torch,
    )
    # What the 7B builder fixes (d_model 4096, MLP 11008, eps 1e-6): set on the built config.
    eps = hf["rms_norm_eps"]
    block = config.block
    attn = block.sequence_mixer
    attn = dataclasses.replace(
        attn, head_dim=head_dim if head_dim != D // H else None,
        qk_norm=dataclasses.replace(attn.qk_norm, eps=eps))
    block = dataclasses.replace(
        block, sequence_mixer=attn,
        layer_norm=dataclasses.replace(block.layer_norm, eps=eps),
        feed_forward=dataclasses.replace(block.feed_forward, hidden_size=hf["intermediate_size"]))
    config = dataclasses.replace(
        config, d_model=D, block=block,
        lm_head=dataclasses.replace(config.lm_head, layer_norm=dataclasses.replace(
            config.lm_head.layer_norm, eps=eps)),
        tie_word_embeddings=bool(hf.get("tie_word_embeddings", False)))
    yarn = yarn_scaling(rope["full_attention"], path)
    if yarn is not None:  # as the official long-context script: full-attention layers only
        config = config.with_rope_scaling(yarn)
    return config, {"sliding_window": which, "yarn": yarn is not None}


def load_hf_dir(case_dir):
    """(config dict, transformers PretrainedConfig, {HF name: torch tensor}) of an HF directory."""
    from safetensors.torch import load_file
    from transformers import AutoConfig
    path = os.path.join(case_dir, "config.json")
    with open(path, encoding="utf-8") as f:
        hf = json.load(f)
    pretrained = AutoConfig.from_pretrained(case_dir)
    state = load_file(os.path.join(case_dir, "model.safetensors"))
    return hf, pretrained, state


class Case:
    """One HF Olmo 3 directory as OLMo-core's model: `model` (built by OLMo-core from
    transformer_config), `config`, `notes`, `hf` (the config.json dict), `pretrained` (its
    transformers config) and the directory's weights in OLMo-core's names (`state`, converted by
    OLMo-core's convert_state_from_hf)."""

    def __init__(self, case_dir):
        import torch
        from olmo_core.nn.hf.convert import convert_state_from_hf
        quiet()
        self.dir = case_dir
        self.hf, self.pretrained, hf_state = load_hf_dir(case_dir)
        self.config, self.notes = transformer_config(self.hf,
                                                     os.path.join(case_dir, "config.json"))
        torch.manual_seed(0)
        self.model = self.config.build(init_device="cpu")
        self.state = convert_state_from_hf(self.pretrained, hf_state, model_type="olmo3")
        self.load_weights()

    def load_weights(self):
        """Puts the directory's weights into the model: every parameter set, no key left over."""
        missing, unexpected = self.model.load_state_dict(self.state, strict=False)
        if missing or unexpected:
            raise RuntimeError(f"{self.dir}: OLMo-core's conversion left parameters unset "
                               f"{missing} or unused {unexpected}")

    def logits(self, input_ids):
        """The model's logits [B, T, V] (float32) on int64 ids [B, T]."""
        import torch
        self.model.eval()
        with torch.no_grad():
            return self.model(torch.as_tensor(input_ids, dtype=torch.long)).float().numpy()

    def train_module(self, *, batch_tokens, seq_len, z_loss_multiplier=Z_LOSS_MULTIPLIER):
        """OLMo-core's TransformerTrainModule over the model (train_module below). Building it runs
        OLMo-core's own init of the weights, so the directory's are loaded again afterwards."""
        tm = train_module(self.model, batch_tokens=batch_tokens, seq_len=seq_len,
                          z_loss_multiplier=z_loss_multiplier)
        self.load_weights()
        return tm


def hf_config_of(model):
    """OLMo-core's own HF description of the built model (olmo_core.nn.hf.config.get_hf_config)."""
    from olmo_core.nn.hf.config import get_hf_config
    return get_hf_config(model).to_dict()


class _Recorder:
    """Stands where OLMo-core's Trainer receives the train module's metrics: keeps them."""

    def __init__(self):
        self.metrics = {}

    def record_metric(self, name, value, reduce_type=None, namespace=None, merge_strategy=None):
        key = f"{namespace}/{name}" if namespace else name
        self.metrics[key] = float(value.detach() if hasattr(value, "detach") else value)

    def record_ce_loss(self, value, reduce_type=None):
        self.metrics["train/CE loss"] = float(value.detach() if hasattr(value, "detach") else value)


def train_module(model, *, batch_tokens, seq_len, z_loss_multiplier=Z_LOSS_MULTIPLIER):
    """OLMo-core's TransformerTrainModule over `model` as the official Olmo 3 scripts configure it
    (SkipStepAdamW, z-loss, max grad norm 1.0), one micro-batch of `batch_tokens` tokens, CPU.
    Building it initialises the model's weights by OLMo-core's init (the config's init_seed)."""
    import torch
    from olmo_core.optim import OptimGroupOverride, SkipStepAdamWConfig
    from olmo_core.train.train_module import TransformerTrainModuleConfig
    cfg = TransformerTrainModuleConfig(
        rank_microbatch_size=batch_tokens,
        max_sequence_length=seq_len,
        optim=SkipStepAdamWConfig(
            lr=1e-3, weight_decay=0.1, betas=(0.9, 0.95),
            group_overrides=[OptimGroupOverride(params=["embeddings.weight"],
                                                opts=dict(weight_decay=0.0))]),
        z_loss_multiplier=z_loss_multiplier,
        max_grad_norm=1.0,
    )
    tm = cfg.build(model, device=torch.device("cpu"))
    tm._trainer = _Recorder()
    return tm


def train_batch(tm, pretrained, input_ids, labels):
    """One `train_batch` of OLMo-core's train module (forward, its loss, backward; no optimizer
    step); `pretrained` is the model's HF config (for the gradients' names). Returns {"ce_loss", "z_loss" (multiplier included, None without z-loss), "label_tokens",
    "grads": {HF name: float32 numpy}} — the gradients renamed by OLMo-core's convert_state_to_hf."""
    import torch
    from olmo_core.nn.hf.convert import convert_state_to_hf
    model = tm.model
    for p in model.parameters():
        p.grad = None
    batch = {"input_ids": torch.as_tensor(input_ids, dtype=torch.long),
             "labels": torch.as_tensor(labels, dtype=torch.long)}
    tm.train_batch(batch)
    metrics = tm._trainer.metrics
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters()}
    hf_grads = convert_state_to_hf(pretrained, grads)
    return {"ce_loss": metrics["train/CE loss"],
            "z_loss": metrics.get("train/Z loss"),
            "label_tokens": int((np.asarray(labels) != -100).sum()),
            "grads": {k: v.float().numpy() for k, v in hf_grads.items()}}


# --- one parity case through OLMo-core: what the check compares and the generator commits -------

def _rope_math(rp, default_theta):
    """The numbers of one rope_parameters entry that change the math (attention factor resolved)."""
    rp = dict(rp or {})
    kind = rp.get("rope_type", "default")
    out = {"rope_type": kind, "rope_theta": float(rp.get("rope_theta", default_theta))}
    if kind == "yarn":
        f = float(rp["factor"])
        out.update(factor=f, original_max_position_embeddings=int(
            rp["original_max_position_embeddings"]), beta_fast=float(rp.get("beta_fast", 32)),
            beta_slow=float(rp.get("beta_slow", 1)),
            attention_factor=float(rp.get("attention_factor") or 0.1 * math.log(f) + 1.0),
            truncate=bool(rp.get("truncate", True)))
    return out


def _yarn_of(rs):
    """The YaRN numbers of one layer type's RoPE settings (attention factor resolved), or None."""
    if rs.get("rope_type", "default") != "yarn":
        return None
    f = float(rs["factor"])
    return {"factor": f, "original_max_position_embeddings": int(rs["original_max_position_embeddings"]),
            "beta_fast": float(rs.get("beta_fast", 32)), "beta_slow": float(rs.get("beta_slow", 1)),
            "attention_factor": float(rs.get("attention_factor") or 0.1 * math.log(f) + 1.0)}


def model_differences(model, hf):
    """Where the model OLMo-core built (read from its modules: per layer the window, RoPE theta and
    YaRN, heads, head dim, norm eps; the widths) differs from what config.json `hf` says ([] when
    nowhere): the proof that its builder made the case's model."""
    n = hf["num_hidden_layers"]
    rope = rope_by_layer_type(hf)
    types = hf.get("layer_types") or ["full_attention" if (i + 1) % 4 == 0
                                      else "sliding_attention" for i in range(n)]
    H = hf["num_attention_heads"]
    want_hd = hf.get("head_dim") or hf["hidden_size"] // H
    diffs = []

    def same(what, got, want):
        if got != want:
            diffs.append(f"{what}: {got} (config.json: {want})")

    same("d_model", model.d_model, hf["hidden_size"])
    same("vocab_size", model.vocab_size, hf["vocab_size"])
    same("n_layers", model.n_layers, n)
    same("tie_word_embeddings", bool(model.tie_word_embeddings),
         bool(hf.get("tie_word_embeddings", False)))
    same("lm_head.norm.eps", model.lm_head.norm.eps, hf["rms_norm_eps"])
    for i, block in enumerate(model.blocks.values()):
        a = block.attention
        window = a.backend.window_size
        kind = types[i]
        same(f"block {i} window", window[0] + 1 if window != (-1, -1) else "full",
             hf.get("sliding_window") if kind == "sliding_attention" else "full")
        same(f"block {i} n_heads", a.n_heads, H)
        same(f"block {i} n_kv_heads", a.n_kv_heads, hf.get("num_key_value_heads") or H)
        same(f"block {i} head_dim", a.head_dim, want_hd)
        same(f"block {i} rope theta", float(a.rope.theta), float(rope[kind]["rope_theta"]))
        got_yarn = (None if a.rope.scaling is None
                    else _yarn_of(a.rope.scaling.to_hf_config()))
        same(f"block {i} rope scaling", got_yarn, _yarn_of(rope[kind]))
        same(f"block {i} mlp hidden", block.feed_forward.w1.out_features,
             hf["intermediate_size"])
        for norm in ("attention_norm", "feed_forward_norm"):
            same(f"block {i} {norm}.eps", getattr(block, norm).eps, hf["rms_norm_eps"])
        for norm in ("q_norm", "k_norm"):
            same(f"block {i} {norm}.eps", getattr(a, norm).eps, hf["rms_norm_eps"])
    return diffs


EXPORT_FIELDS = ["vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                 "num_attention_heads", "num_key_value_heads", "rms_norm_eps", "sliding_window",
                 "layer_types", "tie_word_embeddings"]
TRANSFORMERS_DEFAULT_THETA = 500000.0  # Olmo3Config.default_theta


def export_differences(model, hf):
    """Where OLMo-core's HF description of the built model (olmo_core.nn.hf.config.get_hf_config,
    what its save_hf_model writes) differs from config.json `hf` on the fields of the math, as
    [(field, exported, config.json)]."""
    from olmo_core.nn.hf.config import get_hf_config
    mine = json.loads(get_hf_config(model).to_json_string())
    diffs = [(f, mine.get(f), hf.get(f)) for f in EXPORT_FIELDS
             if f in hf and mine.get(f) != hf.get(f)]
    a, b = rope_by_layer_type(mine), rope_by_layer_type(hf)
    for kind in ("sliding_attention", "full_attention"):
        if float(a[kind]["rope_theta"]) != float(b[kind]["rope_theta"]):
            diffs.append((f"rope_parameters.{kind}.rope_theta", a[kind]["rope_theta"],
                          b[kind]["rope_theta"]))
        if _yarn_of(a[kind]) != _yarn_of(b[kind]):
            diffs.append((f"rope_parameters.{kind} (YaRN)", _yarn_of(a[kind]), _yarn_of(b[kind])))
    return diffs


def known_export_misreading(diffs):
    """True when every difference is transformers 5.x's: OLMo-core's get_hf_config passes the model's
    theta as the legacy rope_theta keyword, Olmo3Config pops it for the full-attention layers and
    gives the sliding ones its default 500000."""
    return all(f == "rope_parameters.sliding_attention.rope_theta"
               and float(got) == TRANSFORMERS_DEFAULT_THETA for f, got, _ in diffs)


def run_case(case_dir, *, ce_grads=True):
    """OLMo-core on the case's io.safetensors batch: its logits (eval forward), the train module's
    CE and z-loss (z_loss_multiplier 1e-5) with the gradients of that objective, and with
    `ce_grads` the gradients of the mean CE alone (a train module without z-loss: what the
    float64 truth's grad.* are of). Returns a dict of numpy arrays and floats."""
    io = common.read_safetensors(os.path.join(case_dir, "io.safetensors"))
    case = Case(case_dir)
    ids, labels = io["input_ids"].astype(np.int64), io["labels"].astype(np.int64)
    B, T = ids.shape
    out = {"case": case, "truth": io, "input_ids": ids, "labels": labels,
           "logits": case.logits(ids)}
    tm = case.train_module(batch_tokens=B * T, seq_len=T, z_loss_multiplier=Z_LOSS_MULTIPLIER)
    obj = train_batch(tm, case.pretrained, ids, labels)
    out.update(ce_loss=obj["ce_loss"], z_loss=obj["z_loss"], label_tokens=obj["label_tokens"],
               grads=obj["grads"])
    if ce_grads:
        tm = case.train_module(batch_tokens=B * T, seq_len=T, z_loss_multiplier=None)
        out["ce_only"] = train_batch(tm, case.pretrained, ids, labels)
    return out


def dump_tensors(result, *, grads):
    """The reference dump (docs/formats.md) of run_case's result: input_ids, labels, logits, loss
    (the train module's CE), z_loss (mean lse² over the labels: its z-loss over the multiplier, as
    the fixtures' io files) and, with `grads`, grad.<HF name> of the train module's objective
    CE + 1e-5·z-loss. Returns (tensors, metadata)."""
    import torch
    t = {"input_ids": result["input_ids"], "labels": result["labels"],
         "logits": result["logits"].astype(np.float32),
         "loss": np.array(result["ce_loss"], dtype=np.float64),
         "z_loss": np.array(result["z_loss"] / Z_LOSS_MULTIPLIER, dtype=np.float64)}
    if grads:
        for name in sorted(result["grads"]):
            t["grad." + name] = result["grads"][name].astype(np.float32)
    meta = {"format": "pt",
            "description": "OLMo-core's Olmo 3 (TransformerConfig.olmo3_7B shrunk to the case, "
                           "weights by convert_state_from_hf) on the case's io batch: logits, "
                           "the train module's CE (loss) and mean lse^2 (z_loss, no multiplier)"
                           + ("; grad.* of CE + z_loss_multiplier * mean lse^2" if grads else ""),
            "z_loss_multiplier": repr(Z_LOSS_MULTIPLIER) if grads else "none (no gradients)",
            "olmo_core_config": json.dumps(result["case"].config.as_config_dict()),
            "torch_threads": str(torch.get_num_threads())}
    return t, meta


# --- a case made by OLMo-core alone: its builder, its init, its HF export ------------------------

NATIVE = "olmo-core-native"
# θ = 500000 as every official Olmo 3: with another θ OLMo-core's HF export is wrong under
# transformers 5.x (known_export_misreading), and replica reads the export as written.
NATIVE_SHAPE = dict(vocab_size=256, d_model=32, n_layers=6, n_heads=2, n_kv_heads=1,
                    hidden_size=96, window=12, rope_theta=500000, batch=2, seq_len=96,
                    yarn=dict(factor=4.0, beta_fast=32, beta_slow=1, old_context_len=64),
                    init_seed=1234, data_seed=20261202)


def native_config(shape=NATIVE_SHAPE):
    """An Olmo 3 as the official scripts build one, at test size: olmo3_7B's builder (its default
    3:1 windows with the last layer forced full: S S S F S F for 6 layers), its width and MLP set
    on the built config, YaRN on the full layers by with_rope_scaling, OLMo-core's init seed."""
    from olmo_core.nn.attention import AttentionBackendName, SlidingWindowAttentionConfig
    from olmo_core.nn.rope import YaRNRoPEScalingConfig
    from olmo_core.nn.transformer import TransformerConfig
    w = shape["window"]
    config = TransformerConfig.olmo3_7B(
        vocab_size=shape["vocab_size"], n_layers=shape["n_layers"], n_heads=shape["n_heads"],
        n_kv_heads=shape["n_kv_heads"], rope_theta=shape["rope_theta"],
        attn_backend=AttentionBackendName.torch,
        sliding_window=SlidingWindowAttentionConfig(
            pattern=[w, w, w, -1], force_full_attention_on_first_layer=False,
            force_full_attention_on_last_layer=True))
    block = dataclasses.replace(config.block, feed_forward=dataclasses.replace(
        config.block.feed_forward, hidden_size=shape["hidden_size"]))
    config = dataclasses.replace(config, d_model=shape["d_model"], block=block,
                                 init_seed=shape["init_seed"])
    return config.with_rope_scaling(YaRNRoPEScalingConfig(**shape["yarn"]))


def run_native(out_dir, shape=NATIVE_SHAPE):
    """Builds native_config() with OLMo-core's train module (which initialises the weights),
    exports it with OLMo-core's save_hf_model into out_dir (what replica then loads), and runs the
    train module's train_batch on seeded uniform tokens with the labels it makes itself
    (get_labels: next tokens, the last ignored). Returns run_case's dict (no truth)."""
    import torch
    from olmo_core.data.utils import get_labels
    from olmo_core.nn.hf.checkpoint import save_hf_model
    quiet()
    config = native_config(shape)
    model = config.build(init_device="cpu")
    B, T = shape["batch"], shape["seq_len"]
    tm = train_module(model, batch_tokens=B * T, seq_len=T)
    save_hf_model(out_dir, model.state_dict(), model, save_overwrite=True)
    case = Case(out_dir)  # the export, read back as any HF directory (its own config's math)
    ids = np.random.default_rng(shape["data_seed"]).integers(
        0, shape["vocab_size"], size=(B, T), dtype=np.int64)
    labels = get_labels({"input_ids": torch.as_tensor(ids)}).numpy()
    out = {"case": case, "truth": None, "input_ids": ids, "labels": labels,
           "logits": logits_of(model, ids), "model": model}
    obj = train_batch(tm, case.pretrained, ids, labels)
    out.update(ce_loss=obj["ce_loss"], z_loss=obj["z_loss"], label_tokens=obj["label_tokens"],
               grads=obj["grads"])
    return out


def logits_of(model, input_ids):
    import torch
    model.eval()
    with torch.no_grad():
        return model(torch.as_tensor(input_ids, dtype=torch.long)).float().numpy()
