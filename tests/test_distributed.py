"""Multi-process training on CPU (gloo): gathered in-batch negatives equal one process on the whole batch."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
import torch

WORLD = 2
GROUPS = torch.tensor([0, 0, 1, 2, 2, 3, 1, -1])  # groups 1 and 2 have a row in each process


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _global_batch(rows: int = 8, dim: int = 6):
    g = torch.Generator().manual_seed(7)
    return [torch.randn(rows, dim, generator=g, dtype=torch.float64) for _ in range(3)]


def _collectives(rank: int) -> dict:
    """This rank's share of the losses, gradients and gathers; returns only plain tensors (no graph)."""
    from sentkit.objectives.gather import gather_ids, gather_with_grad
    from sentkit.objectives.negatives import same_group_pairs
    from sentkit.objectives.simcse import info_nce
    from sentkit.objectives.supervised import weighted_hard_negative_loss

    a, p, n = (x.chunk(WORLD)[rank].clone().requires_grad_() for x in _global_batch())
    p_all, offset = gather_with_grad(p)
    n_all, _ = gather_with_grad(n)
    loss = weighted_hard_negative_loss(a, p_all, n_all, 0.05, 2.0, offset)
    loss.backward()
    unsup_a = a.detach().clone().requires_grad_()
    unsup_b = p.detach().clone().requires_grad_()
    b_all, offset_b = gather_with_grad(unsup_b)
    unsup = info_nce(unsup_a, b_all, 0.05, offset_b)
    unsup.backward()
    # groups spanning both processes: each rank masks against the gathered group ids
    groups = GROUPS.chunk(WORLD)[rank]
    grouped_a = a.detach().clone().requires_grad_()
    exclude = same_group_pairs(groups, gather_ids(groups), offset_b)
    grouped = info_nce(grouped_a, b_all.detach(), 0.05, offset_b, exclude)
    grouped.backward()
    # uneven row counts (a short last batch): gathered rows keep their order and owner offsets
    ragged = torch.arange(3 + 2 * rank, dtype=torch.float64).unsqueeze(1) + 100 * rank
    gathered, ragged_offset = gather_with_grad(ragged)
    return {
        "loss": loss.item(),
        "grads": [a.grad, p.grad, n.grad],
        "unsup": unsup.item(),
        "unsup_grads": [unsup_a.grad, unsup_b.grad],
        "grouped": grouped.item(),
        "grouped_grad": grouped_a.grad,
        "offset": offset,
        "ragged": gathered.squeeze(1).tolist(),
        "ragged_offset": ragged_offset,
    }


def _rank_worker(rank: int, store_file: str, out_dir: str) -> None:
    """One spawned process. Teardown is ordered so no C++ thread outlives what it uses.

    The old worker rendezvoused over TCP: rank 0 then hosts the c10d store server on a thread of its own
    and may reach interpreter exit while rank 1 still talks to it during its own teardown; CI saw a worker
    abort about every other run (`terminate called without an active exception`, SIGABRT). That cause
    is inferred from the message (the abort did not reproduce in 20 standalone runs here).
    A FileStore has no server thread and no port to race for; the autograd graphs that hold the
    process group (`ctx.group` of the all-gather nodes) are freed inside `_collectives`, and a barrier
    keeps either rank from destroying the group while the other is still inside a collective.
    """
    import gc

    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{store_file}", rank=rank, world_size=WORLD)
    try:
        result = _collectives(rank)
        gc.collect()
        torch.save(result, os.path.join(out_dir, f"rank{rank}.pt"))
        dist.barrier()
    finally:
        dist.destroy_process_group()


def test_gathered_losses_and_gradients_equal_one_process_on_the_whole_batch(tmp_path):
    import torch.multiprocessing as mp

    from sentkit.objectives.simcse import info_nce
    from sentkit.objectives.supervised import weighted_hard_negative_loss

    mp.spawn(_rank_worker, args=(str(tmp_path / "store"), str(tmp_path)), nprocs=WORLD, join=True)
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(WORLD)]

    a, p, n = (x.clone().requires_grad_() for x in _global_batch())
    whole = weighted_hard_negative_loss(a, p, n, 0.05, 2.0)
    whole.backward()
    # mean of the per-process losses is the loss of the whole batch (equal shares)
    assert sum(r["loss"] for r in ranks) / WORLD == pytest.approx(whole.item(), rel=1e-10)
    # DDP averages gradients over processes, so each process's gradient / WORLD must equal the whole-batch one
    for i, full in enumerate([a.grad, p.grad, n.grad]):
        stitched = torch.cat([r["grads"][i] for r in ranks]) / WORLD
        torch.testing.assert_close(stitched, full, rtol=1e-9, atol=1e-12)
    assert [r["offset"] for r in ranks] == [0, 4]

    ua, ub = (x.clone().requires_grad_() for x in _global_batch()[:2])
    whole_unsup = info_nce(ua, ub, 0.05)
    whole_unsup.backward()
    assert sum(r["unsup"] for r in ranks) / WORLD == pytest.approx(whole_unsup.item(), rel=1e-10)
    for i, full in enumerate([ua.grad, ub.grad]):
        torch.testing.assert_close(torch.cat([r["unsup_grads"][i] for r in ranks]) / WORLD, full)

    from sentkit.objectives.negatives import same_group_pairs

    ga = _global_batch()[0].clone().requires_grad_()
    whole_grouped = info_nce(ga, _global_batch()[1], 0.05, exclude=same_group_pairs(GROUPS, GROUPS))
    whole_grouped.backward()
    assert sum(r["grouped"] for r in ranks) / WORLD == pytest.approx(whole_grouped.item(), rel=1e-10)
    torch.testing.assert_close(torch.cat([r["grouped_grad"] for r in ranks]) / WORLD, ga.grad)
    assert whole_grouped.item() < whole_unsup.item()  # the mask took terms out

    expected = [0.0, 1.0, 2.0] + [100.0 + k for k in range(5)]
    assert all(r["ragged"] == expected for r in ranks)
    assert [r["ragged_offset"] for r in ranks] == [0, 3]


def test_gather_is_identity_in_one_process():
    from sentkit.objectives.gather import gather_with_grad

    x = torch.randn(3, 2)
    out, offset = gather_with_grad(x)
    assert out is x and offset == 0


@pytest.mark.slow  # two fresh Python processes importing torch + transformers: ~35 s of CPU on 2 cores
def test_torchrun_two_processes_match_one_process_with_double_batch(tmp_path, data_root):
    """`sentkit train` under torchrun (DDP, gloo): 2 x batch 4 == 1 x batch 8 when dropout is off."""
    import yaml
    from safetensors.torch import load_file

    from sentkit.datasets.stsb import read_stsb
    from sentkit.training import TrainConfig, train
    from test_trainer import save_tiny_model

    model_dir = save_tiny_model(tmp_path / "tiny", dropout=False)
    sts = read_stsb(data_root / "sts" / "STSBenchmark" / "sts-train.csv")
    rows = ["anchor,positive,negative"]
    for i in range(24):  # real pairs; the hard negative is another pair's sentence
        rows.append(
            ",".join('"' + s.replace('"', "'") + '"' for s in (sts.sent1[i], sts.sent2[i], sts.sent2[i + 50]))
        )
    data = tmp_path / "triplets.csv"
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")

    common = dict(
        model=model_dir, objective="simcse-sup", data=str(data), lr=1e-3, max_steps=3, save_steps=3,
        logging_steps=1, eval_task="", progress=False, hard_negative_weight=2.0, pooling="mean",
    )  # fmt: skip
    ddp = TrainConfig(output_dir=str(tmp_path / "ddp"), batch_size=4, **common)
    (tmp_path / "ddp.yaml").write_text(yaml.safe_dump(ddp.to_dict()))
    env = dict(os.environ, OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(WORLD),
           "--master_port", str(_free_port()), "-m", "sentkit.cli", "train", "--config", str(tmp_path / "ddp.yaml")]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]

    single = train(TrainConfig(output_dir=str(tmp_path / "single"), batch_size=8, **common))
    ddp_results = json.loads((tmp_path / "ddp" / "results.json").read_text())
    assert ddp_results["world_size"] == WORLD
    # the run's mean loss is averaged over the processes: the same as one process on the whole batch
    single_loss = json.loads((single / "results.json").read_text())["train"]["train_loss"]
    assert ddp_results["train"]["train_loss"] == pytest.approx(single_loss, rel=1e-4)
    a = load_file(tmp_path / "ddp" / "checkpoint-3" / "model.safetensors")
    b = load_file(single / "checkpoint-3" / "model.safetensors")
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=2e-5, msg=key)
    start = load_file(os.path.join(model_dir, "model.safetensors"))
    moved = a["encoder.model.embeddings.word_embeddings.weight"] - start["embeddings.word_embeddings.weight"]
    assert moved.abs().max() > 1e-4  # the runs agree after real updates, not because nothing moved
    losses = [
        [
            h["loss"]
            for h in json.loads((run / "checkpoint-3" / "trainer_state.json").read_text())["log_history"]
            if "loss" in h
        ]
        for run in (tmp_path / "ddp", single)
    ]
    assert losses[0] == pytest.approx(losses[1], rel=1e-4)
