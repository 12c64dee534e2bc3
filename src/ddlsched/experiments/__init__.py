"""Paper experiments (``ddlsched reproduce``)."""

from .gavel import GAVEL_EXPERIMENTS
from .luo24 import LUO24_EXPERIMENTS
from .luo24_claim import CLAIM_EXPERIMENTS
from .runner import Experiment, Row, run_experiment
from .sia import SIA_EXPERIMENTS
from .wang20 import WANG20_EXPERIMENTS
from .yu22 import YU22_EXPERIMENTS
from .yu22_optgap import YU22_OPTGAP_EXPERIMENTS

EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in [
        *WANG20_EXPERIMENTS,
        *YU22_EXPERIMENTS,
        *YU22_OPTGAP_EXPERIMENTS,
        *LUO24_EXPERIMENTS,
        *CLAIM_EXPERIMENTS,
        *GAVEL_EXPERIMENTS,
        *SIA_EXPERIMENTS,
    ]
}

__all__ = ["EXPERIMENTS", "Experiment", "Row", "run_experiment"]
