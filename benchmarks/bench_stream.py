"""Request-stream benchmark: continuous batching against ``transformers`` static batches.

Three seeded streams on the random Llama of ``bench_engine`` (hidden 256, 4 layers):

- ``mixed``: prompts 8-400 tokens, outputs 4-160 tokens, drawn uniformly;
- ``chat``: prompts 32-256, outputs 32-192 (longer replies);
- ``shared-prefix``: one 96-token system prompt plus 8-64 tokens of each request's own,
  outputs 8-64 (block reuse serves the shared prefix).

Each stream runs with every request arriving at once and with Poisson-spaced arrivals
(rate: 80% of what the engine served when all arrived at once). The engine serves it with
continuous batching (``max_batch_size`` = the batch size, chunked prefill mixing prompt
chunks and decode tokens in one forward). The peer is ``transformers.generate`` in static,
left-padded batches of the same size taken in arrival order: a batch starts once its last
request has arrived and the previous batch is done, and runs to its longest output.

Concurrency: the engine holds at most ``--batch`` requests at once and admits the next as
soon as one finishes; ``transformers`` runs static batches of the same size. Each measured
engine run gets a fresh engine, warmed up on four requests of its own, so no prompt of the
stream is in its prefix cache when the run starts.

Reported per run: generated tokens/s over the whole stream (first arrival to last token),
mean time to first token (TTFT) and mean time per output token after the first (TPOT),
for both, and the throughput ratio; for arrivals at once also the ratio of tokens per CPU
second of this process (steadier than wall time on a CPU other jobs share). Greedy outputs
must be identical (asserted), and the KV cache's invariants (``check_valid()``) must hold
after every engine run. For the mixed stream at once the engine's per-step times
(schedule, input packing, model, attention inside it, sampling, bookkeeping) and its steps
by kind (steps with prompt chunks against decode-only steps: CPU ms per step, prompt
tokens, chunks and decodes per step, idle batch slots) are printed, with the CPU cost per
unit of work on both sides (a prompt row; a decode step). For every engine run: the
``LLM()`` start time (the process's first one includes the arbiter's one-time rule
preparation), the steps, the wall time spent idle waiting for the next arrival, and the
requests per step (with Poisson arrivals: is the engine waiting, or stepping small
batches?). On CUDA every graph rung is captured after
the warm-up, before the measured runs (the capture time is printed), and each stream
says which rungs its decode steps replayed.

Run: ``python benchmarks/bench_stream.py`` (``--quick``: 16 requests per stream;
``--device cuda`` on a GPU; ``--rounds N``: each stream at once N times, engine and
``transformers`` alternating, the table showing the round of median ratio and the notes
every round's ratios; ``--kernel-rounds N``: the engine alone N times with the CPU decode
kernel and without it, taking turns, for the kernel's share of the engine's CPU time).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from engine import LLM, SamplingParams
from engine.kernels import cpu_decode
from engine.model.testing import make_tiny_model_dir
from engine.scheduler import SchedulerOutput
from engine.step_timing import StepTimes

SMALL = dict(
    hidden_size=256,
    intermediate_size=688,
    num_hidden_layers=4,
    num_attention_heads=8,
    num_key_value_heads=4,
    vocab_size=1024,
    max_position_embeddings=1024,
)
PAD = 0  # token id used to left-pad transformers' batches (masked out)
MAX_NUM_TOKENS = 512  # the engine's token budget per step (prompt chunks + decodes)


@dataclass(frozen=True)
class Stream:
    name: str
    prompts: list[list[int]]
    outputs: list[int]


def make_stream(name: str, count: int, seed: int) -> Stream:
    rng = random.Random(seed)
    vocab = SMALL["vocab_size"]

    def tokens(n: int) -> list[int]:
        return [rng.randrange(3, vocab) for _ in range(n)]

    if name == "mixed":
        prompts = [tokens(rng.randint(8, 400)) for _ in range(count)]
        outputs = [rng.randint(4, 160) for _ in range(count)]
    elif name == "chat":
        prompts = [tokens(rng.randint(32, 256)) for _ in range(count)]
        outputs = [rng.randint(32, 192) for _ in range(count)]
    elif name == "shared-prefix":
        system = tokens(96)
        prompts = [system + tokens(rng.randint(8, 64)) for _ in range(count)]
        outputs = [rng.randint(8, 64) for _ in range(count)]
    else:
        raise ValueError(f"unknown stream {name!r}")
    return Stream(name, prompts, outputs)


def poisson_arrivals(count: int, rate: float, seed: int) -> list[float]:
    """Arrival offsets in seconds of a Poisson process of ``rate`` requests/s."""
    rng = random.Random(seed)
    t, out = 0.0, []
    for _ in range(count):
        out.append(t)
        t += rng.expovariate(rate)
    return out


@dataclass
class RunResult:
    tokens: list[list[int]]
    seconds: float
    ttft: list[float]
    tpot: list[float]
    cpu_seconds: float = 0.0  # this process's CPU time over the run (all its threads)
    # Engine: wall seconds spent waiting for the next arrival with nothing to run, the
    # steps, and the requests those steps ran (batch occupancy).
    idle_seconds: float = 0.0
    steps: int = 0
    step_requests: int = 0
    # transformers: CPU seconds and rows of the prompt forwards (padding included), CPU
    # seconds and count of the decode forwards.
    prefill_cpu: float = 0.0
    prefill_rows: int = 0
    decode_cpu: float = 0.0
    decode_steps: int = 0

    @property
    def throughput(self) -> float:
        return sum(len(t) for t in self.tokens) / self.seconds

    @property
    def cpu_throughput(self) -> float:
        """Generated tokens per CPU second: on a CPU other jobs share, steadier than wall
        time (a descheduled process's wait does not count)."""
        return sum(len(t) for t in self.tokens) / max(self.cpu_seconds, 1e-9)


@dataclass
class StepLog:
    """The engine's steps, one row each: prompt tokens, prompt chunks and decodes it ran,
    the keys its decodes attended, and its CPU seconds. ``table()`` sums them by kind
    (steps with prompt chunks, pure decode steps) and shows the batch's idle slots."""

    batch: int
    rows: list[tuple[int, int, int, int, float]] = field(default_factory=list)

    def add(self, out: SchedulerOutput | None, seconds: float) -> None:
        """Log a step after it ran (each decode then holds its new token: it attended
        ``len(token_ids) - 1`` keys)."""
        if out is None or not out.scheduled:
            return
        prompt = [e.num_new_tokens for e in out.scheduled if e.is_prefill]
        keys = sum(len(e.seq.token_ids) - 1 for e in out.scheduled if not e.is_prefill)
        decodes = len(out.scheduled) - len(prompt)
        self.rows.append((sum(prompt), len(prompt), decodes, keys, seconds))

    def work(self) -> Work:
        return Work(
            prompt_rows=sum(r[0] for r in self.rows),
            decode_rows=sum(r[2] for r in self.rows),
            key_reads=sum(r[3] for r in self.rows),
            steps=len(self.rows),
        )

    def table(self) -> str:
        total = sum(r[4] for r in self.rows) or 1e-12
        lines = [
            f"{'step kind':>14} {'steps':>6} {'CPU ms/step':>12} {'share':>6}"
            f" {'prompt tok/step':>16} {'chunks/step':>12} {'decodes/step':>13}"
            f" {'idle slots/step':>16}"
        ]
        kinds = [
            ("with prompts", [r for r in self.rows if r[1]]),
            ("decode only", [r for r in self.rows if not r[1]]),
            ("all", self.rows),
        ]
        for name, rows in kinds:
            if not rows:
                continue
            n, seconds = len(rows), sum(r[4] for r in rows)
            idle = sum(self.batch - r[1] - r[2] for r in rows) / n
            lines.append(
                f"{name:>14} {n:>6} {1e3 * seconds / n:>12.1f} {seconds / total:>6.1%}"
                f" {sum(r[0] for r in rows) / n:>16.1f} {sum(r[1] for r in rows) / n:>12.2f}"
                f" {sum(r[2] for r in rows) / n:>13.2f} {idle:>16.2f}"
            )
        return "\n".join(lines)


@dataclass(frozen=True)
class Work:
    """What a run computed: prompt rows through the model, decode rows, the keys the
    decode rows attended, and forward steps (padding rows included for ``transformers``)."""

    prompt_rows: int
    decode_rows: int
    key_reads: int
    steps: int


def static_batch_work(stream: Stream, batch: int) -> Work:
    """The work of ``transformers.generate`` on the stream in arrival order (all at once):
    each batch is left-padded to its longest prompt ``W`` and runs to its longest output
    ``N``: one forward of ``b * W`` rows, then ``N - 1`` decode steps of ``b`` rows, the
    ``t``-th attending ``W + t`` keys in every row."""
    prompt = decode = keys = steps = 0
    for lo in range(0, len(stream.prompts), batch):
        b = len(stream.prompts[lo : lo + batch])
        width = max(len(p) for p in stream.prompts[lo : lo + batch])
        new = max(stream.outputs[lo : lo + batch])
        prompt += b * width
        decode += b * (new - 1)
        keys += b * ((new - 1) * width + new * (new - 1) // 2)
        steps += new
    return Work(prompt, decode, keys, steps)


def work_table(engine: Work, hf: Work) -> str:
    lines = [f"{'':>18} {'engine':>10} {'transformers':>13} {'hf/engine':>10}"]
    for name, label in (
        ("prompt_rows", "prompt rows"),
        ("decode_rows", "decode rows"),
        ("key_reads", "decode key reads"),
        ("steps", "forward steps"),
    ):
        a, b = getattr(engine, name), getattr(hf, name)
        lines.append(f"{label:>18} {a:>10,} {b:>13,} {b / max(a, 1):>10.2f}")
    return "\n".join(lines)


def _tpot(first: float, last: float, n: int) -> float | None:
    return (last - first) / (n - 1) if n > 1 else None


def run_engine(
    llm: LLM,
    stream: Stream,
    arrivals: list[float],
    timer: StepTimes | None = None,
    log: StepLog | None = None,
) -> RunResult:
    runtime = llm.runtime
    runtime.timer = timer
    sync = torch.cuda.synchronize if llm.device.type == "cuda" else (lambda: None)
    order = sorted(range(len(arrivals)), key=lambda i: arrivals[i])
    requests: dict[int, int] = {}  # request id -> stream index
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    sync()
    start = time.perf_counter()
    cpu_start = time.process_time()
    nxt = 0
    idle, steps, step_requests = 0.0, 0, 0
    while nxt < len(order) or runtime.has_unfinished:
        now = time.perf_counter() - start
        while nxt < len(order) and arrivals[order[nxt]] <= now:
            i = order[nxt]
            params = SamplingParams(max_tokens=stream.outputs[i], ignore_eos=True)
            requests[runtime.add_request(stream.prompts[i], params).request_id] = i
            nxt += 1
        if not runtime.has_unfinished:
            wait = max(0.0, arrivals[order[nxt]] - now)
            time.sleep(wait)
            idle += wait
            continue
        step_start = time.process_time()
        touched = runtime.step()
        sync()
        if runtime.last_output is not None and runtime.last_output.scheduled:
            steps += 1
            step_requests += runtime.last_output.num_requests
        if log is not None:
            log.add(runtime.last_output, time.process_time() - step_start)
        now = time.perf_counter() - start
        for req in touched:
            first.setdefault(req.request_id, now)
            last[req.request_id] = now
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu_start
    runtime.timer = None
    runtime.kv.check_valid()
    tokens: list[list[int]] = [[] for _ in stream.prompts]
    ttft, tpot = [], []
    for rid, i in requests.items():
        req = runtime.requests[rid]
        tokens[i] = list(req.token_ids)
        ttft.append(first[rid] - arrivals[i])
        per = _tpot(first[rid], last[rid], len(req.token_ids))
        if per is not None:
            tpot.append(per)
        runtime.release(rid)
    return RunResult(
        tokens,
        seconds,
        ttft,
        tpot,
        cpu_seconds,
        idle_seconds=idle,
        steps=steps,
        step_requests=step_requests,
    )


class _Clock:
    """A ``transformers`` streamer that stamps each generation step (wall and CPU time)."""

    def __init__(self, sync) -> None:
        self.stamps: list[float] = []
        self.cpu_stamps: list[float] = []
        self.sync = sync
        self.prompt_seen = False

    def put(self, value) -> None:
        if not self.prompt_seen:  # the first call carries the prompt
            self.prompt_seen = True
            return
        self.sync()
        self.stamps.append(time.perf_counter())
        self.cpu_stamps.append(time.process_time())

    def end(self) -> None:
        pass


def run_transformers(
    hf, stream: Stream, arrivals: list[float], batch: int, device: torch.device
) -> RunResult:
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    order = sorted(range(len(arrivals)), key=lambda i: arrivals[i])
    tokens: list[list[int]] = [[] for _ in stream.prompts]
    ttft, tpot = [], []
    start = time.perf_counter()
    cpu_seconds = 0.0  # CPU time of the generate calls (not of the waits for arrivals)
    prefill_cpu = decode_cpu = 0.0
    prefill_rows = decode_steps = 0
    for lo in range(0, len(order), batch):
        group = order[lo : lo + batch]
        ready = max(arrivals[i] for i in group)
        wait = ready - (time.perf_counter() - start)
        if wait > 0:
            time.sleep(wait)
        width = max(len(stream.prompts[i]) for i in group)
        new = max(stream.outputs[i] for i in group)
        ids = torch.full((len(group), width), PAD, dtype=torch.int64)
        mask = torch.zeros((len(group), width), dtype=torch.int64)
        for row, i in enumerate(group):
            p = stream.prompts[i]
            ids[row, width - len(p) :] = torch.tensor(p)
            mask[row, width - len(p) :] = 1
        clock = _Clock(sync)
        cpu_start = time.process_time()
        with torch.no_grad():
            out = hf.generate(
                ids.to(device),
                attention_mask=mask.to(device),
                max_new_tokens=new,
                min_new_tokens=new,
                do_sample=False,
                pad_token_id=PAD,
                streamer=clock,
            )
        sync()
        cpu_seconds += time.process_time() - cpu_start
        # The first stamp ends the prompt forward; each later one, one decode forward.
        prefill_cpu += clock.cpu_stamps[0] - cpu_start
        prefill_rows += len(group) * width
        decode_cpu += clock.cpu_stamps[-1] - clock.cpu_stamps[0]
        decode_steps += len(clock.cpu_stamps) - 1
        for row, i in enumerate(group):
            n = stream.outputs[i]
            tokens[i] = out[row, width : width + n].tolist()
            t_first = clock.stamps[0] - start
            ttft.append(t_first - arrivals[i])
            per = _tpot(t_first, clock.stamps[n - 1] - start, n)
            if per is not None:
                tpot.append(per)
    seconds = time.perf_counter() - start
    return RunResult(
        tokens,
        seconds,
        ttft,
        tpot,
        cpu_seconds,
        prefill_cpu=prefill_cpu,
        prefill_rows=prefill_rows,
        decode_cpu=decode_cpu,
        decode_steps=decode_steps,
    )


def unit_costs(log: StepLog, hf: RunResult) -> str:
    """CPU cost per unit of work, engine against ``transformers`` (mixed stream at once):
    a prompt row (the engine's steps with prompts, their decodes included, over their
    prompt rows; ``transformers``' prompt forwards over their padded rows) and a decode
    step (the engine's decode-only steps; ``transformers``' decode forwards)."""
    with_prompts = [r for r in log.rows if r[1]]
    decode_only = [r for r in log.rows if not r[1]]
    rows = [f"{'':>26} {'engine':>10} {'transformers':>13}"]
    if with_prompts and hf.prefill_rows:
        ours = sum(r[4] for r in with_prompts) / sum(r[0] for r in with_prompts)
        theirs = hf.prefill_cpu / hf.prefill_rows
        rows.append(f"{'prompt row, us':>26} {1e6 * ours:>10.0f} {1e6 * theirs:>13.0f}")
    if decode_only and hf.decode_steps:
        ours = sum(r[4] for r in decode_only) / len(decode_only)
        theirs = hf.decode_cpu / hf.decode_steps
        rows.append(f"{'decode step, ms':>26} {1e3 * ours:>10.1f} {1e3 * theirs:>13.1f}")
        keys = sum(r[3] for r in decode_only) / len(decode_only)
        rows.append(f"{'keys read per decode step':>26} {keys:>10,.0f} {'':>13}")
    return "\n".join(rows)


def median_pair(pairs: list[tuple[RunResult, RunResult]]) -> tuple[RunResult, RunResult]:
    """The round whose throughput ratio is the median (the lower middle of an even count)."""
    ranked = sorted(pairs, key=lambda p: p[0].throughput / p[1].throughput)
    return ranked[(len(ranked) - 1) // 2]


def rounds_line(name: str, pairs: list[tuple[RunResult, RunResult]]) -> str:
    """Each round's throughput and CPU ratios of a stream at once, and their medians."""
    wall = [a.throughput / b.throughput for a, b in pairs]
    cpu = [a.cpu_throughput / b.cpu_throughput for a, b in pairs]
    return (
        f"{name} at once, {len(pairs)} alternating rounds: ratio median"
        f" {statistics.median(wall):.2f} ({' '.join(f'{r:.2f}' for r in wall)}),"
        f" CPU ratio median {statistics.median(cpu):.2f} ({' '.join(f'{r:.2f}' for r in cpu)})"
    )


def kernel_rounds(path: Path, opts: argparse.Namespace, stream: Stream, seed: int) -> str:
    """The engine alone on ``stream`` at once, ``opts.kernel_rounds`` times with the CPU
    decode kernel (``engine.kernels.cpu_decode``) and without it, taking turns in this
    process: CPU seconds and the ratio (without / with) of each pair; tokens asserted
    equal."""
    if cpu_decode.kernel() is None:
        return f"{stream.name}: no CPU decode kernel ({cpu_decode.unavailable_reason()})"
    at_once = [0.0] * len(stream.prompts)
    with_kernel, without = [], []
    for _ in range(opts.kernel_rounds):
        with_kernel.append(run_engine(fresh_llm(path, opts, stream, seed), stream, at_once))
        with cpu_decode.switched_off():
            without.append(run_engine(fresh_llm(path, opts, stream, seed), stream, at_once))
    pairs = list(zip(with_kernel, without, strict=True))
    for a, b in pairs:
        assert a.tokens == b.tokens, f"{stream.name}: tokens differ with the kernel off"
    return (
        f"{stream.name} at once, engine CPU s with the CPU decode kernel"
        f" {' '.join(f'{a.cpu_seconds:.2f}' for a, _ in pairs)}, without"
        f" {' '.join(f'{b.cpu_seconds:.2f}' for _, b in pairs)}; without / with per pair"
        f" {' '.join(f'{b.cpu_seconds / a.cpu_seconds:.2f}' for a, b in pairs)}"
    )


def occupancy(label: str, result: RunResult, batch: int) -> str:
    """Where an engine run's wall time went: waiting for arrivals with nothing to run, or
    stepping, and how full its steps were."""
    per_step = result.step_requests / max(result.steps, 1)
    return (
        f"{label}: {result.steps} steps in {result.seconds:.1f} s, idle (nothing to run,"
        f" waiting for the next arrival) {result.idle_seconds:.1f} s"
        f" ({result.idle_seconds / result.seconds:.0%}), {per_step:.1f} of {batch}"
        f" requests per step, CPU {result.cpu_seconds:.1f} s"
    )


def build_llm(
    path: Path,
    batch: int,
    device: str,
    stream: Stream,
    max_num_tokens: int = MAX_NUM_TOKENS,
    num_scheduler_steps: int = 1,
) -> LLM:
    longest = max(len(p) + n for p, n in zip(stream.prompts, stream.outputs, strict=True))
    return LLM(
        path,
        device=device,
        max_batch_size=batch,
        max_num_tokens=max_num_tokens,
        enable_chunked_prefill=True,
        num_scheduler_steps=num_scheduler_steps,
        kv_cache_config={"tokens_per_block": 16, "max_tokens": batch * (longest + 16)},
    )


def capture_graphs(llm: LLM) -> str:
    """Capture every CUDA-graph rung before the measured runs (so none of them pays for
    a capture); says whether graphs are on, the rungs and how long capturing took."""
    graphs = llm.runtime.graphs
    if graphs is None:
        return f"CUDA graphs off ({llm.runtime.graphs_off})"
    start = time.perf_counter()
    graphs.capture_all()
    seconds = time.perf_counter() - start
    graphs.replays, graphs.replayed = 0, {}  # count the measured runs only
    return f"CUDA graphs on, rungs {list(graphs.built)} captured in {seconds:.2f} s before the runs"


def replayed(llm: LLM) -> str:
    """The replayed decode steps of the measured runs, per rung."""
    graphs = llm.runtime.graphs
    if graphs is None:
        return "no step replayed"
    per = ", ".join(f"{size}: {n}" for size, n in sorted(graphs.replayed.items()))
    windows = llm.runtime.windows
    return f"replayed steps {graphs.replays} (per rung {{{per}}}), decode windows {windows}"


def fresh_llm(path: Path, opts: argparse.Namespace, stream: Stream, seed: int) -> LLM:
    """An engine for one measured run, warmed up (allocator, first-call overheads) on four
    requests of its own: none of the stream's prompts is in its prefix cache before the
    run (``transformers`` keeps no cache between calls either)."""
    start = time.perf_counter()
    llm = build_llm(
        path, opts.batch, opts.device, stream, opts.max_num_tokens, opts.num_scheduler_steps
    )
    llm.start_seconds = time.perf_counter() - start  # type: ignore[attr-defined]
    warm = make_stream(stream.name, 4, seed + 1000)
    run_engine(llm, Stream("warm", warm.prompts, [4] * 4), [0.0] * 4)
    return llm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 requests per stream")
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--streams", default="mixed,chat,shared-prefix")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's)")
    parser.add_argument(
        "--max-num-tokens", type=int, default=MAX_NUM_TOKENS, help="engine tokens per step"
    )
    parser.add_argument(
        "--num-scheduler-steps",
        type=int,
        default=1,
        help="engine decode steps per scheduler call (windows; CUDA graphs only)",
    )
    parser.add_argument(
        "--kernel-rounds",
        type=int,
        default=0,
        help="engine-only rounds of each stream at once with the CPU decode kernel on, then off",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="alternating engine/transformers runs of each stream at once (median shown)",
    )
    opts = parser.parse_args()
    if opts.threads:
        torch.set_num_threads(opts.threads)
    count = 16 if opts.quick else opts.requests
    device = torch.device(opts.device)
    import transformers

    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {device}")
    if device.type == "cpu":
        print(f"{torch.get_num_threads()} CPU threads")
    print(
        f"{count} requests per stream, greedy, outputs asserted equal; engine: at most"
        f" {opts.batch} requests at once, admitted as slots free, {opts.max_num_tokens}"
        f" tokens per step, {opts.num_scheduler_steps} decode step(s) per scheduler call;"
        f" transformers: static batches of {opts.batch}"
    )
    header = (
        f"{'stream':>14} {'arrivals':>9} {'engine tok/s':>13} {'hf tok/s':>9} {'ratio':>6}"
        f" {'CPU ratio':>9} {'TTFT ms (eng/hf)':>18} {'TPOT ms (eng/hf)':>17}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = make_tiny_model_dir(Path(tmp) / "small", "llama", seed=0, **SMALL)
        hf = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        hf = hf.to(device).eval()
        hf.generation_config.eos_token_id = None
        rows, times = [], StepTimes(device=device)
        log = StepLog(opts.batch)
        log_stream, hf_mixed = None, None
        notes: list[str] = []
        print(header)
        for seed, name in enumerate(opts.streams.split(",")):
            stream = make_stream(name, count, seed)
            warm = make_stream(name, 4, seed + 1000)
            run_transformers(hf, Stream("warm", warm.prompts, [4] * 4), [0.0] * 4, 4, device)
            llm = fresh_llm(path, opts, stream, seed)
            graphs_line = capture_graphs(llm)
            at_once = [0.0] * count
            mixed = name == "mixed"
            if mixed:
                log_stream = stream
            ours = run_engine(
                llm, stream, at_once, times if mixed else None, log if mixed else None
            )
            theirs = run_transformers(hf, stream, at_once, opts.batch, device)
            if mixed:
                hf_mixed = theirs
            results = [("at once", ours, theirs)]
            if opts.rounds > 1:
                pairs = [(ours, theirs)]
                for _ in range(opts.rounds - 1):
                    again = run_engine(fresh_llm(path, opts, stream, seed), stream, at_once)
                    pairs.append((again, run_transformers(hf, stream, at_once, opts.batch, device)))
                for i, (a, b) in enumerate(pairs):
                    assert a.tokens == b.tokens, f"{name} at once, round {i}: outputs differ"
                notes.append(rounds_line(name, pairs))
                ours, theirs = median_pair(pairs)
                results = [("at once", ours, theirs)]
            rate = 0.8 * count / ours.seconds
            spaced = poisson_arrivals(count, rate, seed + 100)
            llm_p = fresh_llm(path, opts, stream, seed)
            capture_graphs(llm_p)
            ours_p = run_engine(llm_p, stream, spaced)
            theirs_p = run_transformers(hf, stream, spaced, opts.batch, device)
            results.append((f"{rate:.1f}/s", ours_p, theirs_p))
            for label, a, b in results:
                for i, (x, y) in enumerate(zip(a.tokens, b.tokens, strict=True)):
                    assert x == y, f"{name} {label}: request {i} differs: {x} vs {y}"
                # CPU time counts work only: a fair measure when all arrive at once; with
                # spaced arrivals the waits are part of what is compared (wall time only).
                cpu_ratio = (
                    f"{a.cpu_throughput / b.cpu_throughput:.2f}" if label == "at once" else "-"
                )
                rows.append(
                    f"{name:>14} {label:>9} {a.throughput:>13.1f} {b.throughput:>9.1f}"
                    f" {a.throughput / b.throughput:>6.2f}"
                    f" {cpu_ratio:>9}"
                    f" {1e3 * statistics.mean(a.ttft):>8.0f}/{1e3 * statistics.mean(b.ttft):<9.0f}"
                    f" {1e3 * statistics.mean(a.tpot):>7.1f}/{1e3 * statistics.mean(b.tpot):<9.1f}"
                )
                print(rows[-1], flush=True)
            print(f"{'':>14} {graphs_line}; {replayed(llm)}", flush=True)
            notes.append(
                f"{name}, LLM() start {llm.start_seconds:.2f} s and {llm_p.start_seconds:.2f} s"
            )
            for label, res in (("at once", ours), ("Poisson", ours_p)):
                notes.append(occupancy(f"{name} {label}", res, opts.batch))
            if opts.kernel_rounds and device.type == "cpu":
                notes.append(kernel_rounds(path, opts, stream, seed))
        if log.rows and log_stream is not None:
            print("\nengine step times, mixed stream, all at once:")
            print(times.table())
            print("\nengine steps by kind, mixed stream, all at once (CPU time):")
            print(log.table())
            print("\nwork, mixed stream, all at once (transformers: padded static batches):")
            print(work_table(log.work(), static_batch_work(log_stream, opts.batch)))
            if hf_mixed is not None:
                print("\nCPU cost per unit of work, mixed stream, all at once:")
                print(unit_costs(log, hf_mixed))
        print("\nengine runs (wall time: stepping or waiting for arrivals):")
        print("\n".join(notes))


if __name__ == "__main__":
    main()
