import re

import numpy as np

from agentgym_bench.envs.webshop.augment import CODE, copy_variants, instruction_words
from agentgym_bench.rollout.warmstart import WarmStartConfig, collect_demonstrations, copy_augmented


def first_hit_turns(episodes=3):
    config = WarmStartConfig(envs=("AgentWebShop-v0",), episodes=episodes, eval_episodes=1,
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
    unnamed = buy.observation.replace(": ", " ")  # an instruction that names no option
    assert copy_variants(unnamed, buy.reply, 2, np.random.default_rng(0)) == []
    a, b = copy_augmented(demos, 2, seed=5), copy_augmented(demos, 2, seed=5)
    assert [t.turns[0].observation for t in a] == [t.turns[0].observation for t in b]
    varied = [t for d in demos for t in d.turns if copy_variants(t.observation, t.reply, 1, np.random.default_rng(0))]
    assert len(varied) > 2 * len(demos)  # a search and a results turn each, and product pages
    assert len(a) == 2 * len(varied) and all(len(t.turns) == 1 for t in a)
    assert copy_augmented(demos, 0, seed=5) == []
    assert copy_variants("a Sokoban board", "<answer>Up</answer>", 2, np.random.default_rng(0)) == []


def test_option_variants_swap_a_named_value_everywhere_or_only_in_the_instruction():
    from agentgym_bench.envs.webshop.augment import ITEM, named_at, option_values

    def parts(observation):
        instruction, body, actions = ITEM.search(observation).groups()
        offered = [v for v in re.findall(r"click\[(.*?)\]", actions)
                   if v not in ("back to search", "< prev", "description", "features", "reviews", "buy now")]
        return instruction, body, offered

    rows = [t for d in first_hit_turns(12) for t in d.turns if "Buy Now\n" in t.observation]
    chosen = {re.search(r"click\[(.*?)\]", t.reply).group(1) for t in rows}
    assert "buy now" in chosen and len(chosen) > 2  # product pages that click an option and that buy
    kinds = set()
    for turn in rows:
        instruction, body, offered = parts(turn.observation)
        named = sorted((named_at(instruction, v), v) for v in offered if named_at(instruction, v) is not None)
        variants = copy_variants(turn.observation, turn.reply, 4, np.random.default_rng(3))
        assert len(variants) == (4 if named else 0)
        old_click = re.search(r"click\[(.*?)\]", turn.reply).group(1)
        for observation, reply in variants:
            new_instruction, new_body, new_offered = parts(observation)
            click = re.search(r"click\[(.*?)\]", reply).group(1)
            assert click == "buy now" or click in new_offered  # always an action the page offers
            assert observation.split("\nYou must")[1:] != [] and observation.endswith(turn.observation[-16:])
            (new,) = {v for v in option_values() if named_at(new_instruction, v) is not None} - {
                v for v in option_values() if named_at(instruction, v) is not None}
            assert new in option_values() and new not in offered
            if new in new_offered:  # swapped everywhere: the reply copies the new value where it copied the old
                kinds.add("everywhere")
                (old,) = set(offered) - set(new_offered)
                assert new_body.split(" [SEP] ").count(new) == 1 and old not in new_body.split(" [SEP] ")
                assert click == (new if old_click == old else old_click)
            else:  # the instruction names a value the page lacks: the shopper moves on to the next named value
                kinds.add("instruction only")
                assert new_body == body and new_offered == offered
                (old,) = {v for _, v in named} - {v for v in offered if named_at(new_instruction, v) is not None}
                later = [v for at, v in named if at > named_at(instruction, old)]
                assert click == (old_click if old_click != old else (later or ["buy now"])[0])
    assert kinds == {"everywhere", "instruction only"}
