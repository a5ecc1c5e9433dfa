import re

import numpy as np

from agentgym_bench.envs.webshop.augment import CODE, copy_variants, instruction_words
from trainers.sft.sft_config import SFTConfig
from trainers.sft.warmstart import collect_demonstrations, copy_augmented


def first_hit_turns(episodes=3):
    config = SFTConfig(envs=("AgentWebShop-v0",), episodes=episodes, eval_episodes=1,
                             demonstrators={"AgentWebShop-v0": "first-hit"})
    return collect_demonstrations(config)


def test_search_variants_replace_the_instructions_words_in_the_page_and_the_reply_alike():
    turn = first_hit_turns(1)[0].turns[0]
    variants = copy_variants(turn.observation, turn.reply, 3, np.random.default_rng(0))
    assert len(variants) == 3 and len({v for v in variants}) == 3
    for observation, reply in variants:
        instruction = re.search(r"Instruction: \[SEP\] (.*?) \[SEP\] Search\n", observation).group(1)
        assert reply == f"<think></think><answer>search[{instruction}]</answer>"  # still a copy
        assert observation.replace(instruction, "") == turn.observation.replace(
            re.search(r"Instruction: \[SEP\] (.*?) \[SEP\] Search\n", turn.observation).group(1), "")
        assert set(instruction.replace(",", " ").replace(":", " ").split()) <= set(instruction_words())


def test_results_variants_replace_every_code_in_both_cases_and_the_reply_clicks_the_new_first_hit():
    turn = first_hit_turns(1)[0].turns[1]
    old = {c.lower() for c in CODE.findall(turn.observation)}
    observation, reply = copy_variants(turn.observation, turn.reply, 1, np.random.default_rng(1))[0]
    listed = re.findall(r"click\[(b0[a-z0-9]{8})\]", observation)
    shown = [c.lower() for c in re.findall(r"\bB0[A-Z0-9]{8}\b", observation)]
    assert len(listed) == len(old) == 10 and listed == shown and not set(listed) & old
    assert reply == f"<think></think><answer>click[{listed[0]}]</answer>"
    assert CODE.sub("", observation) == CODE.sub("", turn.observation)  # nothing else changed


def test_turns_that_copy_nothing_have_no_variants_and_the_augmentation_is_seeded():
    demos = first_hit_turns(3)
    buy = next(t for d in demos for t in d.turns if "buy now" in t.reply)
    assert copy_variants(buy.observation, buy.reply, 2, np.random.default_rng(0)) == []
    a, b = copy_augmented(demos, 2, seed=5), copy_augmented(demos, 2, seed=5)
    assert [t.turns[0].observation for t in a] == [t.turns[0].observation for t in b]
    assert len(a) == 2 * 2 * len(demos) and all(len(t.turns) == 1 for t in a)  # a search and a results turn each
    assert copy_augmented(demos, 0, seed=5) == []
    assert copy_variants("a Sokoban board", "<answer>Up</answer>", 2, np.random.default_rng(0)) == []
