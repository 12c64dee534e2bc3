"""Live policies for the testbed study (benchmarks/testbed_study.py, docs/testbed.md "The live
study"): Wang et al.'s SRSF queue with FF or LWF-κ placement, for jobs of a live job file.

The presets ``ada-srsf``/``srsf1``/``srsf2`` compose an SRSF ordering, a placement and a gate
for *model* jobs; live jobs are trace jobs, scheduled by the exclusive job-level policies
(``policies.luo.Exclusive``). These factories are that policy with SRSF order (remaining time
alone; the study's job file sets each job's ``duration`` to its solo time × GPUs, Wang's L_J)
and the placement of the simulated preset, so that the live run and ``ddlsched run`` place
the same jobs on the same GPUs. The gate is ``ddlsched live --gate``.

    ddlsched live --policy benchmarks/testbed_policies.py:srsf_ff  --gate srsf1 …
    ddlsched live --policy benchmarks/testbed_policies.py:srsf_lwf --gate adadual …
"""

from __future__ import annotations

from typing import Any

from ddlsched.policies.luo import Exclusive


class _SrsfPlaced(Exclusive):
    def schedule(self, sim: Any) -> None:
        self._sim = sim
        super().schedule(sim)

    def _pick(self, idle: Any, need: int, avoid: frozenset[int], least_busy: bool) -> Any:
        free = sorted(g for g in idle if g not in avoid)
        if len(free) < need:
            return None
        if self.placement == "ff":  # placement.FirstFit: the first n free GPUs in order
            return free[:need]
        # placement.LeastWorkloadFirst, κ = 1 (n > κ: Alg. 1 lines 10–21): servers by their
        # total remaining workload L_S, each server's free GPUs by L_g, the first n
        sim = self._sim
        cl = sim.cluster
        load = sim.gpu_loads()
        order = sorted(
            range(cl.num_servers), key=lambda s: (sum(load[g] for g in cl.gpus_of_server(s)), s)
        )
        chosen: list[int] = []
        for s in order:
            gpus = sorted(
                (g for g in cl.gpus_of_server(s) if g in free), key=lambda g: (load[g], g)
            )
            chosen.extend(gpus[: need - len(chosen)])
            if len(chosen) == need:
                return sorted(chosen)
        return None


def srsf_ff(settings: Any = None, placement: Any = None) -> Exclusive:
    return _SrsfPlaced("srsf-ff", order="sjf", placement="ff", backfill=True)


def srsf_lwf(settings: Any = None, placement: Any = None) -> Exclusive:
    return _SrsfPlaced("srsf-lwf", order="sjf", placement="lwf", backfill=True)
