"""Run SGLang's own memory-pool planning code on CPU, with a stand-in device, for the cases of
cases.py; print the results as JSON (dump.py records them for flopcalc's tests).

    $SGLANG_VENV/venv/bin/python tools/sglang_reference/reference.py 0.5.5 [--summary]

One SGLang release per process (its files are `$SGLANG_VENV/sglang-<version>`, install.sh).
Releases that resolve their settings in hooks (`srt/arg_groups/`, 0.5.23 on) run through
configurators.py instead; what follows is 0.4.9's and 0.5.5's path.
SGLang cannot be imported whole without a GPU stack, so the functions that size the pools are
taken from its source files by name (ast) and executed as they are written:

- the default `mem_fraction_static`, `chunked_prefill_size`, `cuda_graph_max_bs`: 0.5.x
  `ServerArgs._handle_gpu_memory_settings(gpu_mem)`; 0.4.9 the three `if self.X is None:`
  blocks of `ServerArgs.__post_init__` that set them;
- `ModelRunner.profile_max_num_token`, `handle_max_mamba_cache` (0.5.x) and `init_memory_pool`
  up to the request pool's construction (the cap by --max-total-tokens, the rounding to whole
  pages, the request pool and its cap by the recurrent-state slots), which raises a stop with
  the sizes it was about to allocate;
- `ModelConfig.get_total_num_kv_heads` / `get_num_kv_heads`;
- for hybrid models the config classes themselves (`configs/qwen3_next.py`,
  `configs/nemotron_h.py`) with `configs/mamba_utils.py` (state shapes, `mamba_cache_per_req`),
  imported as modules with only their own imports run.

What stands in for the rest (stated, the same for every release): the device (free memory
before the weights = the device's memory, after = that − the weights, as
`get_available_gpu_memory` reports them: bytes / 2³⁰), tensor parallel size = attention tp
size, one pipeline stage, no drafter, radix cache on, no DP attention, CUDA; `ModelConfig`'s
plain fields read from config.json as it reads them (head_dim = config's head_dim or
hidden_size // num_attention_heads; context_len = max_position_embeddings unless given;
use_mla_backend = the config has kv_lora_rank; num_effective_layers = num_hidden_layers); the
model's dtype bf16.
"""

from __future__ import annotations

import ast
import json
import os
import sys
import textwrap
import types
from types import SimpleNamespace as NS

HERE = os.path.dirname(os.path.abspath(__file__))
VENV = os.environ.get("SGLANG_VENV", "/work/venvs/sglang")
CONFIGS = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir, "tests", "data", "serve",
                                        "configs"))
GiB = 1 << 30
MiB = 1 << 20


class Stop(Exception):
    """Raised by the stand-in request pool: init_memory_pool has sized everything."""

    def __init__(self, **sizes):
        super().__init__()
        self.sizes = sizes


def root(version: str) -> str:
    return os.path.join(VENV, f"sglang-{version}", "sglang")


def read(version: str, rel: str) -> str:
    with open(os.path.join(root(version), rel)) as f:
        return f.read()


def class_node(text: str, name: str) -> ast.ClassDef:
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise LookupError(name)


def methods(version: str, rel: str, cls: str, names: list[str], globs: dict) -> dict:
    """SGLang's methods `names` of class `cls` in file `rel`, compiled in `globs`."""
    text = read(version, rel)
    out = {}
    for item in class_node(text, cls).body:
        if isinstance(item, ast.FunctionDef) and item.name in names:
            src = textwrap.dedent(ast.get_source_segment(text, item, padded=True))
            exec(compile(src, f"<sglang {version} {rel} {cls}.{item.name}>", "exec"), globs)
            out[item.name] = globs[item.name]
    missing = set(names) - set(out)
    if missing:
        raise LookupError(f"{rel} {cls}: {sorted(missing)}")
    return out


def literal_fields(version: str, rel: str, cls: str) -> dict:
    """A dataclass's fields with literal defaults (ServerArgs: mamba_full_memory_ratio ...)."""
    out = {}
    for item in class_node(read(version, rel), cls).body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value:
            try:
                out[item.target.id] = ast.literal_eval(item.value)
            except ValueError:
                pass
    return out


def module_constant(version: str, rel: str, name: str):
    for node in ast.parse(read(version, rel)).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name
                                                 for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(name)


def install_packages(version: str, tp: int) -> None:
    """Package objects for sglang, sglang.srt, ... whose __init__ does not run (they import the
    GPU stack), so that leaf modules (configs/mamba_utils.py ...) import alone."""
    for name in list(sys.modules):
        if name == "sglang" or name.startswith("sglang."):
            del sys.modules[name]
    base = root(version)
    for pkg in ("sglang", "sglang.srt", "sglang.srt.configs", "sglang.srt.distributed",
                "sglang.srt.layers"):
        m = types.ModuleType(pkg)
        m.__path__ = [os.path.join(base, *pkg.split(".")[1:])]
        sys.modules[pkg] = m
    dp = types.ModuleType("sglang.srt.layers.dp_attention")
    dp.get_attention_tp_size = lambda: tp
    sys.modules["sglang.srt.layers.dp_attention"] = dp
    util = types.ModuleType("sglang.srt.distributed.utils")

    def divide(numerator, denominator):  # sglang/srt/distributed/utils.py
        assert numerator % denominator == 0, f"{numerator} is not divisible by {denominator}"
        return numerator // denominator
    util.divide = divide
    sys.modules["sglang.srt.distributed.utils"] = util
    os.environ.setdefault("SGLANG_MAMBA_SSM_DTYPE", "float32")  # server_args: mamba_ssm_dtype


def hf_config(version: str, raw: dict):
    """The config object SGLang builds: its own class for hybrid models, else a namespace."""
    arch = (raw.get("architectures") or [""])[0]
    if arch in ("Qwen3NextForCausalLM", "NemotronHForCausalLM"):
        import transformers.modeling_rope_utils as rope
        if not hasattr(rope, "rope_config_validation"):  # gone from transformers 5
            rope.rope_config_validation = lambda *a, **k: None
        import importlib
        if arch == "Qwen3NextForCausalLM":
            cls = importlib.import_module("sglang.srt.configs.qwen3_next").Qwen3NextConfig
        else:
            cls = importlib.import_module("sglang.srt.configs.nemotron_h").NemotronHConfig
        return cls(**{k: v for k, v in raw.items() if k not in ("architectures",
                                                                 "auto_map")}), True
    return NS(**raw), False


def model_config(version: str, raw: dict, context_len):
    hf, hybrid = hf_config(version, raw)
    g = {}
    kv = methods(version, "srt/configs/model_config.py", "ModelConfig",
                 ["get_total_num_kv_heads", "get_num_kv_heads"], g)
    mc = NS(hf_config=hf, hf_text_config=hf)
    mc.get_total_num_kv_heads = types.MethodType(kv["get_total_num_kv_heads"], mc)
    mc.get_num_kv_heads = types.MethodType(kv["get_num_kv_heads"], mc)
    heads = raw.get("num_attention_heads")
    mc.head_dim = raw.get("head_dim") or (raw["hidden_size"] // heads if heads else None)
    mc.num_hidden_layers = raw["num_hidden_layers"]
    mc.context_len = context_len or raw["max_position_embeddings"]
    mc.kv_lora_rank = raw.get("kv_lora_rank")
    mc.qk_rope_head_dim = raw.get("qk_rope_head_dim")
    mc.is_multimodal = False
    return mc, hybrid


def server_defaults(version: str, gpu_mem_mib, tp: int) -> dict:
    """(mem_fraction_static, chunked_prefill_size, cuda_graph_max_bs) by SGLang's own rule."""
    fields = literal_fields(version, "srt/server_args.py", "ServerArgs")
    self = NS(**fields)
    self.tp_size, self.pp_size, self.dp_size = tp, 1, 1
    self.mem_fraction_static = None
    self.chunked_prefill_size = None
    self.cuda_graph_max_bs = None
    self.cuda_graph_bs = None
    self.speculative_algorithm = None
    self.enable_dp_attention = False
    self.device = "cuda"
    self.piecewise_cuda_graph_tokens = None
    self.model_path = "model"
    self._generate_cuda_graph_batch_sizes = lambda: [1]
    self._generate_piecewise_cuda_graph_tokens = lambda: [1]
    self.get_model_config = lambda: NS(is_multimodal=False)
    mc_mod = types.ModuleType("sglang.srt.configs.model_config")
    mc_mod.ModelConfig = NS(from_server_args=lambda *a, **k: NS(is_multimodal=False))
    sys.modules["sglang.srt.configs.model_config"] = mc_mod
    g = {"is_npu": lambda: False, "is_hip": lambda: False, "is_cuda": lambda: True,
         "logger": NS(warning=print, info=print), "torch": __import__("torch")}
    text = read(version, "srt/server_args.py")
    cls = class_node(text, "ServerArgs")
    names = {item.name for item in cls.body if isinstance(item, ast.FunctionDef)}
    if "_handle_gpu_memory_settings" in names:  # 0.5.x
        f = methods(version, "srt/server_args.py", "ServerArgs",
                    ["_handle_gpu_memory_settings"], g)["_handle_gpu_memory_settings"]
        f(self, gpu_mem_mib)
    else:  # 0.4.9: blocks of __post_init__
        post = next(i for i in cls.body if isinstance(i, ast.FunctionDef)
                    and i.name == "__post_init__")
        wanted = {"self.mem_fraction_static is None", "self.chunked_prefill_size is None",
                  "self.cuda_graph_max_bs is None"}
        blocks = [textwrap.dedent(ast.get_source_segment(text, s, padded=True))
                  for s in post.body if isinstance(s, ast.If) and ast.unparse(s.test) in wanted]
        assert len(blocks) == 3, len(blocks)
        src = "def _defaults(self, gpu_mem):\n" + textwrap.indent("\n".join(blocks), "    ")
        exec(compile(src, f"<sglang {version} ServerArgs.__post_init__ blocks>", "exec"), g)
        g["_defaults"](self, gpu_mem_mib)
    return {"mem_fraction_static": self.mem_fraction_static,
            "chunked_prefill_size": self.chunked_prefill_size,
            "cuda_graph_max_bs": self.cuda_graph_max_bs,
            "mamba_full_memory_ratio": fields.get("mamba_full_memory_ratio"),
            "page_size": fields.get("page_size")}


def run_case(version: str, case: dict) -> dict:
    import torch

    if os.path.exists(os.path.join(root(version), "srt", "arg_groups", "memory_hook.py")):
        import configurators  # 0.5.23 on: settings hooks and pool configurators

        return configurators.run_case(version, case)

    tp = case["tp"]
    install_packages(version, tp)
    with open(os.path.join(CONFIGS, case["model"] + ".json")) as f:
        raw = json.load(f)
    defaults = server_defaults(version, case["gpu_mem_mib"], tp)
    arch = raw["architectures"][0]
    own = {"Qwen3NextForCausalLM": "qwen3_next.py", "NemotronHForCausalLM": "nemotron_h.py"}
    if arch in own and not os.path.exists(os.path.join(root(version), "srt", "configs",
                                                       own[arch])):
        return {"error": f"SGLang {version} has no {arch}"}
    fraction = case.get("mem_fraction_static")
    if fraction is None:
        fraction = defaults["mem_fraction_static"]
    mc, hybrid = model_config(version, raw, case.get("context_length"))
    total = case["gpu_mem_mib"] * MiB
    available = total - case["weights_bytes"]
    # 0.5.x ServerArgs._handle_page_size: None → 1 (the backends that force 64 or 128 pages,
    # FlashMLA, TRT-LLM MLA on Blackwell, are not these cases'); 0.4.9's default is 1
    page = case.get("page_size") or defaults["page_size"] or 1
    server_args = NS(
        kv_cache_dtype=case.get("kv_cache_dtype", "auto"), page_size=page,
        mem_fraction_static=fraction, disable_radix_cache=False, max_mamba_cache_size=None,
        max_running_requests=case.get("max_running_requests"),
        speculative_num_draft_tokens=None, mamba_full_memory_ratio=
        defaults["mamba_full_memory_ratio"], dp_size=1, enable_dp_attention=False,
        disaggregation_mode="null", attention_backend="flashinfer", enable_memory_saver=False)

    def pool(**kw):
        raise Stop(**kw)
    rel = "srt/model_executor/model_runner.py"
    g = {
        "torch": torch, "logging": NS(warning=lambda *a: None),
        "logger": NS(info=lambda *a: None, warning=lambda *a: None),
        "log_info_on_rank0": lambda *a: None, "Optional": __import__("typing").Optional,
        # the device: free bytes / 2³⁰ (sglang.srt.utils.get_available_gpu_memory)
        "get_available_gpu_memory": lambda *a, **k: available / (1 << 30),
        "get_world_group": lambda: NS(world_size=tp, cpu_group=None),
        "get_attention_tp_size": lambda: tp, "_is_hip": False, "_is_npu": False,
        "is_float4_e2m1fn_x2": lambda dtype: False, "is_deepseek_nsa": lambda cfg: False,
        "SGLANG_CI_SMALL_KV_SIZE": None,
        "ReqToTokenPool": pool, "HybridReqToTokenPool": pool,
    }
    try:
        g["MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO"] = module_constant(
            version, rel, "MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO")
    except LookupError:
        pass
    names = ["profile_max_num_token", "init_memory_pool"]
    if hybrid:
        names.append("handle_max_mamba_cache")
    try:
        f = methods(version, rel, "ModelRunner", names, g)
    except LookupError as e:
        return {"error": f"SGLang {version} has no {e}"}
    runner = NS(device="cuda", gpu_id=0, is_draft_worker=False, model_config=mc,
                server_args=server_args, mem_fraction_static=fraction, dtype=torch.bfloat16,
                model=NS(quant_config=None), spec_algorithm=NS(
                    is_eagle=lambda: False, is_standalone=lambda: False, is_none=lambda: True),
                pp_size=1, tp_size=tp, is_hybrid=False, req_to_token_pool=None,
                page_size=page, num_effective_layers=raw["num_hidden_layers"],
                use_mla_backend=raw.get("kv_lora_rank") is not None)
    if hybrid:
        runner.mambaish_config = runner.hybrid_gdn_config = mc.hf_config
        if raw["architectures"][0] != "Qwen3NextForCausalLM":
            runner.hybrid_gdn_config = None
        runner.mamba2_config = runner.kimi_linear_config = None
        runner.handle_max_mamba_cache = types.MethodType(f["handle_max_mamba_cache"], runner)
    else:
        runner.mambaish_config = runner.hybrid_gdn_config = None
    runner.profile_max_num_token = types.MethodType(f["profile_max_num_token"], runner)
    row = {"defaults": defaults, "mem_fraction_static": fraction}
    try:
        f["init_memory_pool"](runner, total / (1 << 30),
                              case.get("max_running_requests"), case.get("max_total_tokens"))
    except Stop as stop:
        row["max_total_num_tokens"] = runner.max_total_num_tokens
        row["max_num_reqs"] = stop.sizes["size"]
        if "mamba_size" in stop.sizes:
            row["max_mamba_cache_size"] = stop.sizes["mamba_size"]
            row["mamba_cache_per_req"] = mc.hf_config.mamba2_cache_params.mamba_cache_per_req
        row["kv_cache_dtype"] = str(runner.kv_cache_dtype)
        return row
    except RuntimeError as e:
        row["error"] = str(e).split(".")[0]
        return row
    raise AssertionError("init_memory_pool did not reach the request pool")


def main() -> None:
    sys.path.insert(0, HERE)
    from cases import CASES  # noqa: E402
    version = sys.argv[1]
    rows = []
    for case in CASES:
        if version not in case.get("versions", (version,)):
            continue
        rows.append({"case": case, "sglang": run_case(version, case)})
    if "--summary" in sys.argv:
        for r in rows:
            c, s = r["case"], r["sglang"]
            print(version, c["model"], "tp", c["tp"], s.get("max_total_num_tokens",
                                                          s.get("error")))
    else:
        json.dump(rows, sys.stdout)


if __name__ == "__main__":
    main()
