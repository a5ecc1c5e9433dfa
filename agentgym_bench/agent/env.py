"""``LLMAgentEnv``: turns any Gymnasium text env into an LLM-agent env (prompt text in, raw model reply out)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from agentgym_bench.agent.parsing import ACTION_SEP, format_reply, parse_reply
from agentgym_bench.agent.prompts import PromptTemplate, format_reward, get_template
from agentgym_bench.agent.tools import ACTION_FORMATS, action_tool, format_tool_reply, parse_tool_reply
from agentgym_bench.envs import arguments
from agentgym_bench.spaces import sanitize, text_space

DEFAULT_MAX_OBSERVATION_LENGTH = 16_384
MAX_REPLY_LENGTH = 1 << 20
GAME_KEYS_NOT_PASSED = frozenset({"instructions", "legend", "variant", "action_is_valid", "action_is_effective"})
"""Keys of a game's info that the agent env's info does not pass through (it reads them, or sets its own)."""
SEPARATOR_HINT = f', separated by the action separator " {ACTION_SEP} "'


class LLMAgentEnv(gym.Env):
    r"""An LLM-agent env built on a core text game.

    Description:
        Each ``step`` takes one raw model reply (``<think>...</think><answer>a1 || a2</answer>``), parses it, runs
        its actions in the game and returns the text the model reads next. The game is any ``gymnasium.Env`` whose
        actions are words (ours: ``agentgym_bench.envs``; see ``docs/core-env-contract.md``).

        This class is a ``gymnasium.Env`` that *holds* the game (``self.game``) rather than a ``gymnasium.Wrapper``
        around it, so that ``gym.make("AgentSokoban-v0").unwrapped`` is the agent env — the thing with the Text
        spaces, the budgets and the info contract — and ``check_env`` checks exactly that.

    Action Space:
        ``Text`` over ``agentgym_bench.spaces.CHARSET``, up to 1 MiB. ``step`` accepts *any* string (characters
        outside the charset included); a reply that cannot be parsed is a turn with no valid action.

        Actions inside ``<answer>`` are separated by ``||``. At most ``max_actions_per_turn`` are taken (and no more
        than the actions left); the rest are dropped and listed in ``info["dropped_actions"]``. An action not in the
        game's ``valid_actions`` (matched case-insensitively) is invalid: skipped, listed in
        ``info["invalid_actions"]``, and it does not use up the action budget. Actions after the game ends are
        dropped. Games that list no ``valid_actions`` (open-text actions such as WebShop's ``search[...]``) get
        every action, and the game's ``action_is_valid`` decides. The cut comes before the check: with 2 actions
        left, ``Foo || Up || Left`` runs ``Up`` and drops ``Left`` (RAGEN drops ``Foo`` first and runs both).

        The format is RAGEN's, read more strictly in one case: the ``<answer>`` must follow the first
        ``</think>``, where RAGEN's pattern (``<think>(.*?)</think>\s*<answer>(.*?)</answer>``) also takes one
        after a later ``</think>``. RAGEN also writes ``<think>`` after the chat template's generation prompt, so
        its model starts inside the block; here the model writes the tag itself.

        With ``action_format="tool"`` the actions are a tool call instead (opt-in; ``<answer>`` tags stay the
        default): the env offers one OpenAI-style function, ``take_actions`` (``env.tools``, also in the first
        ``info["tools"]``; its ``actions`` argument is a list of the game's action words), and the reply is read as
        the text the Hermes and Qwen2.5/Qwen3 chat templates make a model write, ``<tool_call>{"name":
        "take_actions", "arguments": {"actions": ["Up", "Left"]}}</tool_call>`` (one or more blocks; with
        ``enable_think`` after ``<think>...</think>``). The same rules follow: a malformed call (no block, not
        JSON, another name, no list of strings) is a reply of bad format, an unknown word an invalid action
        (:mod:`agentgym_bench.agent.tools`). The ``openai:`` backend and ``serve`` carry the tool as OpenAI's
        ``tools`` / ``tool_calls`` (``docs/rollout.md``).

    Observation Space:
        ``Text`` over ``CHARSET`` up to ``max_observation_length`` characters: the new user message. The first one
        carries the template's intro (instructions, symbol legend, action list, budget); each turn shows the
        state and the actions left; after a reply it starts with that turn's reward. With the default ``"ragen"``
        template, FrozenLake's first observation reads::

            You are solving the FrozenLake puzzle. ...
            The meaning of each symbol in the state is:
            P: player, _: empty, O: hole, G: goal, X: player in hole, √: player on goal
            Your available actions are:
            Left, Down, Right, Up
            You can make up to 10 actions, separated by the action separator " || "

            Turn 1:
            State:
            _O__
            _P__
            ____
            _G_O
            You have 10 actions left. Always output: <think> [Your thoughts] </think> <answer> ...

        Game text outside the charset becomes ``?`` and over-long text is cut, so observations are always inside
        the space.

    Rewards:
        Turn reward = sum of the rewards of the actions executed this turn, plus ``format_penalty`` (default −0.1)
        if the turn executed no action (unparseable reply, or only invalid actions). RAGEN also penalises a turn
        that mixes valid and invalid actions; we count those invalid actions in ``info`` instead and penalise only
        turns that did nothing, which keeps the penalty a pure format/validity signal. The ``Reward:`` line that
        starts the next observation shows the turn reward, penalty included (RAGEN's shows the game's reward alone).

    Episode End:
        ``terminated=True`` when the game terminates or the agent's budget is spent (``max_turns`` turns or
        ``max_actions_per_episode`` actions). The budget is part of the agent's observation ("You have N actions
        left"), so its end is a terminal state of the agent MDP, not a time-limit truncation; this env never sets
        ``truncated`` (an outer ``TimeLimit`` may). ``info["budget_exhausted"]`` tells the two ends apart.

    Info:
        On every call: ``success``, ``state_key`` (the game's, identifies the underlying state for GiGPO anchors),
        ``valid_actions`` (if the game lists them), ``turn``, ``actions_left``. On reset also ``system_prompt``.
        On step also ``actions`` (parsed, before limits), ``executed_actions``, ``invalid_actions``,
        ``dropped_actions``, ``format_valid``, ``format_error`` (why the format was not met, ``""`` when it
        was: e.g. ``no <think>...</think> block ...``), ``action_is_valid`` (at least one action executed and
        none invalid), ``game_reward`` (reward without the penalty), ``format_penalty`` (applied this turn),
        ``budget_exhausted``. Any other key of the game's info from its last accepted move (on reset: its
        reset) passes through as it is, e.g. WebShop's ``page`` and ``available_actions``, TextArena's
        ``invalid_move`` and ``reason``; the reset-only ``instructions``, ``legend`` and ``variant`` and the
        per-move ``action_is_valid`` and ``action_is_effective`` do not.

    Arguments:
        game: the core text env (an instance).
        max_turns: turn budget (RAGEN: 5).
        max_actions_per_turn: actions taken from one reply (RAGEN: 5).
        max_actions_per_episode: action budget (RAGEN: 10).
        format_penalty: added to a turn that executed nothing (RAGEN: −0.1).
        enable_think: require ``<think>...</think>`` before ``<answer>``.
        prompt: ``"ragen"``, ``"compact"`` or a :class:`PromptTemplate`.
        action_format: ``"answer"`` (``<answer>`` tags, RAGEN's; default) or ``"tool"`` (a ``take_actions`` call).
        instructions / legend: override (or supply, for third-party games) the game's own text.
        max_reply_words: the length hint shown in the prompt (RAGEN: 100).
        max_observation_length: size of the observation space.

        Each is checked in the constructor (integers >= 1, a finite ``format_penalty``, a ``bool``
        ``enable_think``, strings or ``None``); a wrong one is a ``ValueError`` that starts with its name.

    Version History:
        * v0: initial version.
    """

    def __init__(
        self,
        game: gym.Env,
        *,
        max_turns: int = 5,
        max_actions_per_turn: int = 5,
        max_actions_per_episode: int = 10,
        format_penalty: float = -0.1,
        enable_think: bool = True,
        prompt: str | PromptTemplate = "ragen",
        action_format: str = "answer",
        instructions: str | None = None,
        legend: str | None = None,
        max_reply_words: int = 100,
        max_observation_length: int = DEFAULT_MAX_OBSERVATION_LENGTH,
    ):
        max_turns = arguments.integer("max_turns", max_turns, low=1)
        max_actions_per_turn = arguments.integer("max_actions_per_turn", max_actions_per_turn, low=1)
        max_actions_per_episode = arguments.integer("max_actions_per_episode", max_actions_per_episode, low=1)
        max_observation_length = arguments.integer("max_observation_length", max_observation_length, low=1)
        max_reply_words = arguments.integer("max_reply_words", max_reply_words, low=1)
        format_penalty = arguments.number("format_penalty", format_penalty)
        enable_think = arguments.boolean("enable_think", enable_think)
        if action_format not in ACTION_FORMATS:
            raise ValueError(f"action_format={action_format!r} must be one of {list(ACTION_FORMATS)}")
        for name, value in (("instructions", instructions), ("legend", legend)):
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name}={value!r} must be a string or None")
        self.game = game
        self.max_turns = max_turns
        self.max_actions_per_turn = max_actions_per_turn
        self.max_actions_per_episode = max_actions_per_episode
        self.format_penalty = float(format_penalty)
        self.enable_think = enable_think
        self.template = get_template(prompt)
        self.action_format = action_format
        self._instructions_arg = instructions
        self._legend_arg = legend
        self.instructions = ""
        self.legend = ""
        self.variant = ""
        self.max_reply_words = max_reply_words
        self.max_observation_length = max_observation_length
        self.observation_space = text_space(max_observation_length)
        self.action_space = text_space(MAX_REPLY_LENGTH)
        self.metadata = {"render_modes": list(game.metadata.get("render_modes", [])),
                         "render_fps": game.metadata.get("render_fps", 4)}
        self.render_mode = game.render_mode
        self._turn = 0
        self._actions_left = 0
        self._done = True
        self._game_info: dict[str, Any] = {}
        self._state = ""

    # -- helpers -------------------------------------------------------------------------------------------------

    @property
    def turns_left(self) -> int:
        """Turns the agent still has in this episode."""
        return 0 if self._done else self.max_turns - self._turn

    @property
    def actions_left(self) -> int:
        """Actions the agent still may execute in this episode."""
        return self._actions_left

    @property
    def valid_actions(self) -> list[str] | None:
        """The game's valid action words now, or ``None`` if the game does not list them."""
        actions = self._game_info.get("valid_actions")
        return None if actions is None else list(actions)

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The OpenAI ``tools`` the model is offered: ``[take_actions]`` in tool format, ``[]`` otherwise."""
        if self.action_format != "tool":
            return []
        return [action_tool(self.valid_actions, self.max_actions_per_turn)]

    def write_reply(self, actions: list[str]) -> str:
        """A well-formed reply taking ``actions``, in this env's action format (model-free policies use it)."""
        if self.action_format == "tool":
            return format_tool_reply(list(actions), enable_think=self.enable_think)
        return format_reply(list(actions), enable_think=self.enable_think)

    def _format_hint(self) -> str:
        t = self.template
        if self.action_format == "tool":
            return t.format_hint_tool_think if self.enable_think else t.format_hint_tool
        return t.format_hint_think if self.enable_think else t.format_hint_answer

    def _fields(self) -> dict[str, Any]:
        actions = self.valid_actions
        return {
            "instructions": self.instructions,
            "header": f"{self.variant}\n" if self.variant else "",
            "legend": self.template.legend.format(legend=self.legend) if self.legend else "",
            "actions": ", ".join(actions) if actions is not None else "the actions listed with each state",
            "max_actions": self.max_actions_per_episode,
            "max_actions_per_turn": self.max_actions_per_turn,
            "turn": self._turn + 1,
            "state": self._state,
            "actions_left": self._actions_left,
            "max_reply_words": self.max_reply_words,
            "format_hint": self._format_hint(),
            "separator_hint": "" if self.action_format == "tool" else SEPARATOR_HINT,
        }

    def _observation(self, text: str) -> str:
        return sanitize(text, self.max_observation_length)

    def _common_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {k: v for k, v in self._game_info.items() if k not in GAME_KEYS_NOT_PASSED}
        info |= {
            "success": bool(self._game_info.get("success", False)),
            "state_key": str(self._game_info.get("state_key", self._state)),
            "turn": self._turn,
            "actions_left": self._actions_left,
        }
        if self.valid_actions is not None:
            info["valid_actions"] = self.valid_actions
        return info

    # -- gymnasium API -------------------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        state, game_info = self.game.reset(seed=seed, options=options)
        self._game_info = dict(game_info)
        self._state = sanitize(str(state))
        instructions = game_info.get("instructions", "") if self._instructions_arg is None else self._instructions_arg
        legend = game_info.get("legend", "") if self._legend_arg is None else self._legend_arg
        self.instructions = sanitize(str(instructions))
        self.legend = sanitize(str(legend))
        self.variant = sanitize(str(game_info.get("variant", "")))
        self._turn = 0
        self._actions_left = self.max_actions_per_episode
        self._done = False
        fields = self._fields()
        obs = self.template.intro.format(**fields) + self.template.turn.format(**fields)
        info = self._common_info()
        info["system_prompt"] = self.template.system
        if self.action_format == "tool":
            info["tools"] = self.tools
        return self._observation(obs), info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._done:
            raise RuntimeError("step() called before reset() or after the episode ended; call reset() first")
        if self.action_format == "tool":
            parsed = parse_tool_reply(action, enable_think=self.enable_think)
        else:
            parsed = parse_reply(action, enable_think=self.enable_think, action_sep=ACTION_SEP)
        taken = parsed.actions[: min(self.max_actions_per_turn, self._actions_left)]
        dropped = parsed.actions[len(taken):]
        executed: list[str] = []
        invalid: list[str] = []
        game_reward = 0.0
        game_over = False
        for i, word in enumerate(taken):
            if game_over:
                dropped = taken[i:] + dropped
                break
            move = self._match(word)
            if move is None:
                invalid.append(word)
                continue
            state, reward, terminated, truncated, game_info = self.game.step(move)
            if not game_info.get("action_is_valid", True):
                invalid.append(word)
                self._state = sanitize(str(state))  # the same state by the contract; a bridge may say why
                continue
            self._game_info = dict(game_info)
            self._state = sanitize(str(state))
            executed.append(move)
            game_reward += float(reward)
            self._actions_left -= 1
            game_over = bool(terminated or truncated)
        penalty = self.format_penalty if not executed else 0.0
        self._turn += 1
        budget_exhausted = not game_over and (self._turn >= self.max_turns or self._actions_left <= 0)
        self._done = game_over or budget_exhausted
        fields = self._fields()
        fields["reward"] = format_reward(game_reward + penalty)
        body = self.template.final if self._done else self.template.turn
        obs = self.template.reward.format(**fields) + body.format(**fields)
        info = self._common_info()
        info.update(
            actions=list(parsed.actions),
            executed_actions=executed,
            invalid_actions=invalid,
            dropped_actions=dropped,
            format_valid=parsed.format_ok,
            format_error=parsed.problem,
            action_is_valid=bool(executed) and not invalid,
            game_reward=game_reward,
            format_penalty=penalty,
            budget_exhausted=budget_exhausted,
        )
        return self._observation(obs), game_reward + penalty, self._done, False, info

    def _match(self, word: str) -> str | None:
        """The canonical valid action for ``word`` (case-insensitive), ``word`` itself if the game lists none."""
        valid = self._game_info.get("valid_actions")
        if valid is None:
            return word
        wanted = word.strip().lower()
        for candidate in valid:
            if candidate.lower() == wanted:
                return candidate
        return None

    def render(self) -> Any:
        return self.game.render()

    def close(self) -> None:
        self.game.close()
