"""``agentgym-bench eval``: play a benchmark suite with a policy and write the results file.

Examples::

    agentgym-bench eval --policy oracle
    agentgym-bench eval --policy hf:warmstart --prompt compact --history 0 --out runs/warmstart.json.gz
    agentgym-bench eval --policy openai:my-model@http://127.0.0.1:8000/v1 --max-new-tokens 256
    agentgym-bench eval --suite agentgym-ma-v2 --policy scripted --out runs/scripted-ma.json.gz
    agentgym-bench eval --suite agentgym-ma-v2 --policy hf:warmstart --out runs/warmstart-ma.json.gz
    agentgym-bench eval --policy openai:my-model@http://127.0.0.1:8000/v1 --episodes 3 --entries bandit
    agentgym-bench eval --policy openai:Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8000/v1 --action-format tool

Finished work is kept: each entry's results go to OUT.partial as soon as the entry finishes, and running the same
command again resumes from there. The file is checked first: the same settings (the ones that differ are named, with
both values), exactly each entry's seeds, and every kept episode replayed through a fresh env (env steps, no model
call); a file that fails is refused with one line saying how to start again (rm OUT.partial). An existing OUT, a
finished results file, is never replaced unless --overwrite is given (then only once the new run has finished); a
missing folder of OUT is made, with a note. A failing endpoint ends the run with one line naming the URL, the HTTP
status and what to change; the finished entries stay in OUT.partial. Before anything is played, an openai: policy's
model name is checked against the endpoint's /v1/models, and each entry's first prompt is sent once (a prompt over
the model's context is refused there). Where /v1/models reports the model's context (max_model_len, as vLLM and
serve do), a --max-new-tokens that leaves no room for a prompt is refused before any request, and each first
prompt's tokens (the answer's usage) plus --max-new-tokens are checked against it. --episodes and --entries make a
quick check: its results file says so, and `submit` refuses it.

A local model (hf:, vllm:) is played as this command's flags say, and on single-agent suites its record is checked
against them: where its warm start (warmstart.json), its trainer run (config.yaml, as the run validated) or its board
entry used another prompt template, history window or reply budget, a note says so first and names the flags that
match (on the validation suite the published checkpoint scores 0.063 under the defaults and 0.577 with --prompt
compact --history 0 --max-new-tokens 16).

--action-format tool offers each env's actions as one OpenAI function, take_actions, and reads the replies as tool
calls (the request's tools and the answer's tool_calls through an openai: endpoint, the chat template's tools for
hf: and vllm: models); it is recorded in every entry's env_kwargs, and boards accept it on any single-agent entry.

On the two-player suites (agentgym-ma-v2, agentgym-ma-v2-validation) the policy plays Bargain against the suite's
opponents and itself; `random` and `scripted` are Bargain's model-free policies there, there is no `oracle`, and no
--prompt (the game writes its own text).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agentgym_bench.agent.tools import ACTION_FORMATS
from agentgym_bench.benchmark.evaluate import (
    check_entries_start,
    check_first_prompts_fit,
    evaluate_by_entry,
    probe_first_prompts,
    request_budget,
)
from agentgym_bench.benchmark.kinds import kind_of, suite_policy
from agentgym_bench.benchmark.provenance import settings_note, training_record, with_start
from agentgym_bench.benchmark.results import Results, read_results, write_results
from agentgym_bench.benchmark.resume import partial_path, resumed
from agentgym_bench.benchmark.scores import format_summary, summarize
from agentgym_bench.benchmark.suites import (
    DEFAULT_SUITE,
    Suite,
    SuiteError,
    available_suites,
    check_ceilings,
    load_suite,
    quick_check,
    quick_text,
)
from agentgym_bench.errors import UserError
from agentgym_bench.flags import number_arg
from agentgym_bench.rollout.endpoint import check_model, what_to_change
from agentgym_bench.rollout.openai_compat import GenerationError
from agentgym_bench.rollout.specs import SPEC_HELP, Sampling, endpoint_parts, parse_spec


def history_arg(text: str) -> int | None:
    if text == "full":
        return None
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not 'full' or an integer >= 0")
    return value


def prompt_arg(text: str) -> str | dict[str, str]:
    """``NAME`` for every entry, or ``ENTRY=NAME,ENTRY=NAME`` per entry."""
    if "=" not in text:
        return text
    pairs = [p.split("=", 1) for p in text.split(",") if p]
    return {k.strip(): v.strip() for k, v in pairs}


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = __doc__.split("Examples::", 1)[1]
    parser.add_argument("--policy", required=True, metavar="SPEC",
                        help=f"who plays: {SPEC_HELP}; on two-player suites also scripted (no oracle)")
    parser.add_argument("--suite", default=DEFAULT_SUITE,
                        help=f"bundled suite ({', '.join(available_suites())}) or a suite file (default: %(default)s)")
    parser.add_argument("--out", default="results.json.gz",
                        help="results file to write; an existing one is refused unless --overwrite (a missing folder "
                        "is made, with a note) (default: %(default)s)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing --out file (only once the new run has finished: until then the old "
                        "file stays as it was)")
    parser.add_argument("--prompt", type=prompt_arg, default=None, metavar="NAME|ENTRY=NAME,...",
                        help="prompt template, for every entry or per entry (default: each entry's first, 'ragen')")
    parser.add_argument("--action-format", choices=ACTION_FORMATS, default=None,
                        help="how replies name their actions: 'answer' (RAGEN's <answer> tags, the default) or 'tool' "
                        "(a take_actions tool call; recorded in each entry's env_kwargs)")
    parser.add_argument("--history", type=history_arg, default=None, metavar="full|K",
                        help="past turns kept in the prompt: 'full' (default) or the last K (0: current state only)")
    parser.add_argument("--temperature", type=number_arg(float, 0, what="a number"), default=1.0,
                        help="sampling temperature (default: %(default)s)")
    parser.add_argument("--top-p", type=number_arg(float, 0, above=True, high=1, what="a number"), default=1.0,
                        help="nucleus sampling threshold (default: %(default)s)")
    parser.add_argument("--max-new-tokens", type=number_arg(int, 1, what="an integer"), default=32,
                        help="reply budget in tokens (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default: %(default)s)")
    parser.add_argument("--device", default="cpu", help="torch device of hf: models (default: %(default)s)")
    parser.add_argument("--timeout", type=number_arg(float, 0, above=True, what="a number of seconds"), default=60.0,
                        help="seconds per request attempt of openai: endpoints (default: %(default)s)")
    parser.add_argument("--max-concurrency", type=number_arg(int, 1, what="an integer"), default=8,
                        help="requests in flight to an openai: endpoint (default: %(default)s)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="VAR",
                        help="environment variable holding an openai: endpoint's API key, sent as the bearer key "
                        "(default: %(default)s; none sent when it is unset)")
    parser.add_argument("--trained-by", metavar="FOLDER", default=None,
                        help="record how the model was trained: a trainer run folder (its config, cost and curves: "
                        "config.yaml, summary.json, metrics.jsonl; with the training of the model it started from, "
                        "its pretrain), a warm-start folder (warmstart.json), or a board's published model folder "
                        "(leaderboards/BOARD/models/NAME, weights only: the record of the board entry evaluated from "
                        "it)")
    parser.add_argument("--episodes", type=int, default=None, metavar="N",
                        help="quick check: only the first N episodes of every entry (not submittable)")
    parser.add_argument("--entries", nargs="+", default=None, metavar="NAME",
                        help="quick check: only these entries of the suite (not submittable)")
    parser.add_argument("--selection", metavar="TEXT", default=None,
                        help="with --trained-by: which checkpoint this is and how it was chosen, decided on "
                        "validation before reading the test suite (e.g. 'the final checkpoint of the recipe')")


def check_out(out: Path, overwrite: bool) -> None:
    """Refuse, before any work, an ``--out`` that is a folder, or a file that exists (a finished results file is never
    replaced by accident) unless ``overwrite``."""
    if out.is_dir():
        raise UserError(f"--out {out} is a folder: give a file name, e.g. --out {out / 'results.json.gz'}")
    if out.exists() and not overwrite:
        raise UserError(f"{out} already exists: give another --out, or add --overwrite to replace it (it is replaced "
                        "when the new run finishes)")


def failure(err: GenerationError, partial: Path) -> UserError:
    """One line for a run stopped by its endpoint: what failed, what to change, what was kept."""
    hint = what_to_change(err)
    kept = read_results(partial).entries if partial.is_file() else []
    keep = (f"{len(kept)} finished entries kept in {partial} ({', '.join(e.name for e in kept)}): run the same "
            "command again to resume" if kept else "no entry had finished")
    return UserError(f"{err}{f' — {hint}' if hint else ''}; {keep}")


def suite_notes(suite: Suite, spec: str) -> None:
    """Before anything is played: an archived suite says that its board takes nothing new; a suite file whose
    ``oracle_success`` is not the oracle's on its episodes (:func:`check_ceilings`, the oracle played on them) is
    warned of, since every entry's ``/oracle`` and the score are divided by it (``submit`` refuses such a suite)."""
    if suite.superseded_by:  # its board re-verifies what it holds and takes nothing new
        print(f"note: {suite.name} is archived (superseded by {suite.superseded_by}): its board takes no new files")
    if spec in available_suites():  # the bundled suites' ceilings are the tests' to check
        return
    try:
        check_ceilings(suite)
    except SuiteError as err:
        print(f"warning: {err}; until then this run's /oracle and score are divided by the stated values",
              file=sys.stderr)
    except Exception:  # noqa: BLE001 - a game without an oracle, a server not running: no ceiling to check here
        pass  # (an entry that cannot start is named by check_entries_start)


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.seed < 2**64:
        raise UserError(f"--seed {args.seed}: a sampling seed is 0 to 2**64 - 1 (what torch's generators take, "
                        "and what a results file may record)")
    full = load_suite(args.suite)
    suite_notes(full, args.suite)
    suite, quick = quick_check(full, args.episodes, args.entries)
    kind = kind_of(suite)
    kind.check_options(suite, args.prompt, args.action_format, "--action-format")  # before any work
    trainer, training = training_record(args.trained_by) if args.trained_by else (None, None)
    if trainer is not None:
        trainer = with_start(trainer, args.trained_by)  # what the model it started from was trained on
    if args.selection is not None:
        if trainer is None:
            raise UserError("--selection describes how the trained model was chosen: give --trained-by too")
        trainer["selection"] = args.selection
    out = Path(args.out)
    check_out(out, args.overwrite)  # before a model is loaded
    prompts = kind.prompts(suite, args.prompt)
    check_entries_start(suite, prompts, args.action_format)
    sampling = Sampling(args.temperature, args.top_p, args.max_new_tokens, args.seed)
    policy, record = suite_policy(args.policy, suite, sampling, device=args.device, timeout=args.timeout,
                                  max_concurrency=args.max_concurrency, api_key_env=args.api_key_env)
    context = None
    if record["kind"] == "openai":
        url = endpoint_parts(parse_spec(args.policy)[1] or "")[1]
        context = check_model(url, record["model"], timeout=min(args.timeout, 10.0), api_key_env=args.api_key_env)
    partial = partial_path(out)
    note = settings_note(args.policy, prompts, args.history, args.max_new_tokens)
    if note:
        print(note)
    metadata = {"policy": {**record, "history": args.history}, "trainer": trainer,
                **({"quick_check": quick} if quick else {})}
    done = resumed(partial, suite, metadata, prompts, args.action_format)
    if record["kind"] == "openai" and prompts:  # each entry's first prompt (a game that writes its own has none)
        probed = probe_first_prompts(policy, suite, prompts, args.action_format, context=context,
                                     max_new_tokens=args.max_new_tokens)
        print(f"the endpoint: {request_budget(suite, probed, args.max_new_tokens)}")
    elif prompts:  # a local model: each first prompt against its positions
        check_first_prompts_fit(policy, suite, prompts, args.action_format)
    if not out.parent.exists():
        out.parent.mkdir(parents=True)
        print(f"made the folder {out.parent} for --out {out}")
    what, count = kind.name, len(suite.entries)
    print(f"{args.policy} on {suite.name} v{suite.version}: {count} entr{'y' if count == 1 else 'ies'}, "
          f"{suite.episodes} {what}"
          f"{' (a quick check: not submittable)' if quick else ''}")
    if done is not None:
        kept = sum(len(e.episodes) for e in done.entries)
        print(f"resuming from {partial}: {', '.join(e.name for e in done.entries)} kept ({kept} {what}, checked by "
              "replay)")

    def keep(results: Results) -> None:
        if quick:
            results.metadata["quick_check"] = quick
        write_results(results, partial)

    try:
        results = evaluate_by_entry(policy, suite, record, done=done, on_entry=keep, prompt=args.prompt,
                                    action_format=args.action_format, history=args.history, trainer=trainer,
                                    training_compute=training, progress=True)
    except GenerationError as err:
        raise failure(err, partial) from None
    except KeyboardInterrupt:
        if partial.is_file():
            print(f"finished entries kept in {partial}: run the same command again to resume", file=sys.stderr)
        raise
    keep(results)
    path = write_results(results, out)
    partial.unlink(missing_ok=True)
    print(format_summary(summarize(results, suite)))
    compute = results.metadata["compute"]
    print(f"wrote {path} ({compute['episodes']} {what}, {compute['env_steps']} turns, {compute['wall_time_s']:.0f}s); "
          + (f"a quick check ({quick_text(quick)}): not for a board" if quick
             else f"{suite.name} is a {suite.split} suite: for tuning and choosing, not for a board" if suite.split
             != "test" else f"submit it with: agentgym-bench submit {path} --name NAME"
             + ("" if args.suite in available_suites() else f" --board BOARD --suite {args.suite}")))
    return 0
