"""agentgym-bench: Gymnasium text environments for LLM agents, an LLM-agent wrapper, rollouts, trainers and a
verified leaderboard.

``import agentgym_bench`` registers every id with Gymnasium::

    import gymnasium as gym
    import agentgym_bench

    env = gym.make("AgentSokoban-v0")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("<think>...</think><answer>Up || Left</answer>")

The package, from the games up (the trainers are the ``trainers`` package, beside it):

- ``envs/``: the games, pure rules apart from their Gymnasium adapters, and their oracles;
- ``agent/``: ``LLMAgentEnv``, the wrapper that makes a game an LLM-agent env; reply parsing, prompt templates;
- ``registration.py``: every env id, registered with Gymnasium on ``import agentgym_bench``;
- ``rollout/``: the rollout engine, trajectories and token views, the generation backends;
- ``multiagent/``: two-player PettingZoo envs (Bargain), the TextArena bridge, self-play matches;
- ``benchmark/``: suites, evaluation, results files, content overlap, provenance;
- ``leaderboard/``: verification by replay, the boards, their pages, published weights;
- ``adapters/``: the agent envs for OpenEnv, TRL and GEM;
- ``serving/``: a local model behind an OpenAI-compatible server (``agentgym-bench serve``);
- ``commands/``: the ``agentgym-bench`` subcommands, one module each;
- ``cli.py``: the ``agentgym-bench`` command line, which lists every command;
- ``errors.py``: errors a user can fix (one line, exit 2);
- ``flags.py``: command-line values checked where they are parsed (a number within bounds, named by its flag);
- ``files.py``: files written whole (a temporary file and a rename; a saved model moved into place);
- ``paths.py``: where models and runs live (``$AGENTGYM_BENCH_HOME``) and where a repository's root is;
- ``seeds.py``: the training, validation and held-out test seed ranges and content splits;
- ``stats.py``: the statistics every layer reports with (Wilson, bootstrap, paired differences);
- ``spaces.py``: the text spaces every env shares;
- ``progress.py``: progress of long work (a bar on a terminal, plain lines otherwise);
- ``processes.py``: child processes that end with their parent;
- ``run_folder.py``: a trainer's run folder: its layout and its last checkpoint;
- ``schema_check.py``: the JSON Schema check of results files, board indexes and suite files, said in one line;
- ``http_body.py``: what both HTTP servers (``serve``, ``webshop-serve``) share.
"""

from agentgym_bench.agent import LLMAgentEnv
from agentgym_bench.multiagent.registration import register_textarena_envs
from agentgym_bench.registration import AGENT_ENVS, register_all

__version__ = "0.1.0"

register_all()
register_textarena_envs()  # only where textarena is importable

__all__ = ["AGENT_ENVS", "LLMAgentEnv", "__version__"]
