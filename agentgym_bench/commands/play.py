"""``agentgym-bench play ENV_ID``: play an agent env in the terminal by typing replies or bare actions, or one seat of
a two-player env against an opponent."""

from __future__ import annotations

import argparse
import ast

import gymnasium as gym
import yaml

import agentgym_bench  # noqa: F401  (registers the ids)
from agentgym_bench.agent.env import LLMAgentEnv
from agentgym_bench.errors import UserError
from agentgym_bench.multiagent.terminal import TWO_PLAYER_HINT, is_two_player, play_in_terminal
from agentgym_bench.registration import check_env_id


def parse_kwargs(items: list[str]) -> dict:
    """``["num_boxes=2", "prompt=compact", "is_slippery=false"]`` -> ``{"num_boxes": 2, "prompt": "compact",
    "is_slippery": False}``: Python literals (``False``, ``None``), else YAML as the trainers' ``key=value`` overrides
    read it (``false``, ``null``, ``[a, b]``), else the text."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"--arg {item!r}: expected KEY=VALUE")
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            try:
                out[key] = yaml.safe_load(value) if value.strip() else value
            except yaml.YAMLError:
                out[key] = value
    return out


def to_reply(line: str, agent: LLMAgentEnv, words: bool = True) -> str:
    """A typed line as a model reply: kept as is if it has a ``<think>``, ``<answer>`` or ``<tool_call>`` tag, else
    bare actions are written in ``agent``'s reply format (``<answer>`` tags or a tool call). Actions are separated by
    ``||``; without one, ``words=True`` (games whose actions are single words) also splits on spaces (``Up Left``),
    and ``words=False`` (open-text actions such as WebShop's ``search[pink portable charger]``) keeps the line as
    one action."""
    if any(tag in line for tag in ("<answer>", "<think>", "<tool_call>")):
        return line
    if "||" in line:
        actions = [a.strip() for a in line.split("||")]
    else:
        actions = line.split() if words else [line.strip()]
    return agent.write_reply([a for a in actions if a])


def format_hint(agent: LLMAgentEnv) -> str:
    """What a well-formed reply looks like in ``agent``'s format."""
    if agent.action_format == "tool":
        call = '<tool_call>{"name": "take_actions", "arguments": {"actions": ["action", "action"]}}</tool_call>'
        return f"<think>...</think>{call}" if agent.enable_think else call
    return ("<think>...</think><answer>action || action</answer>" if agent.enable_think
            else "<answer>action || action</answer>")


def seed(text: str) -> int:
    """``--seed`` values: integers >= 0 (Gymnasium's seeds)."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a seed (an integer >= 0)")
    return int(text)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("env_id", help="an id from `agentgym-bench envs`, e.g. AgentSokoban-v0, or MODULE:ID for an "
                        f"agent env of your own that MODULE registers; two-player: {TWO_PLAYER_HINT}")
    parser.add_argument("--seed", type=seed, default=0,
                        help="episode seed >= 0 (same seed, same episode) (default: %(default)s)")
    parser.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                        help="keyword argument for gym.make, repeatable (e.g. --arg num_boxes=2 --arg "
                        "is_slippery=false); values as Python literals or YAML, as train's KEY=VALUE")
    parser.add_argument("--show-prompt", action="store_true",
                        help="print the full text the model would read each turn instead of only the board")
    parser.add_argument("--opponent", default=None, metavar="POLICY",
                        help="two-player envs: who plays the other seat: scripted or random (Bargain only), or a "
                        "model spec such as hf:PATH (default: scripted on Bargain)")
    parser.add_argument("--seat", default=None,
                        help="two-player envs: your seat, player_0 or player_1 (in TextArena games player_0 moves "
                        "first; in Bargain both demand at once) (default: player_0)")


def run(args: argparse.Namespace) -> int:
    if is_two_player(args.env_id):
        if args.arg or args.show_prompt:
            raise UserError("--arg and --show-prompt are for single-agent envs (a seat is shown its whole prompt)")
        try:
            play_in_terminal(args.env_id, args.opponent, args.seat or "player_0", args.seed)
        except EOFError:
            print("\n(input closed)")
        return 0
    for flag, value in (("--opponent", args.opponent), ("--seat", args.seat)):
        if value is not None:
            raise UserError(f"{flag} is for two-player envs ({TWO_PLAYER_HINT}); {args.env_id} has one player")
    env_id = check_env_id(args.env_id)
    try:
        env = gym.make(env_id, render_mode="ansi", **parse_kwargs(args.arg))
    except (gym.error.Error, TypeError, ValueError) as err:
        raise UserError(f"play {env_id}: {err}") from err
    agent: LLMAgentEnv = env.unwrapped
    try:
        obs, info = env.reset(seed=args.seed)
    except (ValueError, RuntimeError, OSError) as err:  # e.g. a held-out split without a test seed, a server gone
        raise UserError(f"play {env_id}: {str(err).splitlines()[0]}") from err
    print(obs if args.show_prompt else f"{agent.instructions}\n{agent.legend}\n\n{env.render()}")
    if agent.valid_actions:
        bare = f"bare actions ({' '.join(agent.valid_actions[:2])!r}; several separated by spaces or '||')"
    else:  # open text (WebShop, TextArena): the game's instructions say how a move is written
        bare = "a move as the instructions above write it (several separated by '||')"
    print(f"Type {bare}, or a whole reply as the model writes it: {format_hint(agent)}. Ctrl-D ends the game.")
    total = 0.0
    while True:
        actions = ", ".join(agent.valid_actions or []) or "open text, as the instructions say"
        print(f"[turn {agent.max_turns - agent.turns_left + 1}/{agent.max_turns}, {agent.actions_left} actions left; "
              f"actions: {actions}]")
        try:
            line = input("> ")
        except EOFError:
            print("\n(input closed)")
            break
        obs, reward, terminated, truncated, info = env.step(
            to_reply(line, agent, words=agent.valid_actions is not None))
        total += reward
        print(obs if args.show_prompt else env.render())
        if not info["format_valid"]:
            print(f"invalid reply format: nothing executed; write {format_hint(agent)} "
                  "or bare actions")
        print(f"executed {info['executed_actions']}, invalid {info['invalid_actions']}, "
              f"dropped {info['dropped_actions']}; reward {reward:+.2f} (total {total:+.2f})")
        if terminated or truncated:
            outcome = "SUCCESS" if info["success"] else ("out of budget" if info["budget_exhausted"] else "failed")
            print(f"Episode over: {outcome}. Return {total:+.2f}.")
            break
    env.close()
    return 0
