"""How a trainer's processes start: one rule for both trainers.

A plain launch runs one process. Under ``torchrun`` (``WORLD_SIZE`` in the environment) every process joins
torchrun's group (:func:`trainers.runtime.distributed.init_distributed`). A trainer whose config asks for several
processes on this machine (the warm start's ``processes``: two one-thread processes keep two CPU cores busier than one
two-thread process) gets them from :func:`launch`, which starts them as ``torchrun`` would: the same environment
variables (``MASTER_ADDR``, ``MASTER_PORT``, ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``) and the same group set-up, so
the trainer cannot tell the two apart. The RL loop is launched by ``torchrun`` itself
(``torchrun --nproc_per_node N -m trainers.cli CONFIG``).
"""

from __future__ import annotations

import importlib
import logging
import os
import socket
from collections.abc import Callable
from typing import Any, TypeVar

import torch  # noqa: TID253 - trainers/ runs on torch
import torch.multiprocessing as mp  # noqa: TID253 - trainers/ runs on torch

from agentgym_bench.errors import UserError
from agentgym_bench.processes import end_with_parent
from trainers.runtime.distributed import init_distributed, shutdown_distributed

C = TypeVar("C")
R = TypeVar("R")


def under_torchrun() -> bool:
    """Whether this process was started by ``torchrun`` (or by :func:`launch`)."""
    return "WORLD_SIZE" in os.environ


def launch(main: Callable[[C], R], config: C, processes: int, threads: int, name: str) -> R:
    """``main(config)`` on ``processes`` processes of ``threads`` torch threads each, in one ``torch.distributed``
    group on this machine (gloo; one process: no group); returns process 0's result. Under ``torchrun`` this process
    is one of torchrun's (``processes`` must then be its count) and the result is this process's.

    Raises:
        UserError: a process's error, as its last line, prefixed by ``name`` (the command).
    """
    if under_torchrun():
        world = int(os.environ["WORLD_SIZE"])
        if processes != world:
            raise UserError(f"{name}: processes={processes} under torchrun's {world}; leave processes unset (null) "
                            "or give the same number")
        return _run(main, config, threads)
    if processes == 1:
        torch.set_num_threads(threads)
        return main(config)
    results = mp.get_context("spawn").SimpleQueue()
    spawn_log = logging.getLogger("torch.multiprocessing.spawn")  # its "Terminating process N via signal SIGTERM"
    level = spawn_log.level  # when one process failed and the others are stopped says nothing to the user
    spawn_log.setLevel(logging.ERROR)
    try:
        mp.start_processes(_worker, args=(processes, free_port(), threads, main, config, results), nprocs=processes,
                           start_method="spawn")
    except mp.ProcessRaisedException as error:  # the process's own error, on one line
        raise UserError(f"{name}: {error_line(str(error))}") from None
    finally:
        spawn_log.setLevel(level)
    return results.get()


def error_line(traceback_text: str) -> str:
    """The last line of a process's traceback, without the exception's class where it is a :class:`UserError`
    (a message written for the user: ``agentgym_bench.errors.UserError: cannot load ...`` reads ``cannot load
    ...``); any other error keeps its class (``IndexError: ...``), which says it is a bug."""
    line = traceback_text.strip().splitlines()[-1]
    kind, sep, message = line.partition(": ")
    module, _, cls = kind.rpartition(".")
    try:
        user = bool(sep and module) and issubclass(getattr(importlib.import_module(module), cls), UserError)
    except (ImportError, AttributeError, TypeError):
        user = False
    return message if user else line


def free_port() -> int:
    """A free TCP port on the loopback, for a group's rendezvous."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(main: Callable[[C], R], config: C, threads: int) -> R:
    torch.set_num_threads(threads)
    init_distributed("cpu")
    try:
        result = main(config)
        shutdown_distributed(together=True)
        return result
    finally:
        shutdown_distributed()


def _worker(rank: int, processes: int, port: int, threads: int, main: Callable[[C], R], config: C,
            results: Any) -> None:
    end_with_parent()  # a launcher killed with SIGKILL leaves no worker training on in its folder
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), LOCAL_RANK=str(rank),
                      WORLD_SIZE=str(processes))
    result = _run(main, config, threads)
    if rank == 0:
        results.put(result)
