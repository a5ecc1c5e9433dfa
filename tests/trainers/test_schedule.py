import math

import pytest

from trainers.runtime.schedule import iteration_schedule, warm_start_schedule


@pytest.mark.parametrize("warmup,total", [(1, 1), (1, 10), (5, 100), (239, 4777)])
def test_the_warm_start_schedule_is_the_published_checkpoint_s_to_the_last_bit(warmup, total):
    """The formula the published checkpoint was made with, written out."""
    def made_with(s):
        cosine = 0.5 * (1 + math.cos(math.pi * min(1.0, (s + 1 - warmup) / max(1, total - warmup))))
        return min((s + 1) / warmup, cosine)

    factor = warm_start_schedule(warmup, total)
    assert all(factor(s) == made_with(s) for s in range(total + 2))


@pytest.mark.parametrize("kind,expected", [("constant", [0.5, 1.0, 1.0, 1.0, 1.0]),
                                           ("linear", [0.5, 1.0, 2 / 3, 1 / 3, 0.0]),
                                           ("cosine", [0.5, 1.0, 0.75, 0.25, 0.0])])
def test_the_iteration_schedule_warms_up_then_decays_to_zero_at_max_steps(kind, expected):
    factor = iteration_schedule(kind, warmup_steps=1, max_steps=4)
    assert [factor(i) for i in range(5)] == pytest.approx(expected)
