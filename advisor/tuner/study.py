"""Create or resume a study: metadata checks, the stored search space, the enqueued baselines."""

from __future__ import annotations

from typing import Any

import optuna
from optuna.storages import BaseStorage

from pmem_advisor.errors import UsageError
from pmem_advisor.tuner.space import SearchSpace

META_ATTR = "pmem_advisor.meta"
SPACE_ATTR = "pmem_advisor.space"
# A resumed run or a second worker must measure the same thing.
IDENTITY_KEYS = ("engine", "flavour", "workload", "objective")
ROLE_ATTR = "role"  # default | rules | search


def direction(objective: str) -> str:
    return "maximize" if objective == "throughput" else "minimize"


def study_exists(storage: BaseStorage, name: str) -> bool:
    return any(s.study_name == name for s in optuna.get_all_study_summaries(storage))


def open_study(
    storage: BaseStorage,
    name: str,
    meta: dict[str, Any],
    space: SearchSpace | None,
    *,
    resume: bool,
    sampler: optuna.samplers.BaseSampler | None = None,
) -> tuple[optuna.Study, SearchSpace]:
    """The study and its search space (the stored one when resuming).

    A new study gets the metadata, the space and the two baselines enqueued (trial 0 = server
    defaults, trial 1 = rules-only). An existing one is refused unless ``resume``, and when it
    was made for another engine, flavour, workload or objective.
    """
    exists = study_exists(storage, name)
    if exists and not resume:
        raise UsageError(f"study {name!r} already exists; pass --resume to continue it, "
                         "or --study NAME for a new one")
    if not exists and resume and space is None:
        raise UsageError(f"no study {name!r} to resume in this storage")
    study = optuna.create_study(
        storage=storage, study_name=name, direction=direction(meta["objective"]),
        sampler=sampler, load_if_exists=True,
    )
    stored_meta = study.user_attrs.get(META_ATTR)
    if stored_meta:
        for key in IDENTITY_KEYS:
            if key in meta and stored_meta.get(key) != meta.get(key):
                raise UsageError(
                    f"study {name!r} was created for {key} {stored_meta.get(key)!r}, "
                    f"not {meta.get(key)!r}; use another --study or --out"
                )
    else:
        study.set_user_attr(META_ATTR, meta)
    stored_space = study.user_attrs.get(SPACE_ATTR)
    if stored_space:
        return study, SearchSpace.from_dict(stored_space)
    if space is None:
        raise UsageError(f"study {name!r} has no search space stored; it was not made by tune")
    study.set_user_attr(SPACE_ATTR, space.to_dict())
    enqueue_baselines(study, space)
    return study, space


def enqueue_baselines(study: optuna.Study, space: SearchSpace) -> None:
    """Trial 0: the server's defaults; trial 1: the rules-only recommendation."""
    if study.get_trials(deepcopy=False):
        return  # another worker created the study and queued them already
    study.enqueue_trial(space.default_params, user_attrs={ROLE_ATTR: "default"})
    if space.rules_params is not None:
        study.enqueue_trial(space.rules_params, user_attrs={ROLE_ATTR: "rules"})


def load_existing(storage: BaseStorage, name: str | None) -> optuna.Study:
    """An existing study for reports (the only one in the storage when ``name`` is None)."""
    names = [s.study_name for s in optuna.get_all_study_summaries(storage)]
    if name is None:
        if len(names) != 1:
            raise UsageError(
                "no study in this storage" if not names
                else f"several studies in this storage ({', '.join(names)}); pass --study"
            )
        name = names[0]
    elif name not in names:
        raise UsageError(f"no study {name!r} in this storage")
    return optuna.load_study(study_name=name, storage=storage)
