"""The default model: a small GPT-2 and a word-level tokenizer built locally from the environments' vocabulary.

No download is needed. :func:`build_default_model` writes an ordinary Hugging Face folder (``config.json``,
``model.safetensors``, ``tokenizer.json``, chat template, ...) that loads with ``AutoTokenizer.from_pretrained`` and
``AutoModelForCausalLM.from_pretrained`` — the same calls a user makes for ``Qwen/Qwen2.5-0.5B-Instruct`` — so every
code path downstream (generation, token views, training) is the one a real checkpoint takes.

Tokenizer:
    Word level (``tokenizers.models.WordLevel`` wrapped as ``PreTrainedTokenizerFast``). Text is split by one regex
    into pieces, each piece one token:

    - the reply tags ``<think>``, ``</think>``, ``<answer>``, ``</answer>`` and the action separator ``" || "``;
    - :data:`ROW_BREAK` ``"#\\n#"``: in a wall-bordered grid (Sokoban) the right border of a row, the newline and
      the left border of the next row are one token. Every row of such a grid begins and ends with a wall, so each
      interior cell is still one token at a fixed position, and the borders cost one token a row instead of three
      (a 6x6 room: 31 tokens instead of 41). This is the tokenizer's business only: the observation text is the
      env's own, and any text still round-trips;
    - words: runs of letters holding at least one lower-case letter (``Left``, ``actions``, ``Phoenix``) and not
      touching a digit; a word not in the vocabulary becomes ``<|unk|>``, never an error;
    - every other character on its own: grid symbols (``_ O P G # X √ W . @`` ...), digits, spaces, newlines,
      punctuation. Upper-case-only runs such as the grid row ``PX__`` are single characters, one token per cell;
      so are letters next to digits: a WebShop product code ``b0vw9v1i16`` (which a model must copy into
      ``click[...]``) is spelled out, ``10000mah`` is ``1 0 0 0 0 m a h``.

    ``tokenizer="space-words"`` (``init-model --tokenizer space-words``): the same, except that a word may take the
    one space before it as part of its token (``" shoes"``), as GPT-2's and Qwen's BPE vocabularies do; the
    vocabulary adds every word and lower-case letter with a space before it (about 5000 tokens). A sentence is then
    one token a word, and a copied one (WebShop's ``search[<the instruction>]``) is what one induction head copies;
    with ``words`` a space token, which occurs everywhere, sits between each two words
    (``docs/lab/2026-11-22-webshop-imitation.md``, "WebShop: a demonstrator that copies, and rows that force copying").
    WebShop's pages are about a sixth shorter.

    Tool calls: the vocabulary has no ``tool`` or ``arguments`` (the published checkpoint's no ``call`` either), so
    the tokenizer cannot spell a Hermes/Qwen tool call (``<tool_call>{"name": ..., "arguments": ...}</tool_call>``):
    those words encode to ``<|unk|>``, which decoding drops, and in the agent env's tool format
    (``action_format="tool"``) every reply of this model is of bad format, however it is trained. Nothing crashes
    (evaluation, serving, replay and warm starts run); the vocabulary is kept because new tokens would change the
    published checkpoint's embedding shape (``docs/rollout.md``, "Tool calls").

    Special tokens: ``<|pad|>``, ``<|unk|>``, ``<|system|>``, ``<|user|>``, ``<|assistant|>``, ``<|end|>`` (end of a
    message; the end-of-sequence token the model emits to stop). Decoding concatenates tokens, so text made of
    known pieces round-trips exactly.

    The vocabulary is: the special tokens, the tags, the row break, every character of
    :data:`agentgym_bench.spaces.CHARSET`, a base word list (actions, arm names, the compact prompt's words) and the
    words of every registered agent env's first observation, instructions and legend, of the built-in prompt
    templates, of the bundled WebShop store (every product, goal and page string: :func:`webshop_texts`) and of
    the two-player game Bargain (:func:`bargain_texts`), sorted
    — about 2500 tokens, deterministic for a given code base.

    Chat template (Jinja; ``{% generation %}`` marks what the assistant writes, so
    ``apply_chat_template(..., return_assistant_tokens_mask=True)`` works)::

        <|system|>...<|end|><|user|>...<|end|><|assistant|>REPLY<|end|>

    With the compact prompt template a 4x4 FrozenLake turn is 30 tokens:
    ``<|user|>`` + 16 cells + 4 newlines + ``actions left: 10`` (7 tokens) + ``<|end|><|assistant|>``.

Model:
    ``GPT2LMHeadModel`` (learned absolute position embeddings), by default 4 layers, width 128, 4 heads, 1024 positions
    (the longest WebShop page is ~870 tokens), tied input/output embeddings, no dropout: 0.9M parameters in the
    blocks and positions plus 0.3M in the word embeddings. Width 128 with clean, plentiful demonstrations imitates the
    Sokoban oracle far better than the earlier width-64 recipe (``docs/lab/2026-11-22-warm-start-ablations.md``,
    "Where the capacity went": run 1 changed the width, the demonstrations and the training together, and width 64
    was not re-run with the new recipe). Weights are initialised from
    ``seed`` inside ``torch.random.fork_rng``, so building is deterministic and the global RNG is left as it was.

    ``--architecture llama`` builds a ``LlamaForCausalLM`` of the same shape and tokenizer instead (rotary positions,
    RMS norm, a gated MLP of 4x the width: 1.37M parameters), the architecture of Llama's and Qwen's models. On a
    synthetic copying task it learns to copy a string anywhere in its 1024 positions, which the GPT-2 model does not
    (``benchmarks/copy_task.py``), and it imitates the Sokoban 6x6 oracle at least as well
    (``docs/lab/2026-11-25-positions-gpt2-llama.md``); the board's models are GPT-2.

Command line: ``agentgym-bench init-model [--path DIR] [--seed N] ...`` (see ``--help``). Default folder:
``agentgym_bench.paths.model_dir("default")`` (``$AGENTGYM_BENCH_HOME/models/default``, ``AGENTGYM_BENCH_HOME``
defaulting to ``~/.cache/agentgym-bench``: :func:`agentgym_bench.paths.home`);
:func:`~agentgym_bench.rollout.hf.load_model` finds it by the name ``"default"``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import string
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

import agentgym_bench
from agentgym_bench.agent.prompts import TEMPLATES
from agentgym_bench.envs.webshop import pages
from agentgym_bench.envs.webshop.catalog import load_catalog
from agentgym_bench.errors import UserError
from agentgym_bench.files import move_into
from agentgym_bench.multiagent import bargain_rules as rules
from agentgym_bench.multiagent.bargain import AGENTS, BargainEnv
from agentgym_bench.paths import expand, model_dir
from agentgym_bench.registration import check_env_id
from agentgym_bench.spaces import CHARSET

PAD, UNK, SYSTEM, USER, ASSISTANT, END = "<|pad|>", "<|unk|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"
SPECIAL_TOKENS = [PAD, UNK, SYSTEM, USER, ASSISTANT, END]
TAGS = ["<think>", "</think>", "<answer>", "</answer>", " || ", "||"]
ROW_BREAK = "#\n#"
"""One token for a wall-bordered grid's row break: the wall closing a row, the newline, the wall opening the next."""

BASE_WORDS = [
    "Up", "Down", "Left", "Right",  # grid actions
    "Phoenix", "Dragon", "Trader", "Librarian",  # bandit arms
    "actions", "left", "action", "turn", "turns", "reward", "state", "Reward", "State", "Turn", "Arms", "points",
]

# A piece is a tag, a word (a letter run holding a lower-case letter), or any single character.
LETTER_RUN = r"[A-Za-z]*[a-z][A-Za-z]*(?![0-9A-Za-z])"
WORD = r"(?<![0-9A-Za-z])" + LETTER_RUN
WORD_RE = re.compile(WORD)
PIECE_PATTERNS = {
    name: "|".join(re.escape(t) for t in [*TAGS, ROW_BREAK]) + "|" + word + r"|[\s\S]"
    for name, word in [("words", WORD), ("space-words", r"(?:(?<![0-9A-Za-z])| )" + LETTER_RUN)]
}
"""Tokenizer name -> the regex splitting text into pieces: ``words`` (a space is a token of its own, the default)
and ``space-words`` (a word may also be one space and the letter run after it, ``" shoes"``, as in GPT-2's and
Qwen's vocabularies)."""
TOKENIZERS = tuple(PIECE_PATTERNS)

CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'assistant' -%}"
    "{{ '<|assistant|>' }}{% generation %}{{ message['content'] + '<|end|>' }}{% endgeneration %}"
    "{%- else -%}"
    "{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|assistant|>' }}{%- endif -%}"
)

ARCHITECTURES = ("gpt2", "llama")
"""Model classes :func:`build_model` can build: ``GPT2LMHeadModel`` (learned absolute positions, the default) and
``LlamaForCausalLM`` (rotary positions, the architecture of Llama's and Qwen's models)."""


@dataclass(frozen=True)
class ModelSize:
    """Architecture and shape of the default model (``n_embd`` is the hidden size; Llama's MLP is ``4 * n_embd``)."""

    n_layer: int = 4
    n_embd: int = 128
    n_head: int = 4
    n_positions: int = 1024
    architecture: str = "gpt2"


def env_words(extra: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """Words of every registered agent env's first observation (both templates), instructions, legend and actions,
    of the prompt templates, of the bundled WebShop store (:func:`webshop_texts`) and of Bargain
    (:func:`bargain_texts`); ``extra``: more agent env ids read the same way (``MODULE:ID`` for an env of the user's
    own, ``init-model --env``). (Grid rows hold no words: a word needs a lower-case letter.)

    Returns:
        ``(words, skipped)``: the words found (unsorted, may repeat) and the ids whose env could not be built (a
        game not installed yet); those are reported, not fatal.
    """
    texts: list[str] = []
    for template in TEMPLATES.values():
        texts.extend(str(v) for v in vars(template).values())
    skipped = []
    for env_id in [*sorted(agentgym_bench.AGENT_ENVS), *extra]:
        for prompt in ("compact", "ragen"):
            try:
                env = gym.make(env_id, prompt=prompt)
                obs, info = env.reset(seed=0)
            except Exception:  # noqa: BLE001 - a game that is not installed only shrinks the vocabulary
                skipped.append(env_id)
                break
            agent = env.unwrapped
            texts += [obs, agent.instructions, agent.legend, " ".join(info.get("valid_actions", []))]
            env.close()
    texts += webshop_texts() + bargain_texts()
    words = [w for text in texts for w in WORD_RE.findall(text)]
    return words, skipped


def webshop_texts() -> list[str]:
    """Every string of the bundled WebShop store (products with their pages' text, goals) and the fixed page text:
    what a WebShop page can show, so the default model reads it without ``<|unk|>``."""
    def strings(value: object) -> list[str]:
        if isinstance(value, str):
            return [value]
        if isinstance(value, dict):
            return [t for k, v in value.items() for t in [str(k), *strings(v)]]
        if isinstance(value, list | tuple):
            return [t for v in value for t in strings(v)]
        return []

    catalog = load_catalog()
    product = catalog.products[0]
    fixed = [pages.search_page(""), pages.results_page("", [product], 2, 50), pages.item_page("", product),
             pages.sub_page("", {**product, "Reviews": []}, "Reviews"), pages.done_page("", {}, 0.0)]
    return strings(catalog.products) + strings(catalog.goals) + fixed


def bargain_texts() -> list[str]:
    """What a Bargain player can read (:class:`~agentgym_bench.multiagent.bargain.BargainEnv`, our two-player game):
    the opening, a round without a deal, a deal, the end without one, and every bundle's description."""
    env = BargainEnv(max_rounds=2)
    texts = []
    for deal in (True, False):
        observations, _ = env.reset(seed=0)
        whole = " ".join(str(n) for n in env.counts)
        texts += [o["text"] for o in observations.values()]
        observations, *_ = env.step(dict.fromkeys(AGENTS, f"<think>x</think><answer>{whole}</answer>"))
        texts += [o["text"] for o in observations.values()]
        nothing = "<think>x</think><answer>0 0 0</answer>"
        observations, *_ = env.step({AGENTS[0]: nothing, AGENTS[1]: nothing if deal else "no move"})
        texts += [o["text"] for o in observations.values()]
    return texts + [rules.describe((n, n, n)) for n in range(rules.MAX_COUNT + 1)]


def build_vocab(extra_words: list[str] = (), tokenizer: str = "words") -> dict[str, int]:
    """Token -> id: special tokens first (``<|pad|>`` = 0), then tags, characters of the charset, sorted words;
    for the ``space-words`` tokenizer then every word and lower-case letter with a space before it, sorted."""
    tokens = list(SPECIAL_TOKENS) + list(TAGS) + [ROW_BREAK]
    tokens += sorted(set(CHARSET) - set(tokens))
    words = {w for w in [*BASE_WORDS, *extra_words] if WORD_RE.fullmatch(w) and len(w) > 1}
    tokens += sorted(words - set(tokens))
    if tokenizer == "space-words":
        tokens += sorted(" " + w for w in words | set(string.ascii_lowercase))
    assert len(set(tokens)) == len(tokens)
    assert set(string.digits) <= set(tokens)
    return {t: i for i, t in enumerate(tokens)}


def build_tokenizer(vocab: dict[str, int], tokenizer: str = "words"):
    """A ``PreTrainedTokenizerFast`` over ``vocab`` with the splitting rules (of ``tokenizer``, one of
    :data:`TOKENIZERS`) and chat template described above; ``vocab`` from :func:`build_vocab` with the same
    ``tokenizer``."""
    from transformers import PreTrainedTokenizerFast

    if tokenizer not in PIECE_PATTERNS:
        raise UserError(f"unknown tokenizer {tokenizer!r}; one of {', '.join(TOKENIZERS)}")
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(PIECE_PATTERNS[tokenizer]), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.add_special_tokens(SPECIAL_TOKENS)
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token=PAD,
        unk_token=UNK,
        eos_token=END,
        additional_special_tokens=[SYSTEM, USER, ASSISTANT],
        chat_template=CHAT_TEMPLATE,
        clean_up_tokenization_spaces=False,
        model_max_length=ModelSize.n_positions,
    )


def build_model(vocab_size: int, *, pad_id: int, eos_id: int, size: ModelSize = ModelSize(), seed: int = 0):
    """A freshly initialised ``GPT2LMHeadModel`` or ``LlamaForCausalLM`` (``size.architecture``); weights drawn from
    ``seed`` without touching the global RNG."""
    import torch
    from transformers import GenerationConfig, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    common = dict(vocab_size=vocab_size, bos_token_id=eos_id, eos_token_id=eos_id, pad_token_id=pad_id,
                  tie_word_embeddings=True)
    # no dropout anywhere: training draws no random numbers
    if size.architecture == "gpt2":
        model_class = GPT2LMHeadModel
        config = GPT2Config(n_positions=size.n_positions, n_embd=size.n_embd, n_layer=size.n_layer,
                            n_head=size.n_head, activation_function="gelu", resid_pdrop=0.0, embd_pdrop=0.0,
                            attn_pdrop=0.0, **common)
    elif size.architecture == "llama":
        model_class = LlamaForCausalLM
        config = LlamaConfig(max_position_embeddings=size.n_positions, hidden_size=size.n_embd,
                             intermediate_size=4 * size.n_embd, num_hidden_layers=size.n_layer,
                             num_attention_heads=size.n_head, num_key_value_heads=size.n_head, attention_dropout=0.0,
                             **common)
    else:
        raise UserError(f"unknown architecture {size.architecture!r}; choose one of {', '.join(ARCHITECTURES)}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = model_class(config)
    model.generation_config = GenerationConfig(eos_token_id=eos_id, pad_token_id=pad_id, bos_token_id=eos_id)
    return model


def build_default_model(path: str | os.PathLike | None = None, *, seed: int = 0,
                        size: ModelSize = ModelSize(), words: list[str] | None = None,
                        tokenizer: str = "words") -> Path:
    """Build the tokenizer and model and save them to ``path`` (created; existing files are overwritten).

    Args:
        path: the folder (``~`` expanded); ``None``: ``paths.model_dir("default")``.
        words: vocabulary words beyond the base list (default: :func:`env_words`).
        tokenizer: one of :data:`TOKENIZERS`.

    Returns:
        The folder, ready for ``AutoTokenizer.from_pretrained`` / ``AutoModelForCausalLM.from_pretrained``.
    """
    from agentgym_bench.rollout.hf import no_progress_bars  # noqa: PLC0415 - brings torch

    words = env_words()[0] if words is None else words
    built = build_tokenizer(build_vocab(words, tokenizer), tokenizer)
    model = build_model(len(built), pad_id=built.pad_token_id, eos_id=built.eos_token_id, size=size, seed=seed)
    path = model_dir("default") if path is None else expand(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Saved aside and moved in whole: a kill leaves no folder with a config and no weights, which a later run would
    # take for a model.
    staged = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    with no_progress_bars():
        built.save_pretrained(staged)
        model.save_pretrained(staged)
    return move_into(staged, path)


# -- command line ------------------------------------------------------------------------------------------------


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--path", "--out", dest="path", default=None,
                        help="folder to write the model to (--out, as eval names it, is the same; default: "
                        "$AGENTGYM_BENCH_HOME/models/default, now "
                        f"{model_dir('default')})")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace a model already in the folder with another (by default only an identical one, "
                        "the same command run again, is left as it is)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weight initialisation (default: 0)")
    parser.add_argument("--layers", type=int, default=ModelSize.n_layer,
                        help="transformer blocks (default: %(default)s)")
    parser.add_argument("--width", type=int, default=ModelSize.n_embd, help="hidden size (default: %(default)s)")
    parser.add_argument("--heads", type=int, default=ModelSize.n_head, help="attention heads (default: %(default)s)")
    parser.add_argument("--positions", type=int, default=ModelSize.n_positions,
                        help="maximum sequence length in tokens (default: %(default)s)")
    parser.add_argument("--architecture", choices=ARCHITECTURES, default=ModelSize.architecture,
                        help="gpt2: learned absolute positions; llama: rotary positions, gated MLP of 4x the width, "
                        "RMS norm (default: %(default)s)")
    parser.add_argument("--env", action="append", default=[], metavar="MODULE:ID",
                        help="also put the words of this agent env (its first observation, instructions, legend and "
                        "valid actions) in the vocabulary, e.g. an env of your own; repeatable. Without it a word "
                        "only your env uses is <|unk|> to the model, which then cannot write it")
    parser.add_argument("--tokenizer", choices=TOKENIZERS, default="words",
                        help="words: a space is a token of its own; space-words: a space before a word is part of "
                        "the word's token (' shoes'), so a copied sentence is one token a word (default: %(default)s)")


def same_files(a: Path, b: Path) -> bool:
    """Whether folders ``a`` and ``b`` hold the same file names with the same bytes."""
    names = sorted(p.name for p in a.iterdir())
    return names == sorted(p.name for p in b.iterdir()) and all(
        (a / n).is_file() and (b / n).is_file() and (a / n).read_bytes() == (b / n).read_bytes() for n in names)


def run(args: argparse.Namespace) -> int:
    from agentgym_bench.rollout.hf import load_model  # noqa: PLC0415 - brings torch

    size = ModelSize(n_layer=args.layers, n_embd=args.width, n_head=args.heads, n_positions=args.positions,
                     architecture=args.architecture)
    if size.n_embd % size.n_head:
        raise UserError(f"--width {size.n_embd} must be a multiple of --heads {size.n_head}")
    for env_id in args.env:
        check_env_id(env_id)
    words, skipped = env_words(args.env)
    if skipped:
        print(f"note: could not build {', '.join(skipped)}; their words are not in the vocabulary")
    path = model_dir("default") if args.path is None else expand(args.path)
    if path.exists() and not path.is_dir():
        raise UserError(f"--path {path} is a file: give a folder for the model")
    held = sorted(p.name for p in path.iterdir()) if path.is_dir() else []
    if held and not args.overwrite:  # an identical model (the command run again) is kept, anything else refused
        new = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
        try:
            build_default_model(new, seed=args.seed, size=size, words=words, tokenizer=args.tokenizer)
            if not same_files(new, path):
                raise UserError(f"{path} already holds {', '.join(held[:4])}{' ...' if len(held) > 4 else ''}, not "
                                "the model this command builds (a trained model, another seed or size, other "
                                "files): give another --path, or --overwrite to replace it")
        finally:
            shutil.rmtree(new, ignore_errors=True)
        done = "kept (the same command built it before)"
    else:
        done = "wrote"
        build_default_model(path, seed=args.seed, size=size, words=words, tokenizer=args.tokenizer)
    model, tokenizer = load_model(path)
    params = sum(p.numel() for p in model.parameters())
    print(f"{done} {path}: {type(model).__name__}, {params:,} parameters, vocabulary of {len(tokenizer)} tokens")
    return 0
