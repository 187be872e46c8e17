"""Tuning and significance scripts for a model bundle, run from the repository root as modules:
``python -m eval.tune_guard ...``; ``eval/run_all.sh`` runs every standard dev evaluation."""
