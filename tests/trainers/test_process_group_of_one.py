"""``torchrun --nproc_per_node 1`` with ``strategy: fsdp2`` joins a process group of one, so FSDP2 shards over it
(scripts/gpu_check.py runs such a run on a GPU; its CPU mode runs it with gloo)."""

import socket

import pytest
import torch

from trainers.runtime.distributed import init_distributed, shutdown_distributed


@pytest.fixture
def torchrun_env(monkeypatch):
    """The variables ``torchrun --nproc_per_node 1`` sets."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for key, value in {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": "0", "LOCAL_RANK": "0",
                       "WORLD_SIZE": "1"}.items():
        monkeypatch.setenv(key, value)


def test_one_process_joins_a_group_only_when_asked(torchrun_env):
    assert not init_distributed("cpu").grouped
    assert not torch.distributed.is_initialized()
    job = init_distributed("cpu", join_single=True)
    try:
        assert job.grouped and job.world_size == 1 and not job.enabled
        assert torch.distributed.is_initialized()
    finally:
        shutdown_distributed()


def test_a_plain_launch_stays_single_without_a_rendezvous(monkeypatch):
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    job = init_distributed("cpu", join_single=True)
    assert not job.grouped and not torch.distributed.is_initialized()
