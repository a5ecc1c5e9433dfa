"""A run in tool format: ``train_env_manager.env_kwargs.action_format: tool`` reaches every env of the run."""

import math

from tests.trainers.conftest import TINY_ENV_KWARGS, tiny_config_dict
from trainers.rl.config import config_from_dict
from trainers.rl.train import main

TOOL_KWARGS = {**TINY_ENV_KWARGS, "action_format": "tool"}


def test_the_action_format_of_env_kwargs_reaches_the_run(tiny_model, tmp_path):
    """The tiny model was warm-started on <answer> replies, so in tool format none of them parses: the format rate
    is 0 there and above 0 in the same run with <answer> tags; the update still runs and stays finite."""
    def run(env_kwargs, out):
        managers = {m: {"env_kwargs": env_kwargs} for m in ("train_env_manager", "val_env_manager")}
        config = tiny_config_dict(tiny_model, out, "starpo", max_steps=1, eval_steps=1, save_steps=1, **managers)
        return main(config_from_dict(config)).records[-1]

    tool, answer = run(TOOL_KWARGS, tmp_path / "tool"), run(TINY_ENV_KWARGS, tmp_path / "answer")
    assert tool["rollout/format_valid"] == 0 < answer["rollout/format_valid"]
    assert math.isfinite(tool["loss/policy"])
