"""The tuner: rule-shaped Bayesian optimisation (Optuna ask/tell) over measured trials."""
