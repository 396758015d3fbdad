#!/usr/bin/python3
"""End-to-end check of data-parallel training (issue 12) on the host device:
several `dlrt train` processes over loopback (Gloo).

--check losses (per --model, mlp or gpt): the model, exported by PyTorch, is
compiled once with `dlc --train --data-parallel` at the per-rank batch B,
and trained for 5 steps with `--no-shuffle` on W ranks under
`dlrt launch` (each W of --ranks, OMP_NUM_THREADS=1 per rank). Every loss
rank 0 logs (the mean over the ranks) must be within 1e-5 relative of

  * single-process training on the global batch: the same model compiled
    *without* --data-parallel at batch B*W and trained by one `dlrt train`
    on the same data. Batch size is compiled in, so this is a second package;
    it has no collectives at all, which makes it the honest reference (the
    data-parallel package on one rank would share the pass under test);
  * PyTorch DistributedDataParallel on the gloo backend (Debian's torch, 2
    ranks via torch.multiprocessing), from the same initial weights, on the
    same shards (rank r takes samples k*B*W + r, + r + W, ... of global
    batch k, as DistributedSampler), with the same SGD lr and momentum.

It also checks that ranks other than 0 print nothing, that with 2 ranks
`torchrun --no_python` and `mpirun -n 2` log the same losses as `dlrt launch`
(--launchers), and that a checkpoint of 3 steps on 2 ranks resumed on 4
ranks logs the same losses as one process resuming it at batch 4B (the data
position is global, in samples).

--check kill (and hang): --world ranks (default 2) started directly (not
under a launcher, which would end the survivors itself) with --comm-timeout
10 and a checkpoint every epoch of 4 steps; once a checkpoint exists, rank
--victim (default 1) is killed with SIGKILL. Every other rank must exit
with status 1 within the timeout (plus 5 s of slack for a loaded machine),
printing one line `dlrt: error: ...` naming the collective and the killed
rank; the checkpoint must then load (`dlrt train --resume` one more step).
--check hang is the same with SIGSTOP: the victim hangs with its
connections open, and the others must fail after --comm-timeout with the
collective "timed out after 10 s", no sooner and at most 5 s later.

--check environment: a wrong environment (a bad DLRT_COMM_TIMEOUT, RANK >=
WORLD_SIZE, the port taken, no rank 0, a missing rank 1, torchrun's agent
store on port 65535, ranks that disagree on WORLD_SIZE) is one line `dlrt: error: ...` naming the cause and
exit status 1, within --comm-timeout 2 where waiting is involved.

Why 1e-5: all of these are fp32 computations of the same mathematics that
differ only in the order of floating-point sums (the gradient of a global
batch summed as W partial means, or in one GEMM), whose relative effect
after 5 momentum-SGD steps on these small models is ~1e-7..1e-6.
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(__file__))
from arch_models import distinct_layer_norms, make_gpt  # noqa: E402
from models import make_mlp  # noqa: E402
from safetensors_np import read_safetensors  # noqa: E402

REL_TOL = 1e-5
STEPS = 5
PER_RANK_BATCH = {"mlp": 8, "gpt": 4}
LR = {"mlp": 0.05, "gpt": 0.05}
MOMENTUM = 0.9
KILL_TIMEOUT = 10  # --comm-timeout of the kill check, seconds
KILL_SLACK = 5     # seconds beyond it that a loaded 2-core machine may take


def log(msg):
    print(msg, flush=True)


def run(cmd, env=None, check=True, timeout=300):
    """Runs |cmd|; returns (status, stdout, stderr)."""
    log("+ " + " ".join(cmd))
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.exit(f"FAIL: did not finish within {timeout} s: {' '.join(cmd)}")
    if check and r.returncode != 0:
        sys.exit(f"FAIL: exit status {r.returncode}: {' '.join(cmd)}\n"
                 f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}")
    return r.returncode, r.stdout, r.stderr


def free_port(span=1):
    """A TCP port P such that P .. P+span-1 are free now (torchrun needs
    MASTER_PORT for its agent and MASTER_PORT + 1 for dlrt's store)."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + span > 65535:
            continue
        ok = True
        for p in range(port + 1, port + span):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
        if ok:
            return port
    sys.exit("FAIL: no free TCP port")


def rank_env(**extra):
    env = dict(os.environ)
    # One OpenMP thread per rank: the ranks share the machine's cores.
    env["OMP_NUM_THREADS"] = "1"
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
              "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
              "TORCHELASTIC_USE_AGENT_STORE", "DLRT_COMM_TIMEOUT"):
        env.pop(k, None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def make_model(name, batch, samples):
    """(model, x, y) with seeded weights and |samples| seeded samples; the
    export uses |batch| rows of x."""
    if name == "gpt":
        model, _, _ = make_gpt(batch)
        gen = torch.Generator().manual_seed(22)
        # Untied in the package as in the PyTorch model DDP trains.
        distinct_layer_norms(model)
        x = torch.randint(0, 50, (samples, 8), generator=gen)
        y = torch.randint(0, 50, (samples, 8), generator=gen)
    else:
        model = make_mlp()
        gen = torch.Generator().manual_seed(23)
        x = torch.rand(samples, 1, 28, 28, generator=gen)
        y = torch.randint(0, 10, (samples,), generator=gen)
    return model, x, y


def export(model, x, path):
    # Neither model has Dropout or BatchNorm: eval and training exports agree.
    torch.onnx.export(model.eval(), x, path, input_names=["input"],
                      output_names=["logits"], opset_version=17,
                      do_constant_folding=False)


def read_losses(path):
    with open(path) as f:
        return [json.loads(line)["loss"] for line in f if line.strip()]


def compare(tag, ours, ref, tol=REL_TOL):
    """Prints a line per step; True when every step is within |tol|."""
    if len(ours) != len(ref):
        log(f"MISMATCH: {tag}: {len(ours)} losses, expected {len(ref)}")
        return False
    ok = True
    for i, (a, b) in enumerate(zip(ours, ref), 1):
        rel = abs(a - b) / abs(b)
        good = rel <= tol
        ok = ok and good
        log(f"  {tag} step {i}: {a:.9f} vs {b:.9f}  rel {rel:.2e}  "
            f"{'ok' if good else 'MISMATCH'}")
    return ok


# ------------------------------------------------------------------ DDP


def _ddp_worker(rank, world, port, name, x, y, batch, lr, steps, state, out):
    torch.set_num_threads(1)
    torch.distributed.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    model, _, _ = make_model(name, batch, 1)
    model.load_state_dict(state)
    model.train()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=lr, momentum=MOMENTUM)
    g = batch * world
    losses = []
    for k in range(steps):
        idx = [k * g + rank + j * world for j in range(batch)]
        opt.zero_grad()
        logits = ddp(x[idx])
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                           y[idx].reshape(-1))
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        torch.distributed.all_reduce(mean)
        losses.append(mean.item() / world)
    if rank == 0:
        with open(out, "w") as f:
            json.dump(losses, f)
    torch.distributed.destroy_process_group()


def ddp_losses(name, x, y, batch, world, steps, state, workdir):
    out = os.path.join(workdir, f"ddp-{world}.json")
    if os.path.exists(out):
        os.remove(out)
    torch.multiprocessing.spawn(
        _ddp_worker, args=(world, free_port(), name, x, y, batch, LR[name], steps,
                           state, out), nprocs=world, join=True)
    with open(out) as f:
        return json.load(f)


# ---------------------------------------------------------------- checks


def only_rank0_prints(tag, stdout, stderr):
    others = [line for line in (stdout + stderr).splitlines()
              if re.match(r"\[rank [1-9]\d*\]", line)]
    if others:
        log(f"MISMATCH: {tag}: ranks other than 0 printed:\n" + "\n".join(others[:5]))
        return False
    log(f"ok: {tag}: only rank 0 printed")
    return True


def dlrt_train_args(args, pkg, data, extra):
    return ["train", pkg, "--data", data, "--no-shuffle", "--device", "host",
            "--log-every", "1"] + extra


def launch(args, world, pkg, data, jsonl, extra=(), launcher="dlrt"):
    """Trains |pkg| on |world| ranks started by |launcher|; returns
    (losses, stdout, stderr)."""
    if os.path.exists(jsonl):
        os.remove(jsonl)
    train = dlrt_train_args(args, pkg, data, ["--log-jsonl", jsonl] + list(extra))
    if launcher == "dlrt":
        cmd = [args.dlrt, "launch", "--nproc-per-node", str(world), "--master-port",
               str(free_port()), "--"] + ["dlrt"] + train
        env = rank_env()
    elif launcher == "torchrun":
        # Debian's torch 1.13 under Python 3.11 crashes in its own output
        # redirection unless --redirects/--tee are given.
        cmd = ["/usr/bin/python3", "-m", "torch.distributed.run", "--nproc_per_node",
               str(world), "--master_port", str(free_port(2)), "--no_python",
               "--redirects", "1", "--tee", "1", args.dlrt] + train
        env = rank_env()
    else:
        cmd = ["mpirun", "-n", str(world), "--allow-run-as-root", "--oversubscribe",
               "-x", "OMP_NUM_THREADS", "-x", "MASTER_PORT", args.dlrt] + train
        env = rank_env(MASTER_PORT=free_port())
    _, out, err = run(cmd, env=env)
    return read_losses(jsonl), out, err


def check_losses(args, w, x, y, state):
    name, b = args.model, PER_RANK_BATCH[args.model]
    ok = True
    onnx_path = w(f"{name}.onnx")
    base = [args.dlc, onnx_path, "--train", "--loss", "softmax-cross-entropy",
            "--optimizer", "sgd", "--lr", repr(LR[name]), "--momentum", repr(MOMENTUM),
            "--quiet"]
    dp = w("dp.dlcp")
    run(base + ["--batch-size", str(b), "-o", dp] + args.dp_flag)
    data = w("data.npz")
    np.savez(data, input=x.numpy(), labels=y.numpy())

    dlrt_runs = {}
    for world in args.ranks:
        ref_pkg = w(f"single-{world}.dlcp")
        run(base + ["--batch-size", str(b * world), "-o", ref_pkg])
        ref_jsonl = w(f"single-{world}.jsonl")
        if os.path.exists(ref_jsonl):
            os.remove(ref_jsonl)
        run([args.dlrt] + dlrt_train_args(args, ref_pkg, data,
                                          ["--steps", str(STEPS), "--log-jsonl", ref_jsonl]),
            env=rank_env())
        single = read_losses(ref_jsonl)
        t = time.time()
        ours, out, err = launch(args, world, dp, data, w(f"dp-{world}.jsonl"),
                                ["--steps", str(STEPS)])
        log(f"{world} ranks under dlrt launch: {time.time() - t:.1f} s")
        dlrt_runs[world] = ours
        ok &= only_rank0_prints(f"{world} ranks", out, err)
        log(f"{name}, {world} ranks (batch {b} per rank) vs one process at batch {b * world}:")
        ok &= compare(f"W={world} vs single", ours, single)
        if world == 2:
            ddp = ddp_losses(name, x, y, b, world, STEPS, state, args.workdir)
            log(f"{name}, 2 ranks vs PyTorch DDP (gloo, 2 ranks):")
            ok &= compare("W=2 vs DDP", ours, ddp)

    if 2 in dlrt_runs:
        for launcher in args.launchers:
            if launcher == "dlrt":
                continue
            t = time.time()
            losses, out, err = launch(args, 2, dp, data, w(f"dp-2-{launcher}.jsonl"),
                                      ["--steps", str(STEPS)], launcher=launcher)
            log(f"2 ranks under {launcher}: {time.time() - t:.1f} s")
            ok &= compare(f"{launcher} vs dlrt launch", losses, dlrt_runs[2])
            # These launchers do not tag lines with our "[rank R]": rank 0
            # alone announces its device.
            announced = (out + err).count("device: ")
            log(f"{'ok' if announced == 1 else 'MISMATCH'}: {launcher}: {announced} "
                f"'device:' line(s) (expected 1: only rank 0 prints)")
            ok &= announced == 1

    if args.resume and 2 in args.ranks and 4 in args.ranks:
        # 3 steps on 2 ranks, then steps 4 and 5 on 4 ranks from sample 6B,
        # against one process at batch 4B resuming the same checkpoint.
        ckpt = w("resume-2.st")
        if os.path.exists(ckpt):
            os.remove(ckpt)
        launch(args, 2, dp, data, w("resume-a.jsonl"), ["--steps", "3", "--save", ckpt])
        meta = read_safetensors(ckpt)[1]
        pos_ok = meta.get("step") == "3" and meta.get("epoch_position") == str(3 * 2 * b)
        log(f"{'ok' if pos_ok else 'MISMATCH'}: checkpoint of 2 ranks after 3 steps: "
            f"step {meta.get('step')}, epoch_position {meta.get('epoch_position')} "
            f"(expected 3 and {3 * 2 * b})")
        ok &= pos_ok
        resumed, _, _ = launch(args, 4, dp, data, w("resume-4.jsonl"),
                               ["--steps", str(STEPS), "--resume", ckpt])
        ref_jsonl = w("resume-single.jsonl")
        if os.path.exists(ref_jsonl):
            os.remove(ref_jsonl)
        run([args.dlrt] + dlrt_train_args(args, w("single-4.dlcp"), data,
                                          ["--steps", str(STEPS), "--resume", ckpt,
                                           "--log-jsonl", ref_jsonl]), env=rank_env())
        log("resumed on 4 ranks vs one process at batch 4B resuming the same checkpoint:")
        ok &= compare("resume W=4 vs single", resumed, read_losses(ref_jsonl))
    return ok


def check_kill(args, w, x, y, hang):
    """Starts args.world ranks, stops or kills rank args.victim once a
    checkpoint exists, and checks every survivor's exit and message."""
    name, b = args.model, PER_RANK_BATCH[args.model]
    world, victim = args.world, args.victim
    onnx_path = w(f"{name}.onnx")
    dp = w("dp.dlcp")
    run([args.dlc, onnx_path, "--train", "--loss", "softmax-cross-entropy",
         "--optimizer", "sgd", "--lr", repr(LR[name]), "--momentum", repr(MOMENTUM),
         "--quiet", "--batch-size", str(b), "-o", dp] + args.dp_flag)
    # 4 global batches per epoch: a checkpoint every 4 steps.
    data = w("kill.npz")
    n = 4 * world * b
    np.savez(data, input=x[:n].numpy(), labels=y[:n].numpy())
    ckpt = w("kill.st")
    for f in (ckpt, w("kill.jsonl")):
        if os.path.exists(f):
            os.remove(f)
    port = free_port()
    procs = []
    for rank in range(world):
        env = rank_env(RANK=rank, WORLD_SIZE=world, MASTER_ADDR="127.0.0.1",
                       MASTER_PORT=port)
        cmd = [args.dlrt] + dlrt_train_args(
            args, dp, data, ["--steps", "1000000", "--save", ckpt,
                             "--log-jsonl", w("kill.jsonl"),
                             "--comm-timeout", str(KILL_TIMEOUT)])
        log(f"+ RANK={rank} WORLD_SIZE={world} MASTER_PORT={port} " + " ".join(cmd))
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    ok = True
    deadline = time.time() + 120
    while not os.path.exists(ckpt):
        if time.time() > deadline or any(p.poll() is not None for p in procs):
            for p in procs:
                p.kill()
            outs = [p.communicate() for p in procs]
            sys.exit(f"FAIL: no checkpoint appeared while the ranks trained: {outs}")
        time.sleep(0.05)
    time.sleep(0.5)  # well into training
    if any(p.poll() is not None for p in procs):
        sys.exit(f"FAIL: a rank exited by itself: {[p.poll() for p in procs]}")
    how = "stopped (SIGSTOP)" if hang else "killed (SIGKILL)"
    procs[victim].send_signal(signal.SIGSTOP if hang else signal.SIGKILL)
    killed = time.time()
    survivors = [r for r in range(world) if r != victim]
    results = {}
    for r in survivors:
        try:
            left = max(0.1, killed + KILL_TIMEOUT + KILL_SLACK - time.time())
            out, err = procs[r].communicate(timeout=left)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
                p.communicate()
            sys.exit(f"FAIL: rank {r} still ran {KILL_TIMEOUT + KILL_SLACK} s after rank "
                     f"{victim} was {how} (--comm-timeout {KILL_TIMEOUT})")
        results[r] = (procs[r].returncode, time.time() - killed, err)
    if hang:
        procs[victim].kill()
    procs[victim].communicate()
    # A dead rank's connections close, and the store names it; a stopped
    # one keeps them open, so the collective times out (no rank to name).
    cause = (r"timed out after %d s" % KILL_TIMEOUT) if hang else r"rank %d\b" % victim
    for r, (status, elapsed, err) in results.items():
        log(f"rank {r} exited with status {status} {elapsed:.2f} s after rank {victim} "
            f"was {how}")
        ok &= status == 1
        log(f"{'ok' if status == 1 else 'MISMATCH'}: rank {r}: exit status {status} "
            f"(expected 1)")
        lines = [line for line in err.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("dlrt: error:")]
        named = (len(errors) == 1 and re.search(cause, errors[0]) and
                 re.search(r"all_reduce|all_gather|broadcast|barrier", errors[0]))
        log(f"{'ok' if named else 'MISMATCH'}: rank {r}: one 'dlrt: error:' line naming "
            f"the collective and '{cause}': {errors or lines}")
        ok &= bool(named)
        within = elapsed <= KILL_TIMEOUT + KILL_SLACK
        if hang:
            within = within and elapsed >= KILL_TIMEOUT - 1
        log(f"{'ok' if within else 'MISMATCH'}: rank {r}: {elapsed:.2f} s (at most "
            f"{KILL_TIMEOUT} + {KILL_SLACK}"
            f"{'; a hang is detected by the timeout' if hang else ''})")
        ok &= within
    # The checkpoint saved before is intact: it parses and dlrt resumes it.
    tensors, meta = read_safetensors(ckpt)
    step = int(meta.get("step", "0"))
    intact = step >= 4 and step % 4 == 0 and len(tensors) > 0
    log(f"{'ok' if intact else 'MISMATCH'}: checkpoint at step {step} with "
        f"{len(tensors)} tensors")
    ok &= intact
    status, out, err = run([args.dlrt] + dlrt_train_args(
        args, dp, data, ["--steps", str(step + 1), "--resume", ckpt]), env=rank_env(),
        check=False)
    resumed = status == 0 and f"resumed from {ckpt} at step {step}" in out
    log(f"{'ok' if resumed else 'MISMATCH'}: one process resumes it "
        f"(status {status}){'' if resumed else chr(10) + out + err}")
    ok &= resumed
    return ok


def check_environment(args, w, x, y):
    """A wrong environment is one clear line and exit status 1, never a hang:
    each case runs one rank alone with --comm-timeout 2."""
    name, b = args.model, PER_RANK_BATCH[args.model]
    dp = w("dp.dlcp")
    run([args.dlc, w(f"{name}.onnx"), "--train", "--loss", "softmax-cross-entropy",
         "--optimizer", "sgd", "--lr", repr(LR[name]), "--quiet", "--batch-size", str(b),
         "-o", dp] + args.dp_flag)
    data = w("env.npz")
    np.savez(data, input=x[:4 * b].numpy(), labels=y[:4 * b].numpy())
    train = [args.dlrt] + dlrt_train_args(args, dp, data, ["--steps", "2"])
    busy = socket.socket()
    busy.bind(("0.0.0.0", 0))
    busy.listen()
    taken = busy.getsockname()[1]
    unused = free_port()
    cases = [
        ("bad DLRT_COMM_TIMEOUT", dict(DLRT_COMM_TIMEOUT="abc"), [],
         r"DLRT_COMM_TIMEOUT='abc' is not a positive number of seconds"),
        ("rank beyond the world", dict(RANK=2, WORLD_SIZE=2), [],
         r"RANK=2 is not below WORLD_SIZE=2"),
        ("port taken", dict(RANK=0, WORLD_SIZE=2, MASTER_PORT=taken), [],
         r"port %d is taken" % taken),
        ("no rank 0", dict(RANK=1, WORLD_SIZE=2, MASTER_PORT=unused),
         ["--comm-timeout", "2"], r"cannot reach the rendezvous at 127\.0\.0\.1:%d" % unused),
        ("no rank 1", dict(RANK=0, WORLD_SIZE=2, MASTER_PORT=unused),
         ["--comm-timeout", "2"], r"rank\(s\) 1 did not join within 2 s"),
        ("torchrun's agent store at 65535",
         dict(RANK=0, WORLD_SIZE=2, MASTER_PORT=65535, TORCHELASTIC_USE_AGENT_STORE="True"),
         [], r"MASTER_PORT \+ 1"),
    ]
    ok = True
    for what, env, extra, pattern in cases:
        t = time.time()
        status, out, err = run(train + extra, env=rank_env(**env), check=False, timeout=60)
        secs = time.time() - t
        lines = [line for line in err.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("dlrt: error:")]
        good = (status == 1 and len(errors) == 1 and re.search(pattern, errors[0])
                and secs < 20)
        log(f"{'ok' if good else 'MISMATCH'}: {what}: status {status} after {secs:.1f} s: "
            f"{errors or lines}")
        ok &= bool(good)
    busy.close()

    # Ranks that disagree on the world size: rank 1 is refused by rank 0's
    # store at once; rank 0 then misses rank 1 until the timeout.
    port = free_port()
    t = time.time()
    first = subprocess.Popen(train + ["--comm-timeout", "2"],
                             env=rank_env(RANK=0, WORLD_SIZE=2, MASTER_PORT=port),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    status1, _, err1 = run(train + ["--comm-timeout", "2"],
                           env=rank_env(RANK=1, WORLD_SIZE=3, MASTER_PORT=port),
                           check=False, timeout=60)
    try:
        _, err0 = first.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        first.kill()
        first.communicate()
        sys.exit("FAIL: rank 0 of a mismatched job did not exit within 30 s")
    secs = time.time() - t
    errors1 = [line for line in err1.splitlines() if line.startswith("dlrt: error:")]
    errors0 = [line for line in err0.splitlines() if line.startswith("dlrt: error:")]
    good = (status1 == 1 and len(errors1) == 1 and
            "world size mismatch: rank 1 has WORLD_SIZE=3 but rank 0 has WORLD_SIZE=2"
            in errors1[0] and first.returncode == 1 and len(errors0) == 1 and secs < 20)
    log(f"{'ok' if good else 'MISMATCH'}: world size mismatch: rank 1 status {status1}: "
        f"{errors1 or err1}; rank 0 status {first.returncode}: {errors0 or err0} "
        f"({secs:.1f} s)")
    ok &= bool(good)
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["mlp", "gpt"], required=True)
    ap.add_argument("--check", choices=["losses", "kill", "hang", "environment"],
                    default="losses")
    ap.add_argument("--ranks", default="2,4", help="world sizes under dlrt launch")
    ap.add_argument("--launchers", default="dlrt",
                    help="comma-separated: dlrt, torchrun, mpirun (2 ranks each)")
    ap.add_argument("--resume", action="store_true",
                    help="also resume a 2-rank checkpoint on 4 ranks")
    ap.add_argument("--world", type=int, default=2, help="ranks of --check kill/hang")
    ap.add_argument("--victim", type=int, default=1,
                    help="the rank --check kill/hang kills or stops")
    ap.add_argument("--dp-flag", default="--data-parallel",
                    help="dlc's data-parallel flag ('' compiles without it: plumbing "
                         "only, the loss checks then fail)")
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    args.ranks = [int(r) for r in args.ranks.split(",") if r]
    args.launchers = [s for s in args.launchers.split(",") if s]
    args.dp_flag = args.dp_flag.split() if args.dp_flag else []
    args.dlrt = os.path.abspath(args.dlrt)
    os.makedirs(args.workdir, exist_ok=True)
    w = lambda name: os.path.join(args.workdir, name)  # noqa: E731
    t0 = time.time()
    torch.set_num_threads(1)

    b = PER_RANK_BATCH[args.model]
    samples = b * max(args.ranks + [2, args.world]) * STEPS
    model, x, y = make_model(args.model, b, samples)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    export(model, x[:b], w(f"{args.model}.onnx"))
    if args.check == "losses":
        ok = check_losses(args, w, x, y, state)
    elif args.check == "environment":
        ok = check_environment(args, w, x, y)
    else:
        ok = check_kill(args, w, x, y, hang=args.check == "hang")
    log(f"total {time.time() - t0:.1f} s")
    if not ok:
        sys.exit("FAIL")
    log("PASS")


if __name__ == "__main__":
    main()
