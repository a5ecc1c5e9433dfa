"""An agent env of the user's own, registered as docs/core-env-contract.md ("Register your game") says: Gymnasium's
checker accepts it, and ``play``, ``demo`` and ``openenv-serve`` take it as ``MODULE:ID`` (and the TextArena ids);
a game without an oracle says so in one line."""

from __future__ import annotations

import gzip
import inspect
import json
import os
import subprocess
import sys

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from agentgym_bench.adapters.openenv import check_env_ids
from agentgym_bench.agent.policies import oracle_reply
from agentgym_bench.envs.contract import check_game
from agentgym_bench.errors import UserError
from agentgym_bench.paths import published_checkpoint
from agentgym_bench.registration import check_env_id
from agentgym_bench.rollout.tokens import unknown_words
from tests.envs.test_contract import GuessGame

GUESS = ("import gymnasium as gym\n\nfrom agentgym_bench.spaces import text_space\n\n\n" + inspect.getsource(GuessGame)
         + '\n\ngym.register("AgentGuess-v0", entry_point="agentgym_bench.registration:make_agent_env",\n'
         '             kwargs={"game": "guess:GuessGame", "max_turns": 6, "max_actions_per_turn": 1})\n')
"""The module ``guess.py`` of docs/core-env-contract.md's example: tests/envs/test_contract.py's game, registered."""

WORDS = '''
class WordGuessGame(GuessGame):
    WORDS = ["uno", "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho"]  # words the default model lacks

    def info(self):
        return {**super().info(), "valid_actions": list(self.WORDS)}

    def step(self, action):
        word = str(action).strip().lower()
        return super().step(str(self.WORDS.index(word) + 1) if word in self.WORDS else None)

    def oracle_turn(self, turns_left, actions_left, max_actions_per_turn):
        return [self.WORDS[self.secret - 1]]


gym.register("AgentWordGuess-v0", entry_point="agentgym_bench.registration:make_agent_env",
             kwargs={"game": "guess:WordGuessGame", "max_turns": 6, "max_actions_per_turn": 1})
'''
"""The same game with action words no model of ours was built with (appended to ``guess.py``)."""


def command(tmp_path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "agentgym_bench.cli", *args], input=stdin, capture_output=True,
                          text=True, timeout=300, env=env, cwd=tmp_path)


@pytest.fixture
def guess(tmp_path, monkeypatch):
    (tmp_path / "guess.py").write_text(GUESS + WORDS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_a_registered_game_of_ones_own_is_an_agent_env_the_commands_take(guess):
    assert check_env_id("guess:AgentGuess-v0") == "AgentGuess-v0"  # imports guess, which registers the id
    check_env(gym.make("AgentGuess-v0").unwrapped)  # Gymnasium's checker, as it calls spec.make(render_mode=...)
    check_game(gym.make("AgentGuess-v0"))  # and the contract's own rules
    assert check_env_ids(["guess:AgentGuess-v0"]) == ["AgentGuess-v0"]  # openenv-serve's list
    played = command(guess, "play", "guess:AgentGuess-v0", stdin="4\n")
    assert played.returncode == 0, played.stderr
    assert "executed ['4']" in played.stdout and "actions: 1, 2, 3, 4, 5, 6, 7, 8" in played.stdout
    demo = command(guess, "demo", "--env", "guess:AgentGuess-v0", "--episodes", "3")
    assert demo.returncode == 0, demo.stderr
    assert any(line.split()[:3] == ["AgentGuess-v0", "oracle", "1.000"] for line in demo.stdout.splitlines())


class NoSeedGuess(GuessGame):
    def reset(self):  # the newcomer's signature
        return super().reset()


def test_wrong_ids_are_one_line(guess):
    if "AgentNoSeedGuess-v0" not in gym.registry:
        gym.register("AgentNoSeedGuess-v0", entry_point="agentgym_bench.registration:make_agent_env",
                     kwargs={"game": f"{__name__}:NoSeedGuess", "max_turns": 6, "max_actions_per_turn": 1})
    for env_id, message in [("nosuchmodule:AgentGuess-v0", "cannot import 'nosuchmodule'"),
                            ("CartPole-v1", "is registered but is not an agent env"),
                            ("guess:AgentGues-v0", "unknown env id 'AgentGues-v0': did you mean AgentGuess-v0?"),
                            ("AgentNoSeedGuess-v0", r"reset\(seed=0\) failed: TypeError: .*check_game names")]:
        with pytest.raises(UserError, match=message):
            check_env_id(env_id)


def test_textarena_ids_are_agent_ids_and_an_oracle_less_game_says_so():
    pytest.importorskip("textarena")
    env_id = "AgentTextArena/GuessTheNumber-v0"
    assert check_env_id(env_id) == env_id
    env = gym.make(env_id)
    env.reset(seed=0)
    with pytest.raises(UserError, match=r"AgentTextArena/GuessTheNumber-v0: its game \(TextArenaGame\) has no oracle"):
        oracle_reply(env)


def test_a_trainer_config_and_a_suite_name_an_env_of_ones_own_as_module_colon_id(guess, tmp_path):
    """``MODULE:ID`` in a config's tags and a suite's ``env_id``: checked by importing MODULE, and every process that
    makes the env imports it itself (here ``eval``, a fresh process, finds guess.py only by the id)."""
    from trainers.rl.config import ConfigError, config_from_dict  # noqa: PLC0415 - brings the trainer's modules

    own = "guess:AgentGuess-v0"
    manager = {"tags": [own], "num_groups_partition": [1], "num_env_groups": 1, "group_size": 2}
    sizes = {"rollout_batch_size": 2, "val_batch_size": 1, "ppo_mini_batch_size": 2, "micro_batch_size": 2}
    config = config_from_dict({**sizes, "train_env_manager": manager, "val_env_manager": {**manager, "group_size": 1}})
    assert config.train_env_manager.tags == [own]
    with pytest.raises(ConfigError, match=r"'AgentGues-v0' is not a registered env id; .*name it MODULE:ID"):
        config_from_dict({**sizes, "train_env_manager": {**manager, "tags": ["AgentGues-v0"]}})
    with pytest.raises(ConfigError, match="cannot import 'nosuch'"):
        config_from_dict({**sizes, "train_env_manager": {**manager, "tags": ["nosuch:AgentGuess-v0"]}})
    suite = {"name": "guess-test", "version": 1, "split": "test", "seed_start": 2_000_000_000,
             "entries": [{"name": "guess", "env_id": own, "prompts": ["compact"], "episodes": 3,
                          "oracle_success": 1.0}]}
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    played = command(tmp_path, "eval", "--policy", "oracle", "--suite", "suite.json", "--out", "r.json.gz")
    assert played.returncode == 0, played.stderr
    assert json.loads(gzip.decompress((tmp_path / "r.json.gz").read_bytes()))["entries"][0]["env_id"] == own


def test_action_words_the_model_cannot_write_are_warned_of_and_init_model_env_adds_them(guess, tmp_path, capsys):
    from transformers import AutoTokenizer  # noqa: PLC0415 - brings torch

    from trainers.rl.config import config_from_dict  # noqa: PLC0415
    from trainers.rl.models import warn_unwritable_actions  # noqa: PLC0415
    from trainers.sft.sft_config import SFTConfig  # noqa: PLC0415
    from trainers.sft.warmstart import demonstration_rows  # noqa: PLC0415

    own = "guess:AgentWordGuess-v0"
    check_game(gym.make(own))
    published = AutoTokenizer.from_pretrained(published_checkpoint(os.path.dirname(__file__)))
    manager = {"tags": [own], "num_groups_partition": [1], "num_env_groups": 1, "group_size": 2}
    config = config_from_dict({"rollout_batch_size": 2, "val_batch_size": 1, "ppo_mini_batch_size": 2,
                               "micro_batch_size": 2, "train_env_manager": manager,
                               "val_env_manager": {**manager, "group_size": 1}})
    warn_unwritable_actions(config, published)
    assert ("train: warning: the training envs' actions hold 8 word(s) the model's tokenizer does not know ('uno', "
            in capsys.readouterr().err)
    sft = SFTConfig(output=str(tmp_path / "ws"), envs=(own,), episodes=4, history=0)
    demonstration_rows(sft, published)
    assert "warmstart: warning: the demonstrations' replies hold" in capsys.readouterr().err
    built = command(guess, "init-model", "--path", "m", "--layers", "1", "--width", "32", "--heads", "2", "--env", own)
    assert built.returncode == 0, built.stderr
    mine = AutoTokenizer.from_pretrained(tmp_path / "m")
    assert unknown_words(mine, ["<answer>uno</answer>", "ocho"]) == []
    assert unknown_words(published, ["<answer>Uno</answer>", "ocho"]) == ["Uno", "ocho"]
    warn_unwritable_actions(config, mine)
    assert capsys.readouterr().err == ""


def test_an_argument_both_the_game_and_the_wrapper_take_is_refused_not_guessed(monkeypatch):
    """registration's rule: ``gym.make`` routes each keyword to whichever of the game and the wrapper takes it, and
    one that both take (here a game of one's own with ``max_turns``) is an error naming it, not sent to both."""
    from agentgym_bench.registration import UnknownArgumentError, make_agent_env

    class TurnsGuess(GuessGame):
        def __init__(self, render_mode=None, max_turns=99):
            super().__init__(render_mode=render_mode)

    monkeypatch.setattr(sys.modules[__name__], "TurnsGuess", TurnsGuess, raising=False)
    with pytest.raises(UnknownArgumentError, match=r"\['max_turns'\] are taken by both game TurnsGuess and the agent"):
        make_agent_env(game=f"{__name__}:TurnsGuess", max_turns=3)
    assert make_agent_env(game=f"{__name__}:TurnsGuess", max_actions_per_turn=1).max_actions_per_turn == 1
