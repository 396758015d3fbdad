"""Architectures for the end-to-end tests (issue 3 item 4): ResNet-18, a tiny
GPT-style decoder and a TransformerEncoderLayer with a linear head, each with
a seeded example batch, so PyTorch and dlc start from the same weights and data.

Each factory returns (model, x, y): x is the batch fed to the model's single
input, y the integer labels of the softmax cross-entropy over the last axis of
the model's output (shape = output shape without the last axis).
"""
import math

import torch
import torchvision
from torch import nn


def _dropout(p: float) -> nn.Module:
    """nn.Dropout(p) for p > 0, else nn.Identity: with p = 0 the modules (and
    so the exported graphs) are exactly those of the models before dropout was
    added, and a training-mode export has no Dropout node."""
    return nn.Dropout(p) if p > 0 else nn.Identity()


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention written with MatMul/Softmax and a
    lower-triangular mask (as in GPT-2); with dropout > 0, GPT-2's dropout on
    the attention probabilities and on the output projection."""

    def __init__(self, embed: int, heads: int, seq: int, dropout: float = 0.0,
                 additive_mask: bool = False):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(embed, 3 * embed)
        self.proj = nn.Linear(embed, embed)
        # additive_mask: a float buffer of 0 and -inf added to the scores,
        # as many models register it, instead of a 0/1 mask read through
        # masked_fill (the training recipes test it: issue 34 item 7).
        self.additive_mask = additive_mask
        mask = (torch.triu(torch.full((seq, seq), float("-inf")), 1) if additive_mask
                else torch.tril(torch.ones(seq, seq)))
        self.register_buffer("mask", mask.view(1, 1, seq, seq))
        self.attn_drop = _dropout(dropout)
        self.resid_drop = _dropout(dropout)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        if self.additive_mask:
            att = att + self.mask[:, :, :t, :t]
        else:
            att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        att = self.attn_drop(torch.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        return self.resid_drop(self.proj(y))


class DecoderBlock(nn.Module):
    """Pre-LayerNorm transformer decoder block with a GELU MLP (dropout, when
    > 0, on the MLP's output as in GPT-2)."""

    def __init__(self, embed: int, heads: int, seq: int, dropout: float = 0.0,
                 additive_mask: bool = False):
        super().__init__()
        self.ln1 = nn.LayerNorm(embed)
        self.attn = CausalSelfAttention(embed, heads, seq, dropout, additive_mask)
        self.ln2 = nn.LayerNorm(embed)
        self.fc = nn.Linear(embed, 4 * embed)
        self.fc_out = nn.Linear(4 * embed, embed)
        self.mlp_drop = _dropout(dropout)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp_drop(self.fc_out(nn.functional.gelu(self.fc(self.ln2(x)))))


class TinyGPT(nn.Module):
    """Token + position embeddings, decoder blocks, final LayerNorm and an
    untied linear head: [batch, seq] i64 tokens -> [batch, seq, vocab] logits.
    |dropout| (default 0: no Dropout modules at all) is the probability of
    GPT-2's dropouts: embeddings, attention probabilities, attention and MLP
    outputs."""

    def __init__(self, vocab=50, seq=8, embed=32, heads=2, layers=2, dropout=0.0,
                 additive_mask=False):
        super().__init__()
        self.tok = nn.Embedding(vocab, embed)
        self.pos = nn.Embedding(seq, embed)
        self.drop = _dropout(dropout)
        self.blocks = nn.ModuleList([DecoderBlock(embed, heads, seq, dropout, additive_mask)
                                     for _ in range(layers)])
        self.ln_f = nn.LayerNorm(embed)
        self.head = nn.Linear(embed, vocab, bias=False)

    def forward(self, idx):
        _, t = idx.shape
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.drop(self.tok(idx) + self.pos(pos))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


class EncoderClassifier(nn.Module):
    """torch.nn.TransformerEncoderLayer + a per-token linear head:
    [batch, seq, 32] -> [batch, seq, 10]."""

    def __init__(self):
        super().__init__()
        self.enc = nn.TransformerEncoderLayer(d_model=32, nhead=2, dim_feedforward=64,
                                              dropout=0.0, batch_first=True)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.enc(x))


def make_resnet18(batch):
    torch.manual_seed(10)
    model = torchvision.models.resnet18(num_classes=10)
    gen = torch.Generator().manual_seed(11)
    # Non-trivial running statistics, so that the eval-mode comparison
    # exercises them (the defaults are 0/1). The affine parameters keep their
    # defaults: random ones make 5 steps of training on 2 samples so
    # ill-conditioned that PyTorch's own fp32 and fp64 losses differ by >1e-3.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2, generator=gen)
                m.running_var.uniform_(0.5, 1.5, generator=gen)
    # 64x64 keeps 2x2 pixels per channel in layer4, so training-mode batch
    # norm statistics there are over 8 values, not 2.
    x = torch.rand(batch, 3, 64, 64, generator=gen)
    y = torch.randint(0, 10, (batch,), generator=gen)
    return model, x, y


def make_gpt(batch, seq=8, dropout=0.0, vocab=50, embed=32, heads=2, layers=2,
             additive_mask=False):
    """The tiny GPT and a seeded batch of |batch| x |seq| tokens and labels.
    The defaults are the model of the architecture tests; the rematerialization
    tests (test/e2e/remat.py, test/benchmarks/remat.py) ask for longer
    sequences, dropout and deeper or wider models, the training recipes an
    additive -inf mask buffer (CausalSelfAttention)."""
    torch.manual_seed(20)
    model = TinyGPT(vocab=vocab, seq=seq, embed=embed, heads=heads, layers=layers,
                    dropout=dropout, additive_mask=additive_mask)
    gen = torch.Generator().manual_seed(21)
    x = torch.randint(0, vocab, (batch, seq), generator=gen)
    y = torch.randint(0, vocab, (batch, seq), generator=gen)
    return model, x, y


def distinct_layer_norms(model, seed=24):
    """Gives every LayerNorm of |model| its own seeded weight and bias:
    torch.onnx.export merges initializers with equal values (every LayerNorm
    starts as ones and zeros), which would tie them into one parameter in a
    package but not in the PyTorch model."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.8, 1.2, generator=gen)
                m.bias.uniform_(-0.1, 0.1, generator=gen)


def make_transformer(batch):
    torch.manual_seed(30)
    model = EncoderClassifier()
    gen = torch.Generator().manual_seed(31)
    x = torch.randn(batch, 8, 32, generator=gen)
    y = torch.randint(0, 10, (batch, 8), generator=gen)
    return model, x, y


ARCHITECTURES = {"resnet18": make_resnet18, "gpt": make_gpt, "transformer": make_transformer}
