"""The copying seq2seq of Snell et al. (single- and multi-head): structure, probe, heads."""

from __future__ import annotations

import torch

from attnverify.empirics import CopyTask, RunSpec, Seq2SeqConfig, build_model


def model_and_batch(**config):
    spec = RunSpec(task=CopyTask("subset", 12, 6), model=Seq2SeqConfig(hidden=16, **config),
                   dtype="float64")
    return build_model(spec), spec.task.sample(5, torch.Generator().manual_seed(0))


def test_no_input_feeding_and_decoder_starts_from_the_encoder():
    model, batch = model_and_batch()
    _, dec = model.states(batch)
    changed = {k: v.clone() for k, v in batch.items()}
    changed["decoder_input"][:, 3] = (changed["decoder_input"][:, 3] + 1) % 12
    _, dec2 = model.states(changed)
    assert torch.equal(dec[:, :3], dec2[:, :3]) and not torch.equal(dec[:, 3:], dec2[:, 3:])
    other = {k: v.clone() for k, v in batch.items()}
    other["source"][:, 0] = (other["source"][:, 0] + 1) % 12
    assert not torch.equal(model.states(other)[1][:, 0], dec[:, 0])  # s_0 sees the source
    assert model.decoder_embedding is model.embedding


def test_ktiw_probe_equals_one_hot_attention():
    """beta_{t,l} is the log-probability of y_t when attention is forced to position l."""
    model, batch = model_and_batch(heads=3, cell="gru", shared_embedding=False)
    beta = model.ktiw_probe(batch)  # (B, T, S)
    enc, dec = model.states(batch)
    for pos in (0, 2, 6):
        one_hot = enc[:, pos].unsqueeze(1).unsqueeze(2).expand(-1, dec.shape[1], 3, -1)
        logits = model.readout(dec, model.project(one_hot))
        expected = torch.log_softmax(logits, -1).gather(-1, batch["target"][..., None])[..., 0]
        torch.testing.assert_close(beta[:, :, pos], expected)


def test_identical_heads_equal_one_head():
    one, batch = model_and_batch(cell="gru", shared_embedding=False)
    many, _ = model_and_batch(heads=4, cell="gru", shared_embedding=False)
    state = one.state_dict()
    with torch.no_grad():
        for name, param in many.named_parameters():
            if name == "attn_lin.weight":
                param.copy_(state[name].repeat(4, 1))
            elif name == "attn_lin.bias":
                param.copy_(state[name].repeat(4))
            elif name.startswith("project_enc"):
                param.copy_(state[name].expand_as(param))
            else:
                param.copy_(state[name])
    logits_one, alpha_one = one(batch)
    logits_many, alpha_many = many(batch)
    torch.testing.assert_close(logits_many, logits_one)
    torch.testing.assert_close(alpha_many, alpha_one.expand_as(alpha_many))


def test_uniform_mode_metrics_sit_at_chance_for_attention():
    model, batch = model_and_batch(attention="uniform")
    m = model.metrics(batch)
    assert m["attn_entropy_ratio"] == 1.0 or abs(m["attn_entropy_ratio"] - 1.0) < 1e-12
    assert abs(m["gold_attention"] - 1 / 7) < 1e-12
