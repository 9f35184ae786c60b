"""The ``contextsynth`` command: serve, compress, openapi, mcp, hash-key, bench, eval,
wrap."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml

from app.cli.ports import in_use, in_use_hint
from app.corpus import CorpusMissing
from app.settings import Settings


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    settings = Settings()
    workers = settings.workers if args.workers is None else args.workers
    if workers > 1 and settings.redis_url is None:
        # Each worker would keep its own expand handles: a handle in a receipt one worker
        # gave would 404 on another.
        print(f"contextsynth serve: {workers} workers need a shared store for expand "
              "handles: set CONTEXTSYNTH_REDIS_URL, or run one worker per process "
              "(--workers 1) and scale with processes that share a Redis.", file=sys.stderr)
        return 2
    host = args.host or settings.host
    port = settings.port if args.port is None else args.port
    if in_use(host, port):
        print(in_use_hint(host, port), file=sys.stderr)
        return 1
    _prepare_multiprocess_metrics(workers)
    from app.adapters.logs import log_config

    uvicorn.run(
        "app.main:factory",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=settings.log_level,
        log_config=log_config(settings.log_format, settings.log_level),
        access_log=False,  # the service writes its own line per request (logger app.access)
        timeout_keep_alive=int(max(settings.keep_alive_s, 1)),
        # httptools' parser, bounding the time headers take
        http="app.api.http_protocol:BoundedHttpToolsProtocol",
        loop="auto",  # uvloop when installed
    )
    return 0


def _prepare_multiprocess_metrics(workers: int) -> None:
    """Several workers share metrics through files; start from an empty directory."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory is None and workers > 1:
        directory = tempfile.mkdtemp(prefix="contextsynth-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
    if directory is not None:
        os.makedirs(directory, exist_ok=True)
        for stale in Path(directory).glob("*.db"):
            stale.unlink()


def read_transcript(path: Path) -> dict[str, Any]:
    """A ``.jsonl`` file of messages, or JSON: a message array or a request body."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return {"messages": [json.loads(line) for line in text.splitlines() if line.strip()]}
    data = json.loads(text)
    return {"messages": data} if isinstance(data, list) else dict(data)


async def _post(body: dict[str, Any]) -> httpx.Response:
    from app.main import create_app

    app = create_app(Settings(max_body_bytes=1 << 30, max_messages=1_000_000))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://cli") as client:
        return await client.post("/synthesize", json=body)


def _compress(args: argparse.Namespace) -> int:
    try:
        body = read_transcript(Path(args.file))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        print(f"contextsynth compress: cannot read {args.file}: {reason}. Give a .jsonl "
              "file of messages, or .json with a message array or a request body.",
              file=sys.stderr)
        return 2
    for key in ("tier", "model", "format"):
        if getattr(args, key):
            body[key] = getattr(args, key)
    reasoning: dict[str, Any] = {"synthesis": args.mode}
    if args.strategy:
        reasoning["synthesis_strategy"] = args.strategy
    body["reasoning"] = reasoning
    response = asyncio.run(_post(body))
    result = response.json()
    if response.status_code != 200:
        where = f" (at {result['pointer']})" if result.get("pointer") else ""
        print(f"contextsynth compress: {result.get('detail', response.text)}{where}",
              file=sys.stderr)
        return 1
    if args.stats:
        result = {k: result[k] for k in ("mode", "phase", "tier", "stats", "compacted")}
    print(json.dumps(result, indent=2, ensure_ascii=False))
    stats = result["stats"]
    print(f"{stats['tokens_before']} -> {stats['tokens_after']} tokens "
          f"({stats['reduction']:.1%} smaller), {stats['messages_before']} -> "
          f"{stats['messages_after']} messages", file=sys.stderr)
    return 0


def openapi_document() -> dict[str, Any]:
    from app.main import create_app

    return create_app(Settings()).openapi()


def render_openapi() -> str:
    return yaml.safe_dump(openapi_document(), sort_keys=False, allow_unicode=True, width=100)


def _openapi(args: argparse.Namespace) -> int:
    text = render_openapi()
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text, encoding="utf-8")
    return 0


def _mcp(_: argparse.Namespace) -> int:
    """The tools over stdin and stdout, the service in this process (its settings from
    the environment; CONTEXTSYNTH_API_KEY: the key to call it with, when it has keys)."""
    import anyio

    from app import VERSION
    from app.api.mcp import serve_stdio
    from app.main import create_app

    app = create_app(Settings())
    anyio.run(serve_stdio, app, VERSION, os.environ.get("CONTEXTSYNTH_API_KEY"))
    return 0


def _hash_key(args: argparse.Namespace) -> int:
    from app.api.auth import hash_key

    print(hash_key(args.key))
    return 0


def _bench(args: argparse.Namespace) -> int:
    from app.cli import figures

    # plain bench and --replay record their rows beside what they print; the others,
    # what they print.
    keeps_rows = args.replay or not (args.proxy or args.load or args.redis or args.webhooks
                                     or args.largest or args.long or args.jobs)
    if args.json is None or keeps_rows:
        return _bench_mode(args)
    with figures.recording(args.json):
        return _bench_mode(args)


def _bench_mode(args: argparse.Namespace) -> int:
    from app.cli.bench import jobs, run
    from app.corpus import CORPUS_DIR

    directory: Path = args.dir or CORPUS_DIR
    if args.replay:
        from app.cli import replay

        return replay.run(directory, args.steps, compare=not args.no_compare,
                          record=args.json)
    if args.proxy:
        from app.cli import proxybench

        return proxybench.run(directory, steps=args.steps or 4)
    if args.load and args.agents:
        from app.cli import fleet

        return fleet.run(directory, counts=args.agents, replicas=args.replicas,
                         steps=args.steps or (7 if args.from_step or args.kb else 6),
                         clients=args.clients, from_step=args.from_step, kb=args.kb or ())
    if args.load:
        from app.cli import load

        return load.run(directory, clients=args.clients, seconds=args.seconds,
                        steps=args.steps or 4)
    if args.redis:
        from app.cli import redisbench

        return redisbench.run(directory, clients=args.clients, seconds=args.seconds)
    if args.webhooks:
        from app.cli import hookbench

        return hookbench.run(directory, seconds=args.seconds, clients=args.clients)
    if args.largest:
        from app.cli import largest

        return largest.run()
    if args.long:
        from app.cli import longbench

        return longbench.run(args.dir, repeat=min(args.repeat, 3), tier=args.tier)
    if args.jobs:
        return jobs(directory)
    return run(directory, repeat=args.repeat, tier=args.tier, record=args.json)


def _eval_long(args: argparse.Namespace) -> int:
    from app.adapters.tokenizer import load_encoding
    from app.engine.compaction.tiers import Tier
    from app.evaluation.long import STEPS, LongOptions, evaluate_long, long_json, long_table

    try:
        budgets = tuple(int(b) for b in args.budgets.split(",") if b.strip())
    except ValueError:
        print(f"contextsynth eval: --budgets takes token counts separated by commas, e.g. "
              f"8000,32000,128000, not {args.budgets!r}", file=sys.stderr)
        return 2
    options = LongOptions(directory=args.dir, families=tuple(args.family), split=args.split,
                          budgets=budgets, steps=args.steps or STEPS, tier=Tier(args.tier),
                          url=args.url, every_call=args.every_call)
    try:
        evaluation = evaluate_long(options, load_encoding("cl100k_base"))
    except ValueError as exc:
        print(f"contextsynth eval: {exc}", file=sys.stderr)
        return 2
    print(long_table(evaluation))
    if args.json:
        Path(args.json).write_text(json.dumps(long_json(evaluation, options), indent=2) + "\n",
                                   encoding="utf-8")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from app.adapters.tokenizer import load_encoding
    from app.engine.compaction.tiers import Tier
    from app.evaluation.families import families_table, score_families
    from app.evaluation.report import planted_table, plot, summaries, table, write_json
    from app.evaluation.run import EvalOptions, evaluate

    if args.long:
        return _eval_long(args)
    if args.every_call:
        print("contextsynth eval: --every-call replays long sessions: add --long",
              file=sys.stderr)
        return 2
    options = EvalOptions(
        directory=args.dir, files=tuple(args.file), steps=args.steps, tier=Tier(args.tier),
        split=args.split, families=tuple(args.family),
        url=args.url, planted_runs=args.planted, parts=args.parts,
        only=tuple(n.strip() for n in args.compactors.split(",")) if args.compactors else ())
    if args.plot:  # fail before the long run, not after it
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            from app.evaluation.report import PLOT_EXTRA

            print(f"contextsynth eval: {PLOT_EXTRA}", file=sys.stderr)
            return 2
    try:
        evaluation = evaluate(options, load_encoding("cl100k_base"))
    except ValueError as exc:
        print(f"contextsynth eval: {exc}", file=sys.stderr)
        return 2
    tallies = evaluation.total
    rows = summaries(tallies)
    ours = f"synthesize-fast-{args.tier}"
    per_family = score_families(evaluation.runs, ours)
    print(table(rows))
    print()
    if per_family:
        print(families_table(ours, per_family))
        print()
    print(planted_table(rows))
    if args.parts:
        from app.evaluation.parts import PARTS_NOTE, parts_table

        for name, tally in tallies.items():
            print()
            print(parts_table(name, tally.parts, tally.needed))
        print(PARTS_NOTE)
    if args.json:
        write_json(rows, {"steps": args.steps, "tier": args.tier, "files": args.file,
                          "split": args.split, "families": args.family,
                          "planted_runs": args.planted, "url": args.url}, Path(args.json),
                   {f.family: f.as_json() for f in per_family})
    if args.plot:
        plot(rows, Path(args.plot))
    return 0


# What --help says (plain text: argparse prints it as written).
DESCRIPTION = """\
Context compression for LLM agents: the HTTP service (serve), its jobs as MCP tools
(mcp), a coding agent run through its proxy (wrap), and from the command line a
transcript compacted (compress), timed (bench) and scored (eval)."""
EPILOG = """\
Settings come from CONTEXTSYNTH_* environment variables (docs/configuration.md).
`contextsynth COMMAND --help` lists a command's options. In a clone set up by
scripts/serve.sh, the command is .venv/bin/contextsynth."""


def _ranged(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range ({low} to {high})")
        return value
    return parse


def _wrap(args: argparse.Namespace) -> int:
    from app.cli.wrap import wrap

    return wrap(args.program, args.args)


def _parser() -> argparse.ArgumentParser:
    from app import VERSION
    from app.engine.transcript.formats import build_formats

    parser = argparse.ArgumentParser(
        prog="contextsynth", description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"contextsynth {VERSION}")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the HTTP service (settings: CONTEXTSYNTH_*)")
    serve.add_argument("--host", help="address to bind (default: CONTEXTSYNTH_HOST; "
                       "0.0.0.0 for every interface)")
    serve.add_argument("--port", type=_ranged(1, 65535),
                       help="default: CONTEXTSYNTH_PORT")
    serve.add_argument("--workers", type=_ranged(1, 256),
                       help="worker processes (default: CONTEXTSYNTH_WORKERS)")
    serve.set_defaults(run=_serve)

    compress = sub.add_parser("compress", help="compact a transcript file, print the result")
    compress.add_argument("file", help=".jsonl of messages, or .json messages / request body")
    compress.add_argument("--tier", choices=["local", "mid", "large", "frontier"],
                          help="the model's tier (default: from --model, else mid)")
    compress.add_argument("--model", help="the model the context is for (sets the tier and "
                          "the token budget)")
    compress.add_argument("--format", choices=["auto", *build_formats()],
                          help="the messages' wire format (default: auto, read from them)")
    compress.add_argument("--mode", default="fast", choices=["auto", "fast", "custom", "off"],
                          help="fast (deterministic, the default); auto (an LLM summary "
                          "where it pays, with CONTEXTSYNTH_LLM_PROVIDERS); custom (with "
                          "--strategy); off (sent back unchanged)")
    compress.add_argument("--strategy", help="strategy for --mode custom")
    compress.add_argument("--stats", action="store_true", help="print only mode, phase, stats")
    compress.set_defaults(run=_compress)

    openapi = sub.add_parser("openapi", help="write the OpenAPI document as YAML")
    openapi.add_argument("--output", "-o", default="openapi.yaml", help="path, or - for stdout")
    openapi.set_defaults(run=_openapi)

    mcp = sub.add_parser("mcp", help="serve the jobs as MCP tools over stdio (the service "
                         "runs in this process; settings: CONTEXTSYNTH_*)")
    mcp.set_defaults(run=_mcp)

    hashed = sub.add_parser("hash-key", help="the sha256 of an API key, for "
                            "CONTEXTSYNTH_API_KEYS")
    hashed.add_argument("key", help="the API key a client will send")
    hashed.set_defaults(run=_hash_key)

    bench = sub.add_parser("bench", help="engine time against the tokenizer floor")
    bench.add_argument("--dir", type=Path, default=None,
                       help="a folder of .jsonl transcripts (default: the repository's corpus)")
    bench.add_argument("--repeat", type=int, default=5,
                       help="rounds per transcript at least; the best time is kept (default 5)")
    bench.add_argument("--tier", default="mid", choices=["local", "mid", "large", "frontier"],
                       help="tier of the compaction timed (default: mid)")
    bench.add_argument("--jobs", action="store_true",
                       help="token reduction per endpoint instead of timings")
    bench.add_argument("--replay", action="store_true",
                       help="the agent loops timed in process, over HTTP and through the "
                       "other compactors installed")
    bench.add_argument("--load", action="store_true",
                       help="requests/s and latency under concurrent clients, 1 and 2 "
                       "workers, against an echo route as the ceiling")
    bench.add_argument("--proxy", action="store_true",
                       help="what proxy mode adds to a provider request, and to its first "
                       "streamed byte")
    bench.add_argument("--long", action="store_true",
                       help="the longest chained session's last call (eval --long's), cold "
                       "and warm against the tokenizer floor, without a budget and at "
                       "8000, 32000 and 128000 budget_tokens")
    bench.add_argument("--largest", action="store_true",
                       help="each job's largest accepted request, /healthz timed beside it")
    bench.add_argument("--webhooks", action="store_true",
                       help="webhook delivery against the rate a loaded replica makes events")
    bench.add_argument("--redis", action="store_true",
                       help="/synthesize on one Redis node and on a 3-master cluster")
    bench.add_argument("--agents", type=_ranged(1, 5_000), nargs="+", default=None,
                       help="with --load: fleets of this many distinct agents, each calling "
                       "step by step (for example: --agents 10 100 1000)")
    bench.add_argument("--replicas", type=_ranged(1, 8), default=1,
                       help="with --load --agents: processes, routed round-robin and by "
                       "the conversation key")
    bench.add_argument("--from-step", type=_ranged(0, 10_000), default=None,
                       help="with --load --agents: each agent makes the calls of its run's "
                       "steps from this one on (--steps of them, default 7), every text its "
                       "own: real transcripts mid-run (for example --from-step 30: steps "
                       "30-36 of the corpus's long runs)")
    bench.add_argument("--kb", type=_ranged(1, 100_000), nargs="+", default=None,
                       help="with --load --agents: at each of these transcript sizes, agents "
                       "whose calls start at the first body of that size, every text their "
                       "own; reports memory and warm-path bytes per agent (for example: "
                       "--kb 40 200 1000)")
    bench.add_argument("--clients", type=_ranged(1, 64), default=8,
                       help="with --load: concurrent clients")
    bench.add_argument("--seconds", type=_ranged(1, 60), default=10,
                       help="with --load: seconds per route and worker count")
    bench.add_argument("--steps", type=_ranged(1, 10_000), default=None,
                       help="calls per transcript (--replay default: every step; --load: 4)")
    bench.add_argument("--no-compare", action="store_true",
                       help="with --replay: leave out the other compactors")
    bench.add_argument("--json", type=Path, default=None,
                       help="also write what was printed (and, for plain bench and "
                       "--replay, the figures it came from) and the machine to this file "
                       "(see docs/figures/bench.json)")
    bench.set_defaults(run=_bench)

    from app.cli.wrap import PROGRAMS

    wrapped = sub.add_parser(
        "wrap", help="run a coding agent (claude, codex, ...) with its base URL at the "
        "service (CONTEXTSYNTH_URL, else http://127.0.0.1:8080; one is started there if "
        "none answers)")
    wrapped.add_argument("program", choices=sorted(PROGRAMS), help="the program to run")
    wrapped.add_argument("args", nargs=argparse.REMAINDER,
                         help="its arguments, as you would give them to it")
    wrapped.set_defaults(run=_wrap)

    evaluation = sub.add_parser(
        "eval", help="replay agent loops through every compactor and score what it keeps "
        "and what it costs")
    evaluation.add_argument("--dir", type=Path, default=None,
                            help="a folder of .jsonl transcripts (default: the corpus)")
    evaluation.add_argument("--file", action="append", default=[],
                            help="only transcripts whose name starts with this (repeatable)")
    evaluation.add_argument("--split", choices=["tune", "test"], default=None,
                            help="only the agent families of this split (corpus/families.json;"
                            " default: every run)")
    evaluation.add_argument("--family", action="append", default=[],
                            help="only runs of this agent family (repeatable)")
    evaluation.add_argument("--steps", type=int, default=None,
                            help="calls per transcript, spread evenly, the last always "
                            "included (default: one before every assistant step)")
    evaluation.add_argument("--tier", default="mid",
                            choices=["local", "mid", "large", "frontier"],
                            help="tier of the observation-mask compactor and of the "
                            "per-family table's synthesize-fast")
    evaluation.add_argument("--compactors", help="comma-separated names (default: all)")
    evaluation.add_argument("--planted", type=int, default=8,
                            help="synthetic runs with planted facts (default 8)")
    evaluation.add_argument("--url", help="score a running service instead of the engine")
    evaluation.add_argument("--json", help="write the scores to this file")
    evaluation.add_argument("--parts", action="store_true",
                            help="also show, per compactor, each part of the output's share "
                                 "of tokens and of needed facts (held, and held there alone)")
    evaluation.add_argument("--plot", help="draw recall against reduction to this PNG")
    evaluation.add_argument("--long", action="store_true",
                            help="long sessions instead: the runs of one agent family chained "
                            "into one session (mini-swe-agent, opencode and cline, or "
                            "--family), "
                            "replayed per --budgets (with --steps, default 24; --dir, "
                            "--split, --tier, --url and --json apply)")
    evaluation.add_argument("--budgets", default="8000,32000,128000",
                            help="with --long: the budget_tokens to replay at, comma-separated "
                            "(default 8000,32000,128000)")
    evaluation.add_argument("--every-call", action="store_true",
                            help="with --long: also replay every call of each session, one "
                            "after another, for prefix reuse and cost as a cache meets them "
                            "(minutes more per session)")
    evaluation.set_defaults(run=_eval)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if getattr(args, "mode", None) == "custom" and not args.strategy:
        parser.error("--mode custom needs --strategy NAME: fast-rebuild, observation-mask, "
                     "or a plugin's strategy")
    runner: Callable[[argparse.Namespace], int] = args.run
    try:
        return runner(args)
    except CorpusMissing as missing:  # every command that reads the corpus: one line
        print(f"contextsynth {args.command}: {missing}", file=sys.stderr)
        return 2

