"""Where training samples fall (FKStream's samplings) and the learning-rate schedules, with real numbers."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import robot_by_id

from hik_sim.learning.data import FKStream
from hik_sim.errors import HikError
from hik_sim.kinematics.chain import Chain
from hik_sim.learning.train import TrainConfig, _learning_rate, train


def _stream(sampling: str, batch: int = 4000, **options) -> tuple[Chain, FKStream]:  # noqa: ANN003
    chain = Chain(robot_by_id("irb120"))
    return chain, FKStream(chain, batch, torch.Generator().manual_seed(3), dtype=torch.float64, sampling=sampling, **options)


def _near_a_limit(chain: Chain, q: torch.Tensor, band: float) -> torch.Tensor:
    """(B, n) bool: each joint within ``band`` of its range from a limit."""
    lower, upper = chain.limits(q.dtype)
    depth = band * (upper - lower)
    return (q - lower <= depth) | (upper - q <= depth)


def test_uniform_sampling_draws_what_it_drew_before_samplings_existed() -> None:
    chain, stream = _stream("uniform", batch=64)
    q = chain.sample(64, torch.Generator().manual_seed(3), torch.float64)
    batch = next(stream)
    assert torch.equal(batch.q, q)
    assert torch.allclose(batch.pos, chain.fk(q).pos)


def test_limits_sampling_puts_its_share_next_to_the_limits_and_keeps_the_pose_exact() -> None:
    chain, stream = _stream("limits", tail_fraction=0.25, limit_band=0.02)
    batch = next(stream)
    lower, upper = chain.limits(torch.float64)
    assert torch.all(batch.q >= lower) and torch.all(batch.q <= upper)
    near = _near_a_limit(chain, batch.q, 0.02).double()
    # tail rows: each joint near a limit with probability ½ (+ the uniform draw's 4 %); the rest 4 %
    assert near[:1000].mean() == pytest.approx(0.5 + 0.5 * 0.04, abs=0.03)
    assert near[1000:].mean() == pytest.approx(0.04, abs=0.01)
    assert torch.allclose(batch.pos, chain.fk(batch.q).pos)


def test_hard_sampling_replays_the_worst_served_configurations_with_noise() -> None:
    chain, stream = _stream("hard", batch=400, tail_fraction=0.1, replay_noise=0.02)
    first = next(stream)
    error = torch.arange(400, dtype=torch.float64)  # the last 40 rows are the worst served
    stream.observe(first.q, error)
    second = next(stream)
    replayed, worst = second.q[:40], first.q[360:].flip(0)
    moved = (replayed - worst).abs()
    assert 0 < moved.max() < 0.15 and moved.mean() == pytest.approx(0.02 * math.sqrt(2 / math.pi), rel=0.3)
    lower, upper = chain.limits(torch.float64)
    assert torch.all(second.q >= lower) and torch.all(second.q <= upper)
    assert torch.allclose(second.pos, chain.fk(second.q).pos)
    fresh = second.q[40:]
    assert (fresh[:, None] - first.q[None]).abs().sum(-1).min() > 1e-6  # the rest is new


def test_samplings_refuse_bad_options() -> None:
    chain = Chain(robot_by_id("irb120"))
    with pytest.raises(HikError, match="samplings are: uniform, limits, hard"):
        FKStream(chain, 8, torch.Generator(), sampling="edges")
    with pytest.raises(HikError, match="tail_fraction"):
        FKStream(chain, 8, torch.Generator(), sampling="hard", tail_fraction=1.0)
    with pytest.raises(HikError, match="schedules are: cosine, constant"):
        TrainConfig(schedule="linear")
    with pytest.raises(HikError, match="samplings are"):
        TrainConfig(sampling="edges")


def test_constant_schedule_keeps_the_peak_rate_after_the_warm_up_and_cosine_decays() -> None:
    constant, cosine = TrainConfig(schedule="constant", lr=1e-3, warmup_steps=10), TrainConfig(lr=1e-3, warmup_steps=10)
    assert _learning_rate(constant, 4, 0.0) == _learning_rate(cosine, 4, 0.0) == pytest.approx(5e-4)
    assert _learning_rate(constant, 500, 0.9) == 1e-3
    assert _learning_rate(cosine, 500, 1.0) == pytest.approx(1e-3 * cosine.final_lr_fraction)


@pytest.mark.parametrize("sampling", ["limits", "hard"])
def test_a_tiny_network_learns_with_every_sampling_and_the_card_records_it(sampling: str) -> None:
    config = TrainConfig(model="mlp", steps=60, batch=128, lr=3e-3, warmup_steps=5, model_options=(("hidden", 64), ("layers", 2)),
                         eval_size=256, eval_every=30, normalizer_samples=5000, device="cpu", sampling=sampling)
    result = train(robot_by_id("irb120"), config, progress=False)
    assert result.history[-1]["pos_mean_mm"] < result.history[0]["pos_mean_mm"]
    assert result.card.config["sampling"] == sampling and result.card.config["tail_fraction"] == 0.25
    assert TrainConfig.from_json(result.card.config) == config
