"""`serve` as tables, brief lines and CSV. Formatting only: units and rounding, no arithmetic."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .data import to_csv
from .escape import one_line
from .output import block, conventions_text, heading, new_table
from .text import named, Numbers, amount, duration, rate

if TYPE_CHECKING:
    from ..reports.serve import ServeReport, StepTime

KINDS = {"full": "full attention", "sliding": "sliding window", "chunked": "chunked local",
         "mla": "latent (MLA)", "indexer": "sparse indexer keys", "state": "recurrent state",
         "mla+indexer": "latent (MLA) + indexer keys"}


def _kind(g: Any) -> str:
    name = KINDS.get(g.kind, g.kind)
    if g.window:
        name += f" {g.window:,}"
    if g.chunk:
        name += f" {g.chunk:,}"
    return name + (f" (+{g.draft_layers} draft)" if g.draft_layers else "")


def _layout(s: Any) -> str:
    parts = [f"tp {s.tp}"] + [f"{k} {v}" for k, v in (("pp", s.pp), ("dp", s.dp), ("ep", s.ep))
                              if v > 1]
    return ", ".join(parts)


def serve_tables(report: "ServeReport", nums: Numbers) -> list[Any]:
    s, c = report.settings, report.capacity
    device = (f"{s.devices:,} x {one_line(report.accelerator.title)}" if report.accelerator
              else f"{s.devices:,} device" + ("s" if s.devices > 1 else ""))
    out: list[Any] = [heading(
        report.model.title, f" ({one_line(report.model.name)})\n"
        f"{s.engine}: {device} ({_layout(s)}), max model len "
        f"{s.max_model_len:,}, block {s.block_size}"
        + (f" (grown to {c.hybrid.attention_block_size:,} for the states)"
           if c.hybrid is not None and c.hybrid.attention_block_size != s.block_size else "")
        + f", KV {s.kv_dtype_served}, weights "
        f"{s.weights_dtype}" + (f" (experts {s.experts_dtype})"
                                if s.experts_dtype != s.weights_dtype else "")
        + f"\nmax_num_batched_tokens {s.max_num_batched_tokens:,}, async scheduling "
        f"{'on' if s.async_scheduling else 'off'}, prefix caching "
        f"{'on' if s.prefix_caching else 'off'}"
        + (f" (mamba cache mode {s.mamba_cache_mode})" if s.mamba_cache_mode else "") + "\n")]

    table = new_table("KV cache groups (one device)", ["kind", "layers", "block", "page bytes",
                                                       "bytes per block", "blocks / request"])
    for g in c.groups:
        table.add_row(_kind(g), f"{g.layers}", f"{g.block_size:,}", nums.plain(g.page_bytes),
                      nums.plain(g.block_bytes), f"{g.blocks_per_request:,}")
    out.append(table)

    table = new_table("Capacity", ["", "value"])
    if c.hybrid is not None:
        h = c.hybrid
        table.add_row("attention block grown to hold a state page",
                      f"{h.attention_block_size:,} tokens")
        table.add_row("  state page / padded to", f"{h.state_bytes:,} / "
                      f"{h.state_page_padded or h.state_bytes:,} (+{h.padding_pct:.2f}%)")
    table.add_row("cache per token, every layer", nums.bytes(c.bytes_per_token))
    if c.state_bytes_per_sequence:
        table.add_row("states per sequence, every layer", nums.bytes(c.state_bytes_per_sequence))
    table.add_row("bytes per block (largest group)", nums.bytes(c.bytes_per_block))
    for st in c.memory.stages:
        label = "memory for the cache" + (f", stage {st.stage}" if len(c.memory.stages) > 1
                                          else "")
        table.add_row(f"{label} ({c.memory.source})",
                      f"{nums.bytes(st.available_bytes)} = {st.available_gib} GiB")
    table.add_row("blocks (num_gpu_blocks)", f"{c.num_blocks:,}", style="bold")
    table.add_row(f"blocks per request of {s.max_model_len:,} tokens",
                  f"{c.blocks_per_request:,}")
    table.add_row("maximum concurrency", f"{c.max_concurrency:.2f}x", style="bold")
    table.add_row("GPU KV cache size (as logged)", f"{c.tokens:,} tokens", style="bold")
    table.add_row("sequences scheduled at once", f"{c.scheduled_sequences:,} (max_num_seqs "
                  f"{s.max_num_seqs:,})")
    if c.concurrency_at_request is not None:
        table.add_row(f"concurrency at {c.request_tokens:,} tokens (prompt + gen)",
                      f"{c.concurrency_at_request:.2f}x")
    if not c.fits:
        table.add_row("engine start", "refused: one request does not fit", style="bold")
        if c.estimated_max_model_len is not None:
            table.add_row("  longest that fits (vLLM's estimate)",
                          f"{c.estimated_max_model_len:,}")
    out.append(table)
    out.append(block("Engine log:", [c.log_line]))
    if report.sglang is not None:
        out += _sglang_tables(report.sglang, nums)

    w = report.weights
    table = new_table("Weights", ["", "bytes"])
    table.add_row(f"{w.params:,} params, {w.dtype}" + (f" (experts {w.experts_dtype})"
                                                        if w.experts_dtype != w.dtype else ""),
                  nums.bytes(w.bytes))
    if len({r.format for r in w.storage}) > 1:  # formats differ by module: each one's
        for r in w.storage:
            table.add_row(f"  {r.module}, {r.format}", nums.bytes(r.bytes))
    for i, b in enumerate(w.device_bytes):
        table.add_row("per device" + (f", stage {i}" if len(w.device_bytes) > 1 else ""),
                      nums.bytes(b))
    stages = c.memory.stages
    if c.memory.source == "estimated":
        st = stages[0]
        if st.requested_bytes is not None:
            table.add_row("device memory x utilisation", nums.bytes(st.requested_bytes))
        if st.activation_bytes is not None:
            table.add_row("activation peak (estimated)", nums.bytes(st.activation_bytes))
    out.append(table)

    if report.prefix is not None:
        x = report.prefix
        table = new_table(f"Shared prefix of {x.tokens:,} tokens (prefix caching)", ["", "value"])
        table.add_row("blocks held once", f"{x.shared_blocks_total:,}")
        table.add_row("blocks of each request besides", f"{x.blocks_per_request:,}")
        table.add_row("maximum concurrency", f"{x.max_concurrency:.2f}x", style="bold")
        table.add_row("prefill FLOPs skipped per request", nums.count(x.prefill_flops_saved))
        if x.prefill_flops is not None:
            table.add_row("prefill FLOPs left per request", nums.count(x.prefill_flops))
        out.append(table)

    if report.speculative is not None:
        out.append(_speculation_table(report, nums))
    if report.timing is not None:
        out.append(_timing_table(report, nums))
    if report.performance is not None:
        out += _performance(report.performance)
    if report.pareto is not None:
        out += _pareto(report.pareto)
    if report.disaggregated is not None:
        out += _disaggregated(report.disaggregated)
    if c.memory.how:
        out.append(block("Memory for the cache:", (f"- {line}" for line in c.memory.how)))
    out.append(conventions_text(report.conventions))
    return out


def _sglang_tables(g: Any, nums: Numbers) -> list[Any]:
    table = new_table(f"SGLang token pool (SGLang {g.version} arithmetic, one device)",
                      ["", "value"])
    table.add_row("mem_fraction_static", f"{g.mem_fraction_static:g}" + (
        " (unused: --kv-memory)" if g.memory_source == "given" else " (given)"
        if g.mem_fraction_static_source.startswith("--") else " (SGLang's rule)"))
    table.add_row("chunked_prefill_size / cuda_graph_max_bs",
                  f"{g.chunked_prefill_size:,} / {g.cuda_graph_max_bs:,}")
    if g.total_gpu_memory_bytes is not None:
        table.add_row("free before the weights (estimated)",
                      nums.bytes(g.total_gpu_memory_bytes))
    if g.max_mamba_cache_size is not None:
        table.add_row("recurrent states per request", nums.bytes(g.mamba_cache_per_req))
        table.add_row("state pool (max_mamba_cache_size)", f"{g.max_mamba_cache_size:,}")
    table.add_row(f"memory for the pool ({g.memory_source})", nums.bytes(g.rest_bytes))
    table.add_row(f"bytes per token, every layer ({g.kv_cache_dtype})", f"{g.cell_size:,}")
    table.add_row(f"max_total_num_tokens (page {g.page_size:,})",
                  f"{g.max_total_num_tokens:,}", style="bold")
    table.add_row(f"requests of {g.context_length:,} tokens at once",
                  f"{g.max_concurrency:.2f}x")
    table.add_row("request pool (max_running_requests)", f"{g.max_running_requests:,}")
    return [table, block("SGLang log:", [g.log_line, f"- mem_fraction_static: "
                                         f"{g.mem_fraction_static_source}"]
                         + [f"- {x}" for x in g.how])]


def _step_row(table: Any, label: str, st: "StepTime", nums: Numbers) -> None:
    table.add_row(label, duration(st.bound_s), duration(st.estimate_s),
                  f"{st.binds}; {nums.bytes(st.bytes)} read" +
                  (f", {st.collectives} collectives" if st.collectives else ""))


def _speculation_table(report: "ServeReport", nums: Numbers) -> Any:
    x = report.speculative
    assert x is not None
    table = new_table(f"Speculative decoding: {x.draft}, {x.draft_tokens} draft token"
                      f"{'s' if x.draft_tokens > 1 else ''}, acceptance {x.acceptance:g}",
                      ["", "value"])
    table.add_row("expected tokens per step", f"{x.expected_tokens_per_step:.4g}", style="bold")
    table.add_row("draft layers in the cache", f"{x.draft_layers}")
    table.add_row("  their cache per token", nums.bytes(x.draft_bytes_per_token))
    table.add_row("FLOPs per step: verify (k + 1 tokens)", nums.count(x.verify_flops))
    table.add_row("FLOPs per step: draft (k tokens)", nums.count(x.draft_flops))
    table.add_row("bytes per step and device: verify", nums.bytes(x.verify_bytes))
    table.add_row("bytes per step and device: draft", nums.bytes(x.draft_bytes))
    if x.tpot_bound_s is not None:
        table.add_row("time per step, bound / estimate",
                      f"{duration(x.step_bound_s)} / {duration(x.step_estimate_s)}")
        table.add_row("time per output token, bound / estimate",
                      f"{duration(x.tpot_bound_s)} / {duration(x.tpot_estimate_s)}")
        table.add_row("speed-up over plain decoding, bound / estimate",
                      f"{x.speedup_bound:.3g}x / {x.speedup_estimate:.3g}x", style="bold")
    table.add_row("speed-up ceiling (free draft)", f"{x.speedup_ceiling:.3g}x")
    return table


def _timing_table(report: "ServeReport", nums: Numbers) -> Any:
    t, s = report.timing, report.settings
    assert t is not None
    a = report.accelerator
    title = (f"Time a user sees: prompt {t.prompt:,}, gen {t.gen:,}, batch {t.batch} per replica"
             + (f" on {a.name}" if a else "") + (f", {t.network['name']}"
                                                 if t.network.get("name") else ""))
    table = new_table(title, ["", "bound", "estimate", ""])
    table.add_row(f"time to first token ({t.prefill_chunks} chunk"
                  f"{'s' if t.prefill_chunks != 1 else ''} of {s.max_num_batched_tokens:,})",
                  duration(t.ttft_bound_s), duration(t.ttft_estimate_s),
                  f"{nums.count(t.prefill_flops)} FLOPs ({s.attention})", style="bold")
    _step_row(table, "decode step, first", t.first_step, nums)
    _step_row(table, "decode step, last", t.last_step, nums)
    table.add_row("time per output token (mean)", duration(t.tpot_bound_s),
                  duration(t.tpot_estimate_s), "", style="bold")
    table.add_row("tokens/s per sequence", amount(t.tokens_per_s_per_sequence_bound),
                  amount(t.tokens_per_s_per_sequence_estimate), "")
    table.add_row(f"tokens/s, all {t.batch * s.dp:,} sequences", amount(
        t.tokens_per_s_aggregate_bound), amount(t.tokens_per_s_aggregate_estimate), "")
    table.add_row("whole request", duration(t.request_bound_s), duration(t.request_estimate_s),
                  "")
    sp = t.speeds
    table.add_row("device", rate(sp["peak_flops"], "FLOP/s"), rate(sp["bandwidth"], "B/s"),
                  f"estimate at {sp['compute_efficiency']:.3g} / {sp['memory_efficiency']:.3g}")
    return table


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f}"


def _performance(x: Any) -> list[Any]:
    who = (f"{x.concurrency:,} user{'s' if x.concurrency != 1 else ''} (closed loop)"
           if x.loop == "closed" else
           f"{x.concurrency:,} users (as many as the engines hold)" if x.loop == "offline" else
           f"Poisson arrivals at {x.request_rate:g} requests/s")
    table = new_table(f"Under load: {who}, {x.engine}, {x.replicas} replica"
                      f"{'s' if x.replicas > 1 else ''}",
                      ["", "low", "estimate", "high", "p50", "p90", "p99"])
    rows = (("output tokens/s", x.output_tokens_per_second, amount),
            ("output tokens/s per device", x.output_tokens_per_second_per_gpu, amount),
            ("output tokens/s per user", x.output_tokens_per_second_per_user, amount),
            ("requests/s", x.requests_per_second, amount))
    for label, v, f in rows:
        table.add_row(label, f(v.low), f(v.estimate), f(v.high), "", "", "",
                      style="bold" if label == "output tokens/s" else None)
    for label, m in (("time to first token", x.ttft_seconds),
                     ("time per output token", x.tpot_seconds),
                     ("end to end", x.e2e_seconds)):
        table.add_row(label + " (mean)", duration(m.low), duration(m.estimate),
                      duration(m.high), duration(m.p50.estimate), duration(m.p90.estimate),
                      duration(m.p99.estimate))
    if x.dollars_per_million_output_tokens is not None:
        d = x.dollars_per_million_output_tokens
        table.add_row("$ per million output tokens", f"{d.low:.4g}", f"{d.estimate:.4g}",
                      f"{d.high:.4g}", "", "", "")
    if getattr(x, "joules_per_output_token", None) is not None:
        j = x.joules_per_output_token
        table.add_row("joules per output token (boards)", f"{j.low:.4g}", f"{j.estimate:.4g}",
                      f"{j.high:.4g}", "", "", "")
    st = x.steady_step_seconds
    table.add_row(f"steady step, {x.steady_batch:.4g} decoding ({x.binds}-bound GEMMs)",
                  duration(st.low), duration(st.estimate), duration(st.high), "", "", "")
    lines = [f"- {line}" for line in x.model]
    lines.append(f"- cache holds {x.slots_per_replica:,} such requests per replica, "
                 f"max_num_seqs {x.max_num_seqs:,}; {x.steps_simulated:,} steps simulated "
                 "(estimate); percentiles at the estimate")
    return [table, block("Load model:", lines)]


def _disaggregated(x: Any) -> list[Any]:
    table = new_table(f"Disaggregated: {x.prefill_devices} prefill + {x.decode_devices} decode "
                      f"devices, {x.users:,} users", ["", "low", "estimate", "high"])
    for label, v, f in (
            ("output tokens/s", x.output_tokens_per_second, amount),
            ("output tokens/s per device", x.output_tokens_per_second_per_gpu, amount),
            ("output tokens/s per user", x.output_tokens_per_second_per_user, amount),
            ("time to first token", x.ttft_seconds, duration),
            ("time per output token", x.tpot_seconds, duration),
            ("KV transfer per request", x.kv_transfer_seconds, duration),
            ("prefill pool, requests/s", x.prefill_requests_per_second, amount),
            ("decode pool, requests/s", x.decode_requests_per_second, amount)):
        table.add_row(label, f(v.low), f(v.estimate), f(v.high))
    lines = [f"- bottleneck: {x.bottleneck}; {x.decode_batch:.4g} sequences per decode "
             f"replica, {x.prompts_per_prefill_step:.4g} prompts per prefill step"]
    lines += [f"- {line}" for line in x.model]
    if x.splits:
        lines.append("- splits tried (prefill P, decode D): " + "; ".join(x.splits))
    return [table, block("Pools:", lines)]


def _pareto(x: Any) -> list[Any]:
    table = new_table(f"Pareto front on {x.devices} devices: prompt {x.prompt:,}, gen "
                      f"{x.gen:,}, {x.engine} ({x.searched} points searched)",
                      ["layout", "users", "tokens/s per device", "tokens/s per user", "TPOT",
                       "TTFT"])
    for p in x.points:
        table.add_row(p.layout, f"{p.concurrency:,}", amount(p.output_tokens_per_second_per_gpu),
                      amount(p.output_tokens_per_second_per_user), duration(p.tpot_seconds),
                      duration(p.ttft_seconds))
    lines = [f"- {x.model}", "- layouts: " + ", ".join(x.layouts)]
    lines += [f"- skipped {s}" for s in x.skipped]
    return [table, block("Search:", lines)]


def serve_brief(report: "ServeReport") -> str:
    s, c = report.settings, report.capacity
    lines = [f"{named(report.model)}: {s.engine}, {s.devices} device"
             f"{'s' if s.devices > 1 else ''} "
             f"({_layout(s)}), max model len {s.max_model_len:,}, KV {s.kv_dtype_served}",
             f"groups        " + ", ".join(f"{g.layers} x {g.kind} (block {g.block_size:,})"
                                         for g in c.groups),
             f"weights       {max(report.weights.device_bytes):,} bytes per device "
             f"({_gib(max(report.weights.device_bytes))} GiB), "
             f"{s.weights_dtype}" + (f", experts {s.experts_dtype}"
                                     if s.experts_dtype != s.weights_dtype else "")
             + f" ({report.weights.source.split(';')[0]})",
             f"memory        {c.memory.stages[0].available_bytes:,} bytes per device for the "
             f"cache ({c.memory.source}; {c.memory.stages[0].available_gib} GiB)",
             f"blocks        {c.num_blocks:,} of {c.bytes_per_block:,} bytes; "
             f"{c.blocks_per_request:,} per request",
             f"log           {c.log_line}"]
    if not c.fits:
        lines.append(f"refused       {c.error}")
    if report.sglang is not None:
        lines.append(f"sglang        max_total_num_tokens {report.sglang.max_total_num_tokens:,} "
                     f"(mem_fraction_static {report.sglang.mem_fraction_static:g}, "
                     f"{report.sglang.cell_size:,} bytes per token)")
    if report.prefix is not None:
        lines.append(f"prefix        {report.prefix.tokens:,} shared tokens: "
                     f"{report.prefix.max_concurrency:.2f}x")
    x = report.speculative
    if x is not None:
        lines.append(f"speculative   {x.expected_tokens_per_step:.4g} tokens per step"
                     + (f", speed-up {x.speedup_estimate:.3g}x (estimate)"
                        if x.speedup_estimate is not None else ""))
    t = report.timing
    if t is not None:
        lines.append(f"TTFT          {duration(t.ttft_estimate_s)} estimate, >= "
                     f"{duration(t.ttft_bound_s)} (prefill attention "
                     f"{report.settings.attention})")
        lines.append(f"TPOT          {duration(t.tpot_estimate_s)} estimate, >= "
                     f"{duration(t.tpot_bound_s)}; {amount(t.tokens_per_s_per_sequence_estimate)}"
                     f" tokens/s per sequence, {amount(t.tokens_per_s_aggregate_estimate)} in "
                     "all")
    x = report.performance
    if x is not None:
        lines.append(f"under load    {amount(x.output_tokens_per_second.estimate)} output "
                     f"tokens/s ({amount(x.output_tokens_per_second.low)}-"
                     f"{amount(x.output_tokens_per_second.high)}), TTFT "
                     f"{duration(x.ttft_seconds.estimate)}, TPOT "
                     f"{duration(x.tpot_seconds.estimate)}")
    for p in report.pareto.points if report.pareto is not None else ():
        lines.append(f"front         {p.layout} x {p.concurrency:,} users: "
                     f"{amount(p.output_tokens_per_second_per_gpu)} tokens/s per device, "
                     f"{amount(p.output_tokens_per_second_per_user)} per user")
    return "\n".join(lines) + "\n"


# Units of serve's CSV rows, by the end of a key (the first that matches).
_UNITS = (("tokens_per_s", "tokens/s"), ("_ns", "ns"), ("_s", "s"), ("peak_flops", "FLOP/s"),
          ("bandwidth", "bytes/s"), ("flops", "FLOPs"), ("bytes", "bytes"),
          ("bytes_per_token", "bytes"), ("concurrency", "x"), ("expected_tokens_per_step",
                                                               "tokens"),
          ("speedup", "x"), ("ceiling", "x"), ("utilization", "fraction"),
          ("efficiency", "fraction"), ("acceptance", "fraction"), ("pct", "%"),
          ("blocks", "blocks"), ("blocks_total", "blocks"), ("block_size", "tokens"),
          ("chunks", "steps"), ("collectives", "collectives"), ("layers", "layers"),
          ("params", "params"), ("tokens", "tokens"), ("max_model_len", "tokens"),
          ("prompt", "tokens"), ("gen", "tokens"), ("batch", "sequences"),
          ("max_num_seqs", "sequences"), ("sequences", "sequences"), ("devices", "devices"),
          ("domain_size", "devices"), ("tp", "devices"), ("pp", "devices"), ("dp", "devices"),
          ("ep", "devices"), ("multiple", "tokens"), ("window", "tokens"), ("chunk", "tokens"),
          ("len", "tokens"))


_LEAVES = {"bytes_per_block": "bytes", "blocks_per_request": "blocks",
           "concurrency_at_request": "x", "state_bytes_per_sequence": "bytes",
           "device_bytes": "bytes", "available_gib": "GiB", "state_page_padded": "bytes",
           "shared_blocks": "blocks"}


def _unit(name: str, value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return ""
    leaf = name.rsplit(".", 1)[-1]
    if leaf in _LEAVES:
        return _LEAVES[leaf]
    if isinstance(value, str):
        return ""
    return next((u for end, u in _UNITS if leaf.endswith(end)), "")


def serve_csv(report: "ServeReport") -> str:
    """One row per figure: model and layout, then section, name, value and unit; the cache
    groups as `groups.N.*`, the pipeline stages as `capacity.memory.stages.N.*`."""
    s = report.settings
    doc = report.to_dict()
    key = [report.model.name, s.max_model_len, s.tp, s.pp, s.dp]
    rows = []
    for section in ("settings", "capacity", "weights", "prefix", "speculative", "timing",
                    "performance", "pareto", "disaggregated", "sglang"):
        value = doc.get(section)
        if not isinstance(value, dict):
            continue
        flat = _flatten(value, section)
        rows += [[*key, sec, name, leaf, _unit(name, leaf)] for sec, name, leaf in flat]
    return to_csv(["model", "max_model_len", "tp", "pp", "dp", "section", "name", "value",
                   "unit"], rows)


def _flatten(value: Any, section: str, path: str = "") -> list[tuple[str, str, Any]]:
    """(section, dotted name, leaf) of every number, text and flag; lists numbered."""
    out: list[tuple[str, str, Any]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _flatten(v, section, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            out.append((section, path, " ".join(map(str, value))))
        else:
            for i, v in enumerate(value):
                out += _flatten(v, section, f"{path}.{i}")
    else:
        out.append((section, path, value))
    return out
