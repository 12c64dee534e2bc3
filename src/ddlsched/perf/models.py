"""Built-in DNN profiles. Wang et al. Table III (Tesla V100, PyTorch 1.2)."""

from __future__ import annotations

from .model_profile import ModelProfile

#: Wang et al., Table III: model size (MB), GPU memory (MB), batch size, t_f (ms), t_b (ms).
WANG20_MODELS: dict[str, ModelProfile] = {
    m.name: m
    for m in (
        ModelProfile("vgg16", 526.4, 4527, 16, 35.8e-3, 53.7e-3),
        ModelProfile("resnet50", 99.2, 3213, 16, 25.0e-3, 37.4e-3),
        ModelProfile("inception3", 103.0, 3291, 16, 34.9e-3, 52.4e-3),
        ModelProfile("lstm-ptb", 251.8, 2751, 64, 31.5e-3, 47.3e-3),
    )
}


def builtin_model(name: str) -> ModelProfile | None:
    """Look up a built-in model profile by name (case-insensitive), or None."""
    return WANG20_MODELS.get(name.lower())
