"""OLMo-core's Olmo 3 training step under FSDP `param_dtype: bfloat16, reduce_dtype: float32`
(torch 2.13 CPU), written out as an explicit forward and an explicit backward in float32
tensors with `r(x) = x.bfloat16().float()` (round to nearest even) at every point where torch
holds a bf16 tensor. No autograd: every gradient is a formula below, in the order and with the
roundings torch's autograd and kernels use. torch is used only for float32 elementwise ops and
for the loss's float32 reductions (whose summation order is torch's own kernel's); every GEMM
is summed explicitly in the order the CPU kernel sums (mm: oneDNN bf16, mm_seq: ATen fallback).

    out = train_step(weights, input_ids, n_micro=2, z_loss_multiplier=1e-5)
    # weights: {OLMo-core parameter name: float32 tensor}; input_ids (B, T) int64
    # out: {"ce", "z": float32 scalars as the trainer records them,
    #       "grads": {name: float32} as FSDP leaves them (fp32 sum of bf16 micro-batch grads)}

The model is the fixture's: reordered-norm blocks (h = x + norm(attn(x)); out = h + norm(mlp(h))),
QK-norm over the flattened heads, RoPE (theta 500000, full precision), GQA, sliding windows
32/32/32/full, SwiGLU, untied LM head, z-loss. Window sizes come from `windows`.

docs/bf16-fsdp-spec.md states every rounding point with its evidence; this file is its
executable form for the CPU kind with AVX-512 (`compute.torch_cpu: avx512`, sections 1 to 8). The
AVX2 kind's orders (section 9) are not written out here: replica's C++ follows them and is checked
against torch's own ops directly (tests/ops/torch_sdpa_test.cc, torch_linear_test.cc).
"""
import numpy as np
import torch

torch.set_num_threads(1)

F32 = torch.float32


def r(x):
    """Round float32 values to the nearest bfloat16 (ties to even), kept in float32."""
    return x.to(torch.bfloat16).to(F32)


# --------------------------------------------------------------------------------------------
# float32 helpers that reproduce the CPU kernels' own arithmetic

def _fma32(a, b, c):
    """fmadd in float32: a*b is exact in float64 (24+24 bits), one rounding of the sum."""
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)


def fexp_u20(x):
    """ATen's fexp_u20 (AVX512, Malossi et al.): exp(x) = 2^(x log2 e) with a degree-3 polynomial
    correction of the fraction, assembled in the exponent bits; used by the flash-attention
    forward for reduced-precision inputs (exp(s - max) that is then rounded to bf16)."""
    x = x.detach().cpu().numpy().astype(np.float32)
    f32 = lambda bits: np.array([bits], dtype=np.uint32).view(np.float32)[0]
    c0, c1, c2, c3 = (np.float32(v) for v in (0.00010703434948458272, 0.30354260500649682,
                                              -0.22433836478672356, -0.079204240219773236))
    log2e = f32(0x3fb8aa3b)
    lo, hi = f32(0xc2aeac50), f32(0x42b17218)
    a = np.float32(2.0 ** 23)
    b = np.float32(2.0 ** 23 * 127.0)
    under, over = x < lo, x > hi
    with np.errstate(invalid="ignore", over="ignore"):
        src = (x * log2e).astype(np.float32)
        frac = (src - np.floor(src)).astype(np.float32)
        res = _fma32(frac, np.full_like(frac, c3), np.full_like(frac, c2))
        res = _fma32(frac, res, np.full_like(frac, c1))
        res = _fma32(frac, res, np.full_like(frac, c0))
        src = (src - res).astype(np.float32)
        tmp = _fma32(np.full_like(src, a), src, np.full_like(src, b))
        tmp = np.where(np.isfinite(tmp), tmp, 0).astype(np.float32)
        i = np.trunc(tmp).astype(np.int64).astype(np.int32)
    i = np.where(under, 0, i)
    i = np.where(over, 0x7F800000, i).astype(np.int32)
    return torch.from_numpy(i.view(np.float32).copy())


def lane_sum16(x):
    """vec_reduce_all(+) of one 16-lane AVX512 float vector: lanes i and i^8, then i^4, i^2, i^1."""
    assert x.shape[-1] == 16
    x = x[..., :8] + x[..., 8:]
    x = x[..., :4] + x[..., 4:]
    x = x[..., :2] + x[..., 2:]
    return x[..., 0] + x[..., 1]


def seq_sum(x):
    """Sum over the last dim, one float32 accumulator, in index order."""
    acc = x[..., 0].clone()
    for j in range(1, x.shape[-1]):
        acc = acc + x[..., j]
    return acc


def vec_row_sum(x):
    """A row sum as the flash kernel's _exp_reduce_sum_fusion_kernel forms it: 16-lane vector
    accumulator over consecutive 16-element chunks, then lane_sum16; the tail (n % 16) added
    scalar-wise after."""
    n = x.shape[-1]
    full = n - n % 16
    acc = None
    for c in range(0, full, 16):
        acc = x[..., c:c + 16].clone() if acc is None else acc + x[..., c:c + 16]
    s = lane_sum16(acc) if acc is not None else torch.zeros(x.shape[:-1], dtype=F32)
    for c in range(full, n):
        s = s + x[..., c]
    return s


def mm_seq(a, b, init=None):
    """a @ b with one float32 accumulator per output, products added in plain k order, starting
    from `init` (ATen's fallback GEMM with a float32 C and beta = 1 adds into C directly)."""
    acc = torch.zeros(a.shape[:-1] + b.shape[-1:], dtype=F32) if init is None else init.clone()
    for k in range(a.shape[-1]):
        acc = acc + a[..., :, k:k + 1] * b[..., k:k + 1, :]
    return acc


def mm(a, b, init=None):
    """a @ b for operands holding bf16 values, summed as the CPU's bf16 GEMM (oneDNN, AVX512-BF16
    vdpbf16ps) sums: one float32 accumulator per output, the products taken in k order
    1, 0, 3, 2, 5, 4, ... (each pair odd element first), each add rounded to float32. `init`
    (the GEMM's C for beta = 1) starts the accumulator."""
    K = a.shape[-1]
    acc = torch.zeros(a.shape[:-1] + b.shape[-1:], dtype=F32) if init is None else init.clone()
    for k in range(K):
        kk = k ^ 1 if (k ^ 1) < K else k
        acc = acc + a[..., :, kk:kk + 1] * b[..., kk:kk + 1, :]
    return acc


# --------------------------------------------------------------------------------------------
# RMSNorm (olmo_core/nn/layer_norm.py RMSNorm.forward, full_precision): x bf16 -> fp32 math ->
# bf16. Its autograd backward, op by op, in fp32; the input grad is rounded once (ToCopyBackward).

def rms_fwd(x, w, eps=1e-6):
    var = x.pow(2).mean(-1, keepdim=True)
    rs = torch.rsqrt(var + eps)
    y = x * rs
    out = r(w * y)
    return out, (x, rs, y)


def rms_bwd(g, w, saved):
    x, rs, y = saved
    n = x.shape[-1]
    gw = r((g * y).sum(dim=tuple(range(g.dim() - 1))))
    gy = g * w
    gx_a = gy * rs
    grs = (gy * x).sum(-1, keepdim=True)
    gt = (-0.5 * grs) * (rs * rs * rs)
    gx2 = gt.expand_as(x) / n
    gx_b = gx2 * (2.0 * x)
    return r(gx_a + gx_b), gw


# --------------------------------------------------------------------------------------------
# RoPE (olmo_core/nn/rope.py RotaryEmbedding, full_precision=True): q.float(), rotate in fp32,
# .type_as(q) -> one bf16 rounding. Backward: fp32, one rounding at q.float()'s ToCopyBackward.

def rope_tables(T, head_dim, theta=500000):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=F32) / head_dim))
    seq = torch.arange(T, dtype=F32)
    freqs = torch.einsum("i , j -> i j", seq, inv_freq)
    pos = torch.cat((freqs, freqs), dim=-1)
    return pos.sin(), pos.cos()


def _rot(t):
    h = t.shape[-1] // 2
    return torch.cat((-t[..., h:], t[..., :h]), dim=-1)


def rope_fwd(t, sin, cos):
    # t (B, T, H, D); sin/cos (T, D) broadcast as [None, :, None, :]
    s, c = sin[None, :, None, :], cos[None, :, None, :]
    return r((t * c) + (_rot(t) * s))


def rope_bwd(g, sin, cos):
    s, c = sin[None, :, None, :], cos[None, :, None, :]
    a = g * c
    b = g * s
    h = g.shape[-1] // 2
    b_un = torch.cat((b[..., h:], -b[..., :h]), dim=-1)   # rotate_half's transpose
    return r(a + b_un)


# --------------------------------------------------------------------------------------------
# scaled_dot_product_attention -> aten::_scaled_dot_product_flash_attention_for_cpu (bf16),
# aten/src/ATen/native/cpu/FlashAttentionKernel.cpp. q, k, v (B, H, T, D) bf16 values; mask
# (T, T) bool or None (is_causal). Blocks: qSplitSize = 32 (T < 192), 64 (T < 768), else 256;
# kvSplitSize = 512 (min with T).

EXP_FWD = fexp_u20


def exp_scalar(x):
    """std::exp on a float (glibc expf, correctly rounded): exp in float64, rounded once."""
    return torch.exp(x.double()).float()


def split_sizes(T, q_len_for_split=None):
    n = T if q_len_for_split is None else q_len_for_split
    q_split = 256 if n >= 768 else (64 if n >= 192 else 32)
    return min(q_split, T), min(512, T)


BWD_SPLIT_LEN = None     # the length the backward's block choice reads (None: T)


def _scores(q, k, scale, allowed):
    s = mm_seq(q, k.transpose(-1, -2)) * scale
    return s.masked_fill(~allowed, float("-inf"))


def flash_fwd(q, k, v, allowed, scale, kv_split=None):
    B, H, T, D = q.shape
    kv_split = kv_split or split_sizes(T)[1]
    s = _scores(q, k, scale, allowed)                      # fp32 (B, H, T, T)
    m_run = torch.full((B, H, T), float("-inf"), dtype=F32)
    l_run = torch.zeros((B, H, T), dtype=F32)
    dst = torch.zeros((B, H, T, D), dtype=F32)
    for n in range(0, T, kv_split):
        blk = s[..., n:n + kv_split]
        m_new = torch.maximum(m_run, blk.amax(-1))
        dead = torch.isinf(m_new) & (m_new < 0)             # row fully masked so far: p = 0
        m_safe = torch.where(dead, torch.zeros_like(m_new), m_new)
        p = EXP_FWD(blk - m_safe[..., None]).reshape(blk.shape)
        p = torch.where(dead[..., None], torch.zeros_like(p), p)
        p_sum = vec_row_sum(p)
        exp_tmp = torch.where(dead, torch.ones_like(m_new), exp_scalar(m_run - m_safe))
        l_run = p_sum + exp_tmp * l_run
        if n > 0:
            dst = dst * exp_tmp[..., None]
        dst = mm_seq(r(p), v[..., n:n + kv_split, :]) + (dst if n > 0 else 0.0)
        m_run = m_new
    recip = 1.0 / l_run
    out = r(dst * recip[..., None])
    lse = m_run + torch.log(l_run)
    return out, lse


def flash_bwd(do, q, k, v, out, lse, allowed, scale):
    B, H, T, D = q.shape
    q_split, kv_split = split_sizes(T, BWD_SPLIT_LEN)
    dsum = seq_sum(do * out)
    gq = torch.zeros_like(q)
    gk = torch.zeros_like(k)
    gv = torch.zeros_like(v)
    for m in range(0, T, q_split):
        qs = slice(m, m + q_split)
        for n in range(0, T, kv_split):
            ks = slice(n, n + kv_split)
            a = mm_seq(q[..., qs, :], k[..., ks, :].transpose(-1, -2)) * scale
            a = a.masked_fill(~allowed[qs, ks], float("-inf"))
            p = torch.exp(a - lse[..., qs, None])
            gv[..., ks, :] = r(gv[..., ks, :] + mm(r(p).transpose(-1, -2), do[..., qs, :]))
            dp = mm_seq(do[..., qs, :], v[..., ks, :].transpose(-1, -2))
            ds = r(p * (dp - dsum[..., qs, None]))
            gq[..., qs, :] = r(gq[..., qs, :] + scale * mm(ds, k[..., ks, :]))
            gk[..., ks, :] = r(gk[..., ks, :] + scale * mm(ds.transpose(-1, -2), q[..., qs, :]))
    return gq, gk, gv


def window_mask(T, window):
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    allowed = j <= i
    if window is not None:
        allowed = allowed & (j >= i - (window - 1))
    return allowed


# --------------------------------------------------------------------------------------------
# SwiGLU pieces: silu forward/backward as ATen's CPU kernels compute them in float for bf16.

def silu_fwd(x):
    return r(x / (1.0 + torch.exp(-x)))


def silu_bwd(g, x):
    sig = 1.0 / (1.0 + torch.exp(-x))
    return r(g * sig * (1.0 + x * (1.0 - sig)))


def lin(x, w):
    """bf16 linear: fp32 accumulation of bf16 products, one rounding."""
    return r(mm(x, w.t()))


def lin_bwd(g, x, w):
    """y = x W^T: dX = r(g W), dW = r(g^T x) over all tokens of the micro-batch."""
    n_in = x.shape[-1]
    gx = r(mm(g, w))
    gw = r(mm(g.reshape(-1, g.shape[-1]).t(), x.reshape(-1, n_in)))
    return gx, gw


# --------------------------------------------------------------------------------------------

N_HEADS, N_KV, HEAD_DIM = 8, 2, 16


def block_fwd(x, P, pre, sin, cos, allowed):
    B, T, C = x.shape
    S = {"x": x}
    q = lin(x, P[pre + "attention.w_q.weight"])
    k = lin(x, P[pre + "attention.w_k.weight"])
    v = lin(x, P[pre + "attention.w_v.weight"])
    qn, S["qn"] = rms_fwd(q, P[pre + "attention.q_norm.weight"])
    kn, S["kn"] = rms_fwd(k, P[pre + "attention.k_norm.weight"])
    qh = qn.view(B, T, N_HEADS, HEAD_DIM)
    kh = kn.view(B, T, N_KV, HEAD_DIM)
    vh = v.view(B, T, N_KV, HEAD_DIM)
    qr = rope_fwd(qh, sin, cos)
    kr = rope_fwd(kh, sin, cos)
    rep = N_HEADS // N_KV
    kx = kr.unsqueeze(3).expand(B, T, N_KV, rep, HEAD_DIM).reshape(B, T, N_HEADS, HEAD_DIM)
    vx = vh.unsqueeze(3).expand(B, T, N_KV, rep, HEAD_DIM).reshape(B, T, N_HEADS, HEAD_DIM)
    qt, kt, vt = qr.transpose(1, 2), kx.transpose(1, 2), vx.transpose(1, 2)
    scale = HEAD_DIM ** -0.5
    att, lse = flash_fwd(qt, kt, vt, allowed, scale)
    att2 = att.transpose(1, 2).reshape(B, T, C)
    o = lin(att2, P[pre + "attention.w_out.weight"])
    an, S["an"] = rms_fwd(o, P[pre + "attention_norm.weight"])
    h = r(x + an)
    a1 = lin(h, P[pre + "feed_forward.w1.weight"])
    a3 = lin(h, P[pre + "feed_forward.w3.weight"])
    s = silu_fwd(a1)
    mm = r(s * a3)
    f = lin(mm, P[pre + "feed_forward.w2.weight"])
    fn, S["fn"] = rms_fwd(f, P[pre + "feed_forward_norm.weight"])
    out = r(h + fn)
    S.update(q=q, k=k, v=v, qt=qt, kt=kt, vt=vt, att=att, lse=lse, att2=att2, o=o, h=h,
             a1=a1, a3=a3, s=s, mm=mm, f=f, allowed=allowed, scale=scale)
    return out, S


def block_bwd(g_out, P, pre, S, sin, cos, G, x_order):
    B, T, C = g_out.shape
    # out = h + fn
    g_fn = g_out
    g_f, G[pre + "feed_forward_norm.weight"] = rms_bwd(g_fn, P[pre + "feed_forward_norm.weight"], S["fn"])
    g_mm, G[pre + "feed_forward.w2.weight"] = lin_bwd(g_f, S["mm"], P[pre + "feed_forward.w2.weight"])
    g_s = r(g_mm * S["a3"])
    g_a3 = r(g_mm * S["s"])
    g_a1 = silu_bwd(g_s, S["a1"])
    g_h3, G[pre + "feed_forward.w3.weight"] = lin_bwd(g_a3, S["h"], P[pre + "feed_forward.w3.weight"])
    g_h1, G[pre + "feed_forward.w1.weight"] = lin_bwd(g_a1, S["h"], P[pre + "feed_forward.w1.weight"])
    # h receives: the residual (first), w3 (second), w1 (third)
    g_h = r(r(g_out + g_h3) + g_h1)
    # h = x + an
    g_o, G[pre + "attention_norm.weight"] = rms_bwd(g_h, P[pre + "attention_norm.weight"], S["an"])
    g_att2, G[pre + "attention.w_out.weight"] = lin_bwd(g_o, S["att2"], P[pre + "attention.w_out.weight"])
    g_att = g_att2.view(B, T, N_HEADS, HEAD_DIM).transpose(1, 2)
    gq, gk, gv = flash_bwd(g_att, S["qt"], S["kt"], S["vt"], S["att"], S["lse"], S["allowed"], S["scale"])
    gq = gq.transpose(1, 2)
    rep = N_HEADS // N_KV
    gk = r(gk.transpose(1, 2).reshape(B, T, N_KV, rep, HEAD_DIM).sum(3))
    gv = r(gv.transpose(1, 2).reshape(B, T, N_KV, rep, HEAD_DIM).sum(3))
    gqn = rope_bwd(gq, sin, cos).reshape(B, T, -1)
    gkn = rope_bwd(gk, sin, cos).reshape(B, T, -1)
    g_q, G[pre + "attention.q_norm.weight"] = rms_bwd(gqn, P[pre + "attention.q_norm.weight"], S["qn"])
    g_k, G[pre + "attention.k_norm.weight"] = rms_bwd(gkn, P[pre + "attention.k_norm.weight"], S["kn"])
    g_v = gv.reshape(B, T, -1)
    x = S["x"]
    gxq, G[pre + "attention.w_q.weight"] = lin_bwd(g_q, x, P[pre + "attention.w_q.weight"])
    gxk, G[pre + "attention.w_k.weight"] = lin_bwd(g_k, x, P[pre + "attention.w_k.weight"])
    gxv, G[pre + "attention.w_v.weight"] = lin_bwd(g_v, x, P[pre + "attention.w_v.weight"])
    parts = {"res": g_h, "q": gxq, "k": gxk, "v": gxv}
    acc = parts[x_order[0]]
    for name in x_order[1:]:
        acc = r(acc + parts[name])
    return acc


X_ORDER = ("res", "v", "k", "q")


def micro_batch(P, ids, div, zmul, windows, x_order=X_ORDER):
    """Forward and backward of one micro-batch. Returns (ce_sum/div, z/div, bf16 grads)."""
    B, T = ids.shape
    sin, cos = rope_tables(T, HEAD_DIM)
    labels = torch.cat([ids[:, 1:], torch.full((B, 1), -100, dtype=ids.dtype)], 1)
    x = P["embeddings.weight"][ids]
    saves = []
    for i, w in enumerate(windows):
        allowed = window_mask(T, w)
        x, S = block_fwd(x, P, f"blocks.{i}.", sin, cos, allowed)
        saves.append(S)
    hn, Sn = rms_fwd(x, P["lm_head.norm.weight"])
    logits = lin(hn, P["lm_head.w_out.weight"])
    V = logits.shape[-1]
    lg = logits.reshape(-1, V)
    lab = labels.reshape(-1)
    # olmo_core/nn/functional/cross_entropy_loss.py: logits.float(); F.cross_entropy(sum);
    # z_squared = logsumexp(-1)^2; z = mult * sum(z_squared * mask); (ce + z) / div
    logp = torch.log_softmax(lg, -1)
    ce_sum = torch.nn.functional.nll_loss(logp, lab, ignore_index=-100, reduction="sum")
    lse = lg.logsumexp(-1)
    mask = lab != -100
    z_sum = zmul * (lse.pow(2) * mask).sum()
    # backward (float32)
    gl = torch.tensor(1.0, dtype=F32) / div.to(F32)              # DivBackward
    g_nll = torch.zeros_like(lg)
    g_nll[mask.nonzero().squeeze(1), lab[mask]] = -gl             # NllLossBackward (sum)
    g_ce = g_nll - torch.exp(logp) * g_nll.sum(-1, keepdim=True)  # LogSoftmaxBackward
    g_zsq = (gl * zmul) * mask                                    # MulBackward (scalar, mask)
    g_lse = g_zsq * (2.0 * lse)                                   # PowBackward
    g_z = g_lse[:, None] * torch.exp(lg - lse[:, None])            # LogsumexpBackward
    g_logits = r(g_ce + g_z).reshape(B, T, V)                      # logits.float() backward
    G = {}
    g_hn, G["lm_head.w_out.weight"] = lin_bwd(g_logits, hn, P["lm_head.w_out.weight"])
    g, G["lm_head.norm.weight"] = rms_bwd(g_hn, P["lm_head.norm.weight"], Sn)
    for i in reversed(range(len(windows))):
        g = block_bwd(g, P, f"blocks.{i}.", saves[i], sin, cos, G, x_order)
    G["embeddings.weight"] = embedding_bwd(g, ids, P["embeddings.weight"].shape)
    return ce_sum / div.to(F32), z_sum / div.to(F32), G


def embedding_bwd(g, ids, shape):
    """embedding_dense_backward (CPU, bf16): index_add_ of the token rows in token order into a
    bf16 zero table, each add rounded to bf16."""
    gw = torch.zeros(shape, dtype=F32)
    flat = g.reshape(-1, shape[1])
    for t, idx in enumerate(ids.reshape(-1).tolist()):
        gw[idx] = r(gw[idx] + flat[t])
    return gw


def train_step(weights, input_ids, n_micro=2, z_loss_multiplier=1e-5,
               windows=(32, 32, 32, None), x_order=X_ORDER):
    """One OLMo-core train_batch: the batch split into n_micro micro-batches, loss divided by
    the batch's label count, FSDP's fp32 accumulation of each micro-batch's bf16 gradients."""
    P = {n: r(w.float()) for n, w in weights.items()}         # FSDP all-gather casts to bf16
    B, T = input_ids.shape
    div = torch.tensor(B * (T - 1))                           # labels != -100 in the batch
    per = B // n_micro
    ce = torch.tensor(0.0)
    z = torch.tensor(0.0)
    grads = {}
    for m in range(n_micro):
        ids = input_ids[m * per:(m + 1) * per]
        c, zz, G = micro_batch(P, ids, div, z_loss_multiplier, windows, x_order)
        ce = ce + c
        z = z + zz
        for n, g in G.items():
            grads[n] = g.clone() if n not in grads else grads[n] + g
    return {"ce": ce, "z": z, "grads": grads}
