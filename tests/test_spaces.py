"""agentgym_bench.spaces: our Text spaces stay gymnasium Text, and their shared memory (what
``AsyncVectorEnv(shared_memory=True)`` uses) round-trips every character of the charset at every length."""

import copy
import multiprocessing
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.spaces.utils import flatten
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

from agentgym_bench.spaces import CHARSET, AgentText, SharedTextBatch, text_space

MAX = 400


def test_our_space_is_an_honest_gymnasium_text_space():
    space = text_space(MAX)
    assert isinstance(space, spaces.Text) and isinstance(space, AgentText)
    assert space == spaces.Text(max_length=MAX, min_length=0, charset=CHARSET)
    assert space.contains("√\n0") and not space.contains("é") and space.contains(space.sample())
    assert pickle.loads(pickle.dumps(space)) == space and type(copy.deepcopy(space)) is AgentText


def test_every_character_round_trips_at_every_length_and_a_shorter_text_leaves_nothing_behind():
    space = text_space(MAX)
    assert len(CHARSET) < MAX and "\n" in CHARSET and "√" in CHARSET and CHARSET[0] == "0"
    long_text = (CHARSET * 4)[:MAX]  # every character, several times, exactly max_length
    values = [long_text, long_text[:-1], CHARSET[::-1], "", "0", "√" * MAX, "line 1\nline 2\n\t√ 0 #"]
    memory = create_shared_memory(space, n=2, ctx=multiprocessing)
    batch = read_from_shared_memory(space, memory, n=2)  # read once, like AsyncVectorEnv, then written many times
    assert isinstance(batch, SharedTextBatch) and len(batch) == 2
    for value in values:
        write_to_shared_memory(space, 1, value, memory)
        assert batch[1] == value
        # Gymnasium's own encoding of a Text value: each character's index in the charset, padded
        row = np.frombuffer(memory.get_obj(), dtype=np.int32).reshape(2, MAX)[1]
        assert np.array_equal(row, flatten(space, value))
    write_to_shared_memory(space, 0, "a\nb", memory)
    assert tuple(batch) == ("a\nb", values[-1]) and batch == ("a\nb", values[-1])


def test_a_copy_is_a_snapshot_and_the_batch_itself_is_live():
    space = text_space(16)
    memory = create_shared_memory(space, n=2, ctx=multiprocessing)
    batch = read_from_shared_memory(space, memory, n=2)
    for i, value in enumerate(["first", "√"]):
        write_to_shared_memory(space, i, value, memory)
    snapshots = [copy.deepcopy(batch), copy.copy(batch), pickle.loads(pickle.dumps(batch)), batch[:]]
    write_to_shared_memory(space, 0, "second", memory)
    assert all(type(s) is tuple and s == ("first", "√") for s in snapshots)
    assert batch == ("second", "√") and list(batch) == ["second", "√"] and batch[-1] == "√"


@pytest.mark.parametrize("value, message", [("x" * 17, "at most 16"), ("é", "outside its space's charset")])
def test_writing_a_value_outside_the_space_is_a_clear_error(value, message):
    space = text_space(16)
    memory = create_shared_memory(space, n=1, ctx=multiprocessing)
    with pytest.raises(ValueError, match=message):
        write_to_shared_memory(space, 0, value, memory)


class CharsetEcho(gym.Env):
    """Observations made of the whole charset, up to exactly max_length; ``dict_obs`` nests them in a Dict."""

    def __init__(self, dict_obs=False):
        self.dict_obs = dict_obs
        self.observation_space = spaces.Dict({"text": text_space(MAX)}) if dict_obs else text_space(MAX)
        self.action_space = text_space(8)

    def _obs(self, shift):
        text = (CHARSET * 5)[shift:shift + MAX - shift % 3]  # lengths MAX, MAX-1, MAX-2
        return {"text": text} if self.dict_obs else text

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.shift = int(seed or 0)
        return self._obs(self.shift), {}

    def step(self, action):
        self.shift += 1
        return self._obs(self.shift), 0.0, False, False, {}


@pytest.mark.parametrize("dict_obs", [False, True])
def test_async_vector_env_carries_full_charset_observations_near_max_length(dict_obs):
    envs = gym.vector.AsyncVectorEnv([lambda: CharsetEcho(dict_obs)] * 2)
    single = CharsetEcho(dict_obs)
    try:
        got = [envs.reset(seed=[0, 7])[0]] + [envs.step(("a", "b"))[0] for _ in range(3)]
        for k, observations in enumerate(got):
            expected = [single._obs(seed + k) for seed in (0, 7)]
            texts, expected = (observations["text"], [e["text"] for e in expected]) if dict_obs else \
                (observations, expected)
            assert type(texts) is tuple and texts == tuple(expected)
            assert len(texts[0]) >= MAX - 2 and set(CHARSET) <= set(texts[0])
    finally:
        envs.close()
