"""Train an LLM web agent on simweb with TRL's GRPOTrainer, on CPU, with nothing downloaded.

    pip install -e '.[trl]'
    python examples/trl_grpo.py --out runs/trl                        # in-process
    python examples/trl_grpo.py --out runs/trl --openenv auto         # through `simweb openenv forum` (started here)
    python examples/trl_grpo.py --out runs/trl --openenv http://127.0.0.1:8000   # a server you started

The whole loop at toy scale, so a newcomer sees it run here: GRPOTrainer's environment hook
(``environment_factory``, TRL's OpenEnv integration) on simweb's tools (click, fill, ...;
simweb.trainers.trl_env), each group's generations starting from forks of one state
(``num_generations`` per task instance), the reward simweb's verifier pays at the end.

The model is built here: a tokenizer trained (byte-level BPE, the ``tokenizers`` package) on the
app's own text (goals, AX trees of task start pages, the oracle's actions as tool calls) under
the Qwen3 chat template TRL ships (trl/chat_templates/qwen3.jinja, so TRL reads its tool calls),
and a Qwen3-shaped model with random weights from a small config. ``--warmup-steps`` first fits it
to the oracle's tool-call transcripts with plain cross-entropy (Adam steps on CPU), meant to make
its samples well-formed tool calls so that GRPO has rewards that differ within a group. At the
default 150 steps it does not yet: the runs here (docs/training.md) produced no parseable call
and rewards of 0, so they show the loop and its cost, not learning. That model learns nothing
useful about the web; docs/training.md says how to swap in a real
model and vLLM on a GPU.

Writes OUT/metrics.jsonl (TRL's log per optimiser step) and OUT/summary.json.
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")            # nothing is fetched from a hub
os.environ.setdefault("WANDB_DISABLED", "true")

import simweb  # noqa: E402
from simweb.tools.trainers.trl_env import INSTRUCTION, SimwebOpenEnvToolEnv, SimwebToolEnv  # noqa: E402


def instance_rows(app: str, tasks: list[str], seeds: list[int], from_end: int) -> list[dict[str, Any]]:
    """Dataset rows (app, task, seed, prefix): with ``from_end`` J > 0, each instance starts J
    actions before the end of its oracle plan (the prefix is played, then the group forks)."""
    rows = []
    for task in tasks:
        for seed in seeds:
            prefix: list[str] = []
            if from_end > 0:
                env = simweb.make(app)
                env.reset(seed=seed, options={"task": task})
                plan = env.oracle_plan()
                prefix = plan[:max(0, len(plan) - from_end)]
            rows.append({"prompt": [{"role": "user", "content": INSTRUCTION}], "app": app, "task": task,
                         "seed": seed, "prefix": prefix})
    return rows


def oracle_transcripts(rows: list[dict[str, Any]], max_axtree_chars: int) -> list[list[dict]]:
    """Chat transcripts of the oracle finishing each row's instance through the tools (for the
    tokenizer's corpus and the warm start)."""
    from simweb.web.actions import parse_action

    out = []
    for row in rows:
        env = SimwebToolEnv(max_axtree_chars=max_axtree_chars)
        first = env.reset(**row)
        assert env.text is not None
        messages: list[dict[str, Any]] = [{"role": "user", "content": INSTRUCTION + first}]
        for action in env.text.env.oracle_plan()[len(row["prefix"]):]:
            a = parse_action(action)
            args = dict(a.arguments)
            if a.name == "scroll":
                args = {"delta_y": int(args["delta_y"])}
            if a.name == "select_option":
                opts = args.pop("options")
                args["option"] = opts if isinstance(opts, str) else opts[0]
            if a.name in ("click", "dblclick"):
                args = {"bid": args["bid"]}
            if a.name == "press":
                args = {"bid": args["bid"], "key_comb": args["key_comb"]}
            messages.append({"role": "assistant", "content": "",
                             "tool_calls": [{"type": "function", "function": {"name": a.name, "arguments": args}}]})
            reply = getattr(env, a.name)(**args)
            messages.append({"role": "tool", "name": a.name, "content": reply})
        out.append(messages)
    return out


def build_tokenizer(corpus: list[str], vocab_size: int) -> Any:
    """A byte-level BPE tokenizer trained on ``corpus``, with the Qwen3 chat template TRL ships."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen3_chat_template

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>",
               "<tool_response>", "</tool_response>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   additional_special_tokens=special[1:])
    fast.chat_template = qwen3_chat_template
    return fast


def build_model(tokenizer: Any, seed: int) -> Any:
    """A small Qwen3-shaped causal LM with random weights (from a config; nothing downloaded)."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=8192,
                         tie_word_embeddings=True, pad_token_id=tokenizer.pad_token_id,
                         eos_token_id=tokenizer.eos_token_id, bos_token_id=None)
    return Qwen3ForCausalLM(config)


def warm_start(model: Any, tokenizer: Any, transcripts: list[list[dict]], tools: list, steps: int, seed: int) -> list[float]:
    """Fit the model to the transcripts (cross-entropy on the assistant turns' tokens)."""
    import torch

    if steps <= 0:
        return []
    examples = []
    for messages in transcripts:
        for i, m in enumerate(messages):
            if m["role"] != "assistant":
                continue
            prompt = tokenizer.apply_chat_template(messages[:i], tools=tools, tokenize=False, add_generation_prompt=True)
            full = tokenizer.apply_chat_template(messages[:i + 1], tools=tools, tokenize=False)
            p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
            f_ids = tokenizer(full, add_special_tokens=False)["input_ids"]
            if f_ids[:len(p_ids)] != p_ids:
                continue
            examples.append((f_ids, len(p_ids)))
    rng = random.Random(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    losses = []
    for _ in range(steps):
        ids, n_prompt = rng.choice(examples)
        x = torch.tensor([ids])
        labels = x.clone()
        labels[0, :n_prompt] = -100
        loss = model(input_ids=x, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        if len(losses) % 50 == 0:
            print(f"warm start {len(losses)}/{steps}: loss {sum(losses[-50:]) / 50:.3f}", file=sys.stderr, flush=True)
    return losses


def start_server(app: str, max_sessions: int, max_axtree_chars: int) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "simweb.cli", "openenv", app, "--port", "0", "--max-sessions",
                             str(max_sessions), "--max-axtree-chars", str(max_axtree_chars)],
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stderr is not None
    line = proc.stderr.readline()
    m = re.search(r"ws://([\d.]+):(\d+)/ws", line)
    if m is None:
        proc.kill()
        print(f"trl_grpo: error: simweb openenv did not start: {line.strip()}", file=sys.stderr)
        sys.exit(2)
    return proc, f"http://{m.group(1)}:{m.group(2)}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--app", default="forum")
    ap.add_argument("--tasks", default="forum/upvote_post,forum/save_post")
    ap.add_argument("--seeds", type=int, default=4, help="task instances per task (seeds 0..N-1)")
    ap.add_argument("--steps", type=int, default=4, help="GRPO optimiser steps")
    ap.add_argument("--group", type=int, default=4, help="num_generations: forks per task instance")
    ap.add_argument("--from-end", type=int, default=2,
                    help="start each instance this many oracle actions before the end (0: the task's start)")
    ap.add_argument("--warmup-steps", type=int, default=300, help="cross-entropy steps on the oracle's transcripts")
    ap.add_argument("--max-axtree-chars", type=int, default=1200)
    ap.add_argument("--max-completion-length", type=int, default=512)
    ap.add_argument("--max-tool-calls", type=int, default=6)
    ap.add_argument("--openenv", default=None, help="a simweb openenv URL, or 'auto' to start one here")
    ap.add_argument("--model", default=None,
                    help="a real chat model with tool calling (a hub name or a folder, e.g. Qwen/Qwen3-1.7B) instead of "
                         "the tiny one built here; no warm start")
    ap.add_argument("--vllm", choices=["colocate", "server"], default=None,
                    help="generate with vLLM (GPU; `pip install 'trl[vllm]'`; server: start `trl vllm-serve --model M`)")
    ap.add_argument("--learning-rate", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    t0 = time.monotonic()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = [t for t in args.tasks.split(",") if t]
    try:                             # an unknown app or task: one line, exit 2
        probe = simweb.make(args.app)
        for t in tasks:
            probe.app_task(t)
    except (KeyError, ValueError) as exc:
        print(f"trl_grpo: error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        sys.exit(2)
    seeds = list(range(args.seeds))
    rows = instance_rows(args.app, tasks, seeds, args.from_end)

    # The tools as TRL lists them (inspect.getmembers: by name), so the warm start's prompts are the
    # prompts GRPO renders: a model this small is not robust to the tool schemas' order.
    tools = [fn for name, fn in inspect.getmembers(SimwebToolEnv, predicate=inspect.isfunction)
             if name not in ("reset", "get_reward") and not name.startswith("_")]
    losses: list[float] = []
    if args.model:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        os.environ["HF_HUB_OFFLINE"] = os.environ.get("SIMWEB_HF_OFFLINE", "0")   # a real model may be fetched
        tokenizer = AutoTokenizer.from_pretrained(args.model)
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype="auto")
        t_build = time.monotonic() - t0
    else:
        transcripts = oracle_transcripts(rows, args.max_axtree_chars)
        # The tokenizer's corpus: the app's own text (the oracle's whole transcripts on more instances
        # than training uses), and the rendered prompt with the tool schemas, so the frame is a few tokens.
        corpus_transcripts = oracle_transcripts(instance_rows(args.app, tasks, list(range(max(16, args.seeds))), 0),
                                                args.max_axtree_chars)
        corpus = [json.dumps(m, ensure_ascii=False) for t in corpus_transcripts for m in t]
        corpus += [m["content"] for t in corpus_transcripts for m in t if m.get("content")]
        frame = build_tokenizer(corpus[:10], vocab_size=500)
        corpus += [frame.apply_chat_template(t, tools=tools, tokenize=False) for t in corpus_transcripts[:4]]
        tokenizer = build_tokenizer(corpus, vocab_size=4000)
        model = build_model(tokenizer, args.seed)
        t_build = time.monotonic() - t0
        losses = warm_start(model, tokenizer, transcripts, tools, args.warmup_steps, args.seed)
    t_warm = time.monotonic() - t0 - t_build

    server = None
    if args.openenv == "auto":
        server, url = start_server(args.app, 4 * args.group + 8, args.max_axtree_chars)
    else:
        url = args.openenv
    if url:
        def factory() -> Any:
            return SimwebOpenEnvToolEnv(url, max_axtree_chars=args.max_axtree_chars)
    else:
        def factory() -> Any:
            return SimwebToolEnv(max_axtree_chars=args.max_axtree_chars)

    config = GRPOConfig(
        output_dir=str(out / "trainer"), max_steps=args.steps, per_device_train_batch_size=args.group,
        num_generations=args.group, max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.max_tool_calls, learning_rate=args.learning_rate, logging_steps=1,
        report_to="none", use_cpu=not torch.cuda.is_available(), bf16=torch.cuda.is_available(), save_strategy="no",
        seed=args.seed, temperature=1.0, beta=0.0, dataloader_num_workers=0, disable_tqdm=True, log_completions=False,
        use_vllm=args.vllm is not None, vllm_mode=args.vllm or "colocate")
    trainer = GRPOTrainer(model=model, args=config, processing_class=tokenizer,
                          train_dataset=Dataset.from_list(rows), environment_factory=factory)
    try:
        t1 = time.monotonic()
        trainer.train()
        t_grpo = time.monotonic() - t1
    finally:
        for env in (trainer.__dict__.get("_environment_pool") or {}).get(None, []):
            if isinstance(env, SimwebOpenEnvToolEnv):
                env._close()
        if server is not None:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=20)
    log = [h for h in trainer.state.log_history if "loss" in h or "reward" in h]
    with open(out / "metrics.jsonl", "w") as f:
        for h in log:
            f.write(json.dumps(h) + "\n")
    summary = {"mode": "openenv" if url else "in-process", "model": args.model or "tiny (built here)", "app": args.app, "tasks": tasks, "seeds": args.seeds,
               "from_end": args.from_end, "group": args.group, "steps": args.steps, "warmup_steps": args.warmup_steps,
               "warmup_loss_first_last": [round(losses[0], 3), round(losses[-1], 3)] if losses else None,
               "vocab": len(tokenizer), "parameters": sum(p.numel() for p in model.parameters()),
               "seconds": {"build": round(t_build, 1), "warmup": round(t_warm, 1), "grpo": round(t_grpo, 1),
                           "total": round(time.monotonic() - t0, 1)},
               "rewards": [h.get("reward") for h in log], "reward_std": [h.get("reward_std") for h in log],
               "tool_calls": [h.get("tools/call_frequency") for h in log],
               "tool_failures": [h.get("tools/failure_frequency") for h in log]}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
