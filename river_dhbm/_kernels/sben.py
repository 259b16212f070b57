"""The SBEN's kernels: each block a one-layer DHBM, learnt on the block below's recognition
activities, and the average of the blocks' predictors (`river_dhbm.sben.SBEN`)."""

from __future__ import annotations

import numpy as np
from numba import njit

from river_dhbm._kernels.build import JIT
from river_dhbm._kernels.dhbm import MF, SAP, update_body
from river_dhbm._kernels.network import COL_R, COL_RB, forward_net, joint_proba
from river_dhbm._kernels.replay import NO_PROXY_LABELS, step_rows

__all__ = ["UPDATE_KERNELS", "WORK", "sben_proba", "sben_update_mf", "sben_update_sap"]

#: The work arrays of `sben_update` in the order its `work` holds them (`SBEN._alloc_work`).
WORK = ("act", "mu", "neg", "delta", "zbuf", "xbuf", "P", "T", "Y", "wrow", "wdisc", "mirror",
        "reps")


def _update_kernel(estimator: int):
    """The SBEN's update kernel (`sben_update`) for the likelihood-gradient `estimator` (MF or
    SAP): the steps' and blocks' loops are written here and the DHBM's `update_body` is
    inlined into them, pruned of the other estimator (as `dhbm._update_kernel`)."""

    @njit(**JIT)
    def sben_update(X, y, net, optimiser, settings, dropout, particles, work, steps, n_batch):
        """One update of every block, bottom-up, each a 1-layer DHBM step (`dhbm_update`), taken
        `steps` times: `X` holds the mini-batch (`n_batch` rows) and `R` replayed rows for each
        step, and step `s` runs every block on the mini-batch and its own rows
        (`replay.step_rows`), Adam's step number `step + s`, with the update's masks and
        draws. `y` int64 class indices (-1 unlabeled).

        The arguments, grouped by meaning as `dhbm_update`'s:

        - `net = (theta, boff, offs, bsizes, hcums, n_classes, kind)`: block `b` owns
          `theta[boff[b]:boff[b+1]]` laid out by `offs[b]` (`param_layout` of
          `bsizes[b] = (in, out)`, hidden offsets `hcums[b]`);
        - `optimiser = (grad, moments, step)`: the gradient buffer, Adam's moments (block `b`'s
          at `moments[2 boff[b]:2 boff[b+1]]`; empty: plain gradient steps) and Adam's update
          number of the first step;
        - `settings = (mf_steps, lr, alpha, beta, disc_weight, hard, keep)`;
        - `dropout = (masks, moff)`: block `b`'s dropout mask `masks[moff[b]:moff[b+1]]` (or
          none);
        - `particles = (part_v, pvoff, part_h, phoff, part_y, part_mask, noise_h, noise_v,
          nvoff)`: SAP's particles `part_v[pvoff[b]:...]` `[M, in]`, `part_h[phoff[b]:...]`,
          `part_y[b] [M, C]`, their dropout mask and the update's draws (sliced by `phoff`
          and `nvoff`; empty for MF);
        - `work = (act, mu, neg, delta, zbuf, xbuf, P, T, Y, wrow, wdisc, mirror, reps)`: as in
          `dhbm_update`, sized for the widest block; `mirror` of `theta`'s length holds each
          block's transposed mirror at the block's place.

        Block 0 learns `X`; block `b > 0` learns the representation of block `b - 1` computed
        AFTER that block's update: its recognition activities scaled by the keep probability,
        no dropout (written to `reps`, flat `>= n * sum H`).
        """
        theta, boff, offs, bsizes, hcums, n_classes, kind = net
        grad, moments, step = optimiser
        mf_steps, lr, alpha, beta, disc_weight, hard, keep = settings
        masks, moff = dropout
        part_v, pvoff, part_h, phoff, part_y, part_mask, noise_h, noise_v, nvoff = particles
        act, mu, neg, delta, zbuf, xbuf, P, T, Y, wrow, wdisc, mirror, reps = work
        n = n_batch + (X.shape[0] - n_batch) // steps  # the rows of one step
        L = bsizes.shape[0]
        M = part_y.shape[1]
        empty = np.empty(0)
        xs = np.empty((n, X.shape[1]), X.dtype)
        ys = np.empty(n, np.int64)
        for s in range(steps):
            step_rows(X, y, n_batch, s, steps, xs, ys)
            below = xs
            pos = 0
            for b in range(L):
                d_in, H = bsizes[b, 0], bsizes[b, 1]
                th = theta[boff[b] : boff[b + 1]]
                gr = grad[boff[b] : boff[b + 1]]
                mo = moments[2 * boff[b] : 2 * boff[b + 1]] if moments.size > 0 else moments
                mask = masks[moff[b] : moff[b + 1]] if masks.size > 0 else masks
                pm = part_mask[phoff[b] : phoff[b + 1]] if part_mask.size > 0 else part_mask
                nh = noise_h[phoff[b] : phoff[b + 1]] if noise_h.size > 0 else noise_h
                nv = noise_v[nvoff[b] : nvoff[b + 1]] if noise_v.size > 0 else noise_v
                pv = part_v[pvoff[b] : pvoff[b + 1]].reshape((M, d_in))
                ph = part_h[phoff[b] : phoff[b + 1]]
                xrec = xbuf[: n * d_in].reshape((n, d_in))
                block_particles = (pv, ph, part_y[b], pm, nh, nv)
                block_work = (act, mu, neg, delta, zbuf, xrec, P, T, Y, wrow, wdisc,
                              mirror[boff[b] : boff[b + 1]])
                if estimator == MF:  # a constant: one call is left, and inlined
                    update_body(below, ys, th, gr, offs[b], bsizes[b], hcums[b], n_classes,
                                kind, MF, mf_steps, lr, alpha, beta, NO_PROXY_LABELS,
                                disc_weight, hard, mask, block_particles, block_work, mo,
                                step + s)
                else:
                    update_body(below, ys, th, gr, offs[b], bsizes[b], hcums[b], n_classes,
                                kind, SAP, mf_steps, lr, alpha, beta, NO_PROXY_LABELS,
                                disc_weight, hard, mask, block_particles, block_work, mo,
                                step + s)
                if b < L - 1:
                    out = reps[pos : pos + n * H]
                    forward_net(below, th, offs[b], bsizes[b], hcums[b], COL_R, COL_RB, True,
                                kind, empty, keep, out)
                    below = out.reshape((n, H))
                    pos += n * H

    return sben_update


#: One update of every block of the SBEN (see `_update_kernel`'s kernel) with the mean-field
#: estimator: the kernel of the default settings, which never compiles the SAP negative phase ...
sben_update_mf = _update_kernel(MF)
#: ... and with the persistent particles (`estimator="sap"`).
sben_update_sap = _update_kernel(SAP)
#: The estimator's code (`dhbm.MF`, `dhbm.SAP`) -> its update kernel.
UPDATE_KERNELS = {MF: sben_update_mf, SAP: sben_update_sap}


@njit(**JIT)
def sben_proba(X, theta, boff, offs, bsizes, hcums, n_classes, kind, keep, act, Pb, P):
    """`P [n, C]`: the average over blocks of each block's `p(y | h^b)`, `h^b` from its
    recognition pass (activities scaled by `keep`) on the block below's activities."""
    n = X.shape[0]
    L = bsizes.shape[0]
    empty = np.empty(0)
    for r in range(n):
        for k in range(n_classes):
            P[r, k] = 0.0
    below = X
    pos = 0
    for b in range(L):
        H = bsizes[b, 1]
        th = theta[boff[b] : boff[b + 1]]
        out = act[pos : pos + n * H]
        forward_net(below, th, offs[b], bsizes[b], hcums[b], COL_R, COL_RB, True, kind, empty,
                    keep, out)
        joint_proba(out, n, th, offs[b], bsizes[b], hcums[b], n_classes, Pb)
        for r in range(n):
            for k in range(n_classes):
                P[r, k] += Pb[r, k] / L
        below = out.reshape((n, H))
        pos += n * H
