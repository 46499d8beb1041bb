"""The memory of many layouts of one model, fast: the same arithmetic as `counting.memory`
(and `memory_more`), with the pieces that do not depend on a layout's every option computed
once (the parameters a device holds per tensor-, pipeline- and expert-parallel split, one
layer's saved tensors per micro-batch and split). `tests/predict/test_plan_memory.py` checks
it equals `counting.memory` byte for byte over a grid of layouts."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from math import ceil, lcm
from typing import Any, Optional

from ..kinds.base import EXPERT, LAST, SPREAD
from ..models.spec import ModelSpec
from .layers import layer_activations, layer_params
from .memory import Setup, check_setup, output_activation_parts, share
from .memory_techniques import is_matrix
from .model import trained_params


class FastMemory:
    """`total(setup)`: bytes per device of the first stage, as counting.memory counts them."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.params = trained_params(spec)
        self.layers = spec.n_layers()
        self._held: dict[tuple, tuple[Fraction, Fraction]] = {}
        self._largest: dict[tuple, Fraction] = {}
        self._modules: Optional[list[list[tuple[Any, int, bool]]]] = None
        self._classes: Optional[list[tuple[tuple, Any, int]]] = None
        self._acts: dict[tuple, list[list[tuple[str, Fraction, bool]]]] = {}
        self._valid: dict[tuple, Optional[str]] = {}
        self._saved: dict[tuple, int] = {}
        self._states: dict[tuple, int] = {}
        self._whole: dict[tuple, list[list[tuple[str, int, int, bool]]]] = {}
        self._group_counts: Optional[list[int]] = None

    def _stage(self, pp: int) -> int:
        return -(-self.layers // pp)  # ⌈L/p⌉

    @staticmethod
    def _shares(probe: Setup) -> Any:
        """A tensor's share on the device of `probe` as (numerator, denominator), by role
        (`counting.memory.share` reads the role alone)."""
        found: dict[str, tuple[int, int]] = {}

        def of(p: Any) -> tuple[int, int]:
            got = found.get(p.role)
            if got is None:
                f = share(p, probe)
                got = found[p.role] = (f.numerator, f.denominator)
            return got

        return of

    def held(self, tp: int, pp: int, ep: int, etp: int = 1,
             copies: int = 1) -> tuple[Fraction, ...]:
        """(dense parameters, dense matrices, expert parameters, expert matrices) the first
        stage's device holds; `copies` of each layer's share (DualPipe's two stages a device:
        `Setup.stage_copies`). A tensor's share reads its role alone (`counting.memory.share`):
        the parameters are summed once by role, stage and matrix-ness."""
        key = (tp, pp, ep, etp, copies)
        if key not in self._held:
            if self._classes is None:
                classes: dict[tuple, list] = {}
                for p in self.params:
                    at = classes.setdefault((p.role, p.stage, is_matrix(p)), [p, 0])
                    at[1] += p.value
                self._classes = [(k, rep, total) for k, (rep, total) in classes.items()]
            shares = self._shares(Setup(seq=1, batch=1, tp=tp, pp=pp, ep=ep, etp=etp))
            # total · share · (the stage's ⌈L/p⌉·copies / L for the layers' tensors), summed
            # as numerators over a common denominator: Fraction arithmetic was most of the
            # time of a plan's search here
            terms = []
            for (role, where, matrix), rep, total in self._classes:
                if where == LAST and pp > 1:
                    continue
                tn, td = _ratio(total)
                sn, sd = shares(rep)
                num, den = tn * sn, td * sd
                if where == SPREAD:
                    num, den = num * self._stage(pp) * copies, den * self.layers
                terms.append((2 if role == EXPERT else 0, matrix, num, den))
            common = lcm(*(den for _, _, _, den in terms)) if terms else 1
            sums = [0] * 4
            for at, matrix, num, den in terms:
                v = num * (common // den)
                sums[at] += v
                if matrix:
                    sums[at + 1] += v
            self._held[key] = tuple(Fraction(v, common) for v in sums)
        return self._held[key]

    def largest(self, tp: int, pp: int, ep: int, etp: int = 1) -> Fraction:
        """`memory_techniques.largest_module`'s figure: each module's parameters summed once
        by role (a tensor's share reads its role alone), then shared out per layout; the
        tensors of the last stage outside the layers count only with one stage."""
        key = (tp, pp > 1, ep, etp)  # the depth matters only as one stage or more
        if key not in self._largest:
            if self._modules is None:
                self._modules = self._module_sums()
            shares = self._shares(Setup(seq=1, batch=1, tp=tp, pp=pp, ep=ep, etp=etp))
            # each module's Σ total · share as a numerator over a common denominator
            terms = []
            for roles in self._modules:
                module = []
                for rep, total, last in roles:
                    if not (last and pp > 1):
                        (tn, td), (sn, sd) = _ratio(total), shares(rep)
                        module.append((tn * sn, td * sd))
                terms.append(module)
            common = lcm(*(den for module in terms for _, den in module)) if any(terms) else 1
            best = max((sum(num * (common // den) for num, den in module) for module in terms),
                       default=0)
            self._largest[key] = Fraction(max(best, 0), common)
        return self._largest[key]

    def _module_sums(self) -> list[list[tuple[Any, int, bool]]]:
        """Per module, [(a tensor of the role, the role's parameters, on the last stage)]: the
        modules of each layer group, then the tensors outside the layers (each alone without
        a `Part.module`)."""
        spec = self.spec
        parts = [((g.stack, g.first), p, False) for g in spec.groups()
                 for p in layer_params(g.layer, spec.d_model)]
        parts += [((), p, p.stage == LAST) for p in self.params if p.stage != SPREAD]
        modules: dict[tuple[object, ...], dict[tuple, list]] = {}
        out: list[list[tuple[Any, int, bool]]] = []
        for scope, p, last in parts:
            if p.module is None:
                out.append([(p, p.value, last)])
                continue
            roles = modules.setdefault(scope + (p.module,), {})
            at = roles.setdefault((p.role, last), [p, 0])
            at[1] += p.value
        out += [[(rep, total, last) for (_, last), (rep, total) in roles.items()]
                for roles in modules.values()]
        return out

    def state(self, setup: Setup) -> int:
        """Weights, gradients and optimizer state, remembered by what `_state` reads (a plan's
        search meets each again across micro-batches, recomputation and context-parallel
        sizes: dp and cp count only as the ranks ZeRO shards over)."""
        key = (setup.tp, setup.pp, setup.ep, setup.etp, setup.stage_copies,
               setup.shards if setup.extended else setup.dp, setup.expert_shards, setup.zero,
               setup.bytes_per_param, setup.offload_optimizer, setup.fp8, setup.zero3_buffer)
        return _remembered(self._states, key, lambda: self._state(setup))

    def _state(self, setup: Setup) -> int:
        dense, dense_matrix, expert, expert_matrix = self.held(setup.tp, setup.pp, setup.ep,
                                                               setup.etp, setup.stage_copies)
        w, g, o = setup.bytes_per_param
        # dense state shards over dp (times cp among the extended options), experts' over
        # the expert-data-parallel group
        shards = setup.shards if setup.extended else setup.dp
        experts = setup.expert_shards

        def zero(stage: int, k: int, d: Fraction, e: Fraction) -> int:
            """⌈k·d / shards + k·e / experts⌉ (or ⌈k·(d + e)⌉ below this ZeRO stage), in
            whole numbers: Fraction arithmetic was most of a plan search's time."""
            dn, dd, en, ed = d.numerator, d.denominator, e.numerator, e.denominator
            if setup.zero >= stage:
                num = k * (dn * ed * experts + en * dd * shards)
                den = dd * ed * shards * experts
            else:
                num, den = k * (dn * ed + en * dd), dd * ed
            return -(-num // den)

        total = zero(3, w, dense, expert) + zero(2, g, dense, expert)
        total += 0 if setup.offload_optimizer else zero(1, o, dense, expert)
        if setup.fp8:
            total += zero(3, 1, dense_matrix, expert_matrix)
        if setup.zero3_buffer and setup.zero == 3:
            total += ceil(self.largest(setup.tp, setup.pp, setup.ep, setup.etp) * (w + g))
        return total

    def layer_parts(self, setup: Setup, seq: int) -> list[list[tuple[str, Fraction, bool]]]:
        """Each group's saved tensors per layer: (name, bytes, `Part.gemm_input`)."""
        key = (seq, setup.batch, setup.tp, setup.sequence_parallel, setup.recompute,
               setup.dropout, setup.flash)
        if key not in self._acts:
            k = Setup(seq=seq, batch=setup.batch, tp=setup.tp,
                      sequence_parallel=setup.sequence_parallel, recompute=setup.recompute,
                      dropout=setup.dropout, flash=setup.flash)
            self._acts[key] = [[(p.name, Fraction(p.value), p.gemm_input) for p in
                                layer_activations(g.layer, self.spec.d_model, k)]
                               for g in self.spec.groups()]
        return self._acts[key]

    def _counts(self) -> list[int]:
        """Each group's layers, in `spec.groups()`' order."""
        if self._group_counts is None:
            self._group_counts = [g.count for g in self.spec.groups()]
        return self._group_counts

    def _whole_parts(self, setup: Setup, seq: int) -> list[list[tuple[str, int, int, bool]]]:
        """`layer_parts` as (the merged name, numerator, denominator, `Part.gemm_input`)."""
        key = (seq, setup.batch, setup.tp, setup.sequence_parallel, setup.recompute,
               setup.dropout, setup.flash)
        got = self._whole.get(key)
        if got is None:
            got = self._whole[key] = [
                [(f"layers.{name}", value.numerator, value.denominator, gemm_input)
                 for name, value, gemm_input in parts] for parts in self.layer_parts(setup, seq)]
        return got

    def activations(self, setup: Setup) -> int:
        """The saved activations: a layout's data- and expert-parallel sizes and ZeRO stage do
        not change them, so a plan's search reuses them across those (keyed by what they
        read: the Keeping fields, cp, pp and fp8)."""
        key = (setup.seq, setup.cp, setup.batch, setup.tp, setup.sequence_parallel,
               setup.recompute, setup.dropout, setup.flash, setup.pp, setup.vp, setup.schedule,
               setup.extended, setup.fp8, setup.lora_rank)
        return _remembered(self._saved, key, lambda: self._activations(setup))

    def _activations(self, setup: Setup) -> int:
        spec = self.spec
        seq = setup.seq // setup.cp if setup.extended else setup.seq
        s, b, t, d = seq, setup.batch, setup.tp, spec.d_model
        in_flight = setup.in_flight
        named: dict[str, int] = {}  # summed by name, as counting.memory merges them
        inputs: dict[str, Fraction] = {}  # a merged part's projection-input share: its first's
        # each group's share of the stage, count / L · ⌈L/p⌉ · in flight, as a numerator and
        # denominator (not reduced: a ceiling reads the value alone)
        stage = -(-self.layers // setup.pp) * in_flight.numerator
        fd = self.layers * in_flight.denominator
        for count, parts in zip(self._counts(), self._whole_parts(setup, seq)):
            fn = count * stage
            for key, vn, vd, gemm_input in parts:
                # ⌈value · fraction⌉ in whole numbers
                named[key] = named.get(key, 0) - (-(vn * fn) // (vd * fd))
                if key not in inputs:
                    inputs[key] = gemm_input
        sp = Fraction(1, t) if setup.sequence_parallel else Fraction(1)
        extra = ceil(s * b * d * in_flight * sp) if setup.dropout else 0
        if setup.pp == 1:
            extra += sum(p.value for p in output_activation_parts(spec, replace(setup, seq=seq)))
        if setup.extended and setup.fp8:
            named = {k: (ceil(v - v * inputs[k] / 2) if inputs[k] else v)
                     for k, v in named.items()}
        if setup.extended and setup.lora_rank:
            raise NotImplementedError("LoRA layouts go through counting.memory")
        return sum(named.values()) + extra

    def problem(self, setup: Setup) -> Optional[str]:
        """Why the layout is invalid (counting.memory's checks), remembered; None: it is
        valid."""
        key = (setup.tp, setup.pp, setup.ep, setup.etp, setup.dp, setup.cp,
               setup.sequence_parallel, setup.flash, setup.seq, setup.schedule)
        if key not in self._valid:
            self._valid[key] = check_setup(self.spec, setup)
        return self._valid[key]

    def total(self, setup: Setup) -> Optional[int]:
        """Bytes per device, or None when the layout is invalid (counting.memory's checks)."""
        if self.problem(setup):
            return None
        return self.state(setup) + self.activations(setup)


def _ratio(x: Any) -> tuple[int, int]:
    """(numerator, denominator) of an int or a Fraction."""
    return (x, 1) if isinstance(x, int) else (x.numerator, x.denominator)


def _remembered(store: dict, key: tuple, work: Any) -> int:
    """work() once per key of `store`."""
    found = store.get(key)
    if found is None:
        found = store[key] = work()
    return found
