"""A person at the terminal in one seat of a two-player env (``agentgym-bench play Bargain-v1``).

:class:`TerminalPolicy` is a policy like any other (``generate(conversations, envs)``), so the match runs through
:func:`~agentgym_bench.multiagent.selfplay.play_matches` exactly as the board's matches do: what the person reads
is what a model in that seat reads, and what they type goes to the env as a model's reply would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agentgym_bench.errors import UserError
from agentgym_bench.multiagent.bargain import BARGAIN_IDS
from agentgym_bench.multiagent.seats import read_move
from agentgym_bench.multiagent.selfplay import SCRIPTED, MatchResult, Seat, make_multiagent_env, play_matches
from agentgym_bench.rollout.policy import Generation, Message
from agentgym_bench.rollout.specs import Sampling, policy_from_spec

OUTCOME_WORDS = {"win": "You win", "draw": "A draw", "loss": "You lose"}
TWO_PLAYER_HINT = ("Bargain-v1 (v0: the deal shown in the first round only), or TextArena/<two-player TextArena id> "
                   "(e.g. TextArena/TicTacToe-v0)")


def is_two_player(env_id: str) -> bool:
    """Whether ``env_id`` names a two-player env (:func:`~agentgym_bench.multiagent.selfplay.make_multiagent_env`)."""
    return env_id in BARGAIN_IDS or env_id.startswith("TextArena/")


def as_reply(line: str, enable_think: bool) -> str:
    """A typed line as a seat's reply: kept if it has an ``<answer>`` or ``<think>`` tag, else the bare move inside
    ``<answer>`` (after an empty ``<think>`` where the env asks for one)."""
    if "<answer>" in line or "<think>" in line:
        return line
    answer = f"<answer>{line.strip()}</answer>"
    return f"<think></think>{answer}" if enable_think else answer


class TerminalPolicy:
    """Shows the seat's newest observation and reads its move from ``read`` (``input`` by default).

    ``EOFError`` (Ctrl-D) ends the match: it is passed on to the caller.
    """

    def __init__(self, read: Callable[[str], str] = input, write: Callable[[str], None] = print):
        self.read, self.write = read, write

    def generate(self, conversations: Sequence[list[Message]], envs: Sequence[Seat] | None = None,
                 keys: Sequence[tuple[int, ...]] | None = None) -> list[Generation]:
        replies = []
        for i, conversation in enumerate(conversations):
            seat = envs[i] if envs is not None else None
            enable_think = bool(getattr(seat.env.unwrapped, "enable_think", True)) if seat else True
            self.write(f"\n--- your turn{f' ({seat.agent})' if seat else ''} ---\n{conversation[-1]['content']}")
            reply = as_reply(self.read("> "), enable_think)
            move, read = read_move(reply, enable_think=enable_think)
            if move is None:
                self.write(f"(no move read: {read['format_error'] or 'empty answer'}; the game counts it invalid)")
            replies.append(Generation(reply))
        return replies


def opponent_policy(env_id: str, spec: str | None, seed: int):
    """The opponent named by ``spec``: ``scripted`` or ``random`` (Bargain only) or a model spec (``hf:PATH``,
    ``openai:MODEL@URL``, ...), sampled at temperature 1 with ``seed``; ``None``: ``scripted`` on Bargain."""
    if spec is None:
        if env_id not in BARGAIN_IDS:
            raise UserError(f"{env_id} needs --opponent: a model spec such as hf:PATH (scripted and random play "
                            "Bargain only)")
        spec = "scripted"
    if spec in SCRIPTED and env_id not in BARGAIN_IDS:
        raise UserError(f"--opponent {spec} plays Bargain only; {env_id} needs a model (e.g. hf:PATH)")
    return policy_from_spec(spec, Sampling(max_new_tokens=128, seed=seed), scripted=SCRIPTED,
                            max_batch_size=None)[0]


def play_in_terminal(env_id: str, opponent: str | None, seat: str, seed: int, *, read: Callable[[str], str] = input,
                     write: Callable[[str], None] = print) -> MatchResult:
    """One match of ``env_id`` (seed ``seed``): the person in ``seat`` (``player_0`` moves first), ``opponent`` in
    the other; the full conversation is kept (history ``None``). Raises ``EOFError`` if input ends first."""
    try:
        env = make_multiagent_env(env_id)
    except ValueError as err:
        raise UserError(f"play {env_id}: {err}") from err
    if seat not in env.possible_agents:
        raise UserError(f"--seat {seat!r} is not a seat of {env_id}: {', '.join(env.possible_agents)}")
    other = opponent_policy(env_id, opponent, seed)
    write(f"You play {seat} of {env_id} (seed {seed}) against {opponent or 'scripted'}. Type a move as the prompt "
          f"asks (sent as {as_reply('MOVE', env.enable_think)}) or a whole reply with its tags; Ctrl-D ends.")
    result = play_matches(env_id, [seed], TerminalPolicy(read, write), other, learner_seats=seat)[0]
    write(f"\n--- game over ---\n{result.trajectories[seat].final_observation}")
    scores = ", ".join(f"{agent}{' (you)' if agent == seat else ''} {reward:+.2f}"
                       for agent, reward in result.rewards.items())
    write(f"{OUTCOME_WORDS[result.outcome]}: {scores}.")
    return result
