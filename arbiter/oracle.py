"""Feasibility oracle over a compiled model, and deletion-based MUS extraction.

The oracle solves with a list of assumption literals, no objective, one worker and
presolve off (cores are only meaningful that way, and small models solve faster without
presolve). `mus()` shrinks the solver's core by deletion with core refinement: every
element it keeps was tested necessary, so the result is subset-minimal.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from .compile import CompiledModel
from .cpsat import cp_model
from .errors import InternalError


class Oracle:
    """Feasibility checks on one compiled model; `compiled` may be given as a function
    that builds it, called on first use (`calls` counts checks from the start, so a
    caller can also add the checks it ran on smaller models)."""

    def __init__(self, compiled: CompiledModel | Callable[[], CompiledModel], *, seed: int = 0):
        self._compiled = compiled if isinstance(compiled, CompiledModel) else None
        self._build = None if isinstance(compiled, CompiledModel) else compiled
        self.solver = cp_model.CpSolver()
        params = self.solver.parameters
        params.num_workers = 1
        params.random_seed = seed
        params.cp_model_presolve = False
        # feasibility checks need no LP relaxation, probing or symmetry detection; without
        # them a check on the realistic scenario costs about half as much
        params.linearization_level = 0
        params.cp_model_probing_level = 0
        params.symmetry_level = 0
        self.calls = 0

    @property
    def compiled(self) -> CompiledModel:
        if self._compiled is None:
            assert self._build is not None
            self._compiled = self._build()
        return self._compiled

    @property
    def model(self) -> Any:
        return self.compiled.model

    def check(self, assumptions: Sequence[Any]) -> tuple[bool, set[int]]:
        """(feasible, indices of a sufficient subset of assumptions when infeasible)."""
        self.calls += 1
        self.model.clear_assumptions()
        self.model.add_assumptions(list(assumptions))
        status = self.solver.solve(self.model)
        self.model.clear_assumptions()
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return True, set()
        if status != cp_model.INFEASIBLE:
            raise InternalError(
                f"internal error: feasibility check ended with status {self.solver.status_name(status)}"
            )
        return False, set(self.solver.sufficient_assumptions_for_infeasibility())

    def mus(
        self,
        background: Sequence[Any],
        candidates: Sequence[tuple[Hashable, Any]],
        witness: Callable[[list[Hashable]], bool] | None = None,
        learn: Callable[[Oracle], None] | None = None,
        refute: Callable[[list[Hashable]], bool] | None = None,
    ) -> list[Hashable] | None:
        """A minimal subset of `candidates` (key, literal) infeasible with `background`, in
        candidate order; None when background plus all candidates is feasible. Candidates
        listed first are tested for removal first, so later ones are preferred to stay.

        `witness(keys)`, when given, says True only when it holds a configuration that
        satisfies the background and the candidates named (a proof of feasibility); a
        deletion step it answers needs no solver call. It never proves infeasibility.
        `learn(self)`, when given, is called after each check that finds a solution (for
        a witness to keep it). `refute(keys)`, when given, says True only when it proves
        the background and the candidates named infeasible; it stands in for the check
        that confirms the solver's first core (it never proves feasibility)."""
        feasible, core = self.check([*background, *(lit for _, lit in candidates)])
        if feasible:
            if learn is not None:
                learn(self)
            return None
        unknown = [(k, lit) for k, lit in candidates if lit.index in core]
        if len(unknown) < len(candidates) and not (
            refute is not None and refute([k for k, _ in unknown])
        ):
            still, _ = self.check([*background, *(lit for _, lit in unknown)])
            if still:  # a core that does not verify: start from every candidate
                unknown = list(candidates)
        necessary: list[tuple[Hashable, Any]] = []
        while unknown:
            key, lit = unknown.pop(0)
            if witness is not None and witness([k for k, _ in (*necessary, *unknown)]):
                necessary.append((key, lit))
                continue
            feasible, core = self.check(
                [*background, *(x for _, x in necessary), *(x for _, x in unknown)]
            )
            if feasible:
                necessary.append((key, lit))
                if learn is not None:
                    learn(self)
            else:
                unknown = [(k, x) for k, x in unknown if x.index in core]
        order = {k: i for i, (k, _) in enumerate(candidates)}
        return sorted((k for k, _ in necessary), key=order.__getitem__)
