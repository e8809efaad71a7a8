"""Kept for existing imports: the training path lives in the `sentkit.training` package."""

from sentkit.training import (
    ExtraOptimizer,
    SentenceCollator,
    SentenceTrainer,
    StagedConfig,
    TrainConfig,
    latest_checkpoint,
    load_config,
    train,
    train_stages,
    trainable_encoder,
    training_rows,
)

__all__ = [
    "ExtraOptimizer",
    "SentenceCollator",
    "SentenceTrainer",
    "StagedConfig",
    "TrainConfig",
    "latest_checkpoint",
    "load_config",
    "train",
    "train_stages",
    "trainable_encoder",
    "training_rows",
]
