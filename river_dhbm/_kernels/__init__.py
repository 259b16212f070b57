"""The Numba kernels (private): each model's learning step and predictions compiled as one call.

`network` holds what every model shares (the flat parameter layout's conventions, activations,
the recognition pass, the joint predictor), `parameters` the layout's Python side (the offsets
table, the first weights, regrowth for a new class), `gradients` the gradients and the
optimizers' steps, `blas` the matrix products, `replay` the label memory's kernels, `linear`
the linear expert's, `mixture` the mixture's one-row prediction and scoring, `inputs` the
input watch's statistics of a span; `dhbm` (with
`dhbm_phases`, and `dhbm_experts`: its run with the experts beside it), `sben`, `dhda`, `hsda`
and `mlp` each hold one model's update and prediction kernels.
`first_use` says, once, when a model's kernels must be compiled; `build` chooses between
native and plain code and where the compiled kernels are cached.
"""

from river_dhbm._kernels.build import caching_here

with caching_here():  # every kernel is defined here, so every one caches where `build` says
    from river_dhbm._kernels import (  # noqa: F401
        blas,
        dhbm,
        dhbm_experts,
        dhbm_phases,
        dhda,
        gradients,
        hsda,
        inputs,
        linear,
        mixture,
        mlp,
        network,
        parameters,
        replay,
        sben,
    )
