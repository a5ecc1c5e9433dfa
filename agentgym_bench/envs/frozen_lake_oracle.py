"""Exact FrozenLake planner for an agent that plays in turns of open-loop action sequences.

Each turn the agent sees the true cell, then commits to a sequence of 1..``max_actions_per_turn`` actions that is
executed without looking (execution stops early if the player falls in a hole or reaches the goal); it has at most
``turns_left`` turns and ``actions_left`` actions in total. The planner solves this finite-horizon problem exactly:

    V(s, T, A) = max over sequences σ, 1 <= len(σ) <= min(k, A), of
                 P(goal reached during σ | s) + Σ_{s' alive} P(s' | s, σ) V(s', T - 1, A - len(σ))

with V = 0 when T = 0 or A = 0. Holes and the goal are absorbing in the transition matrices, so the mass on the goal
after σ is the probability of reaching it during σ, and one matrix product per sequence scores it.

Many sequences often tie on V (without slips, every move that keeps the goal within budget succeeds surely). Among
them the planner takes the one that reaches the goal soonest: a second table holds the success discounted by
``TURN_DISCOUNT`` per turn under the planner's own choices, and it decides between near-ties of V only, so V is
unchanged. Without it the first tied sequence in Left < Down < Right < Up order won, which wasted turns (one
``Left`` into a wall a turn, the real path only when the budget forced it): optimal, but a poor demonstration for a
policy that does not see how many turns are left.

Speed: the end-cell distributions of all sequences are computed once per map, sharing prefixes (level L+1 = level L
times each action's matrix) and keeping one representative of sequences with identical distributions from every
start (their extensions are then identical too). Values are memoised per (T, A) after clipping both to what can
still be spent (at most ``T * k`` actions, at most ``A`` useful turns). The cost grows as ``4 ** k``: fine up to
``k = 6`` on small maps, not for long open-loop turns.
"""

from __future__ import annotations

import numpy as np

_TIE = 1e-9  # scores this close count as equal, so the choice does not depend on the order of float operations
TURN_DISCOUNT = 0.5
"""Weight of reaching the goal one turn later, used only to choose among plans of equal success probability."""


class OpenLoopPlanner:
    """Optimal open-loop-per-turn play on one map.

    Args:
        trans: ``(4, n, n)`` transition matrices with absorbing holes and goal
            (:func:`agentgym_bench.envs.frozen_lake_rules.transition_matrices`).
        goal: index of the goal cell.
        alive: ``(n,)`` bool, cells where the episode is still running (neither hole nor goal).
        max_actions_per_turn: ``k``, the longest sequence one turn may send (>= 1).
    """

    def __init__(self, trans: np.ndarray, goal: int, alive: np.ndarray, max_actions_per_turn: int):
        if max_actions_per_turn < 1:
            raise ValueError(f"max_actions_per_turn={max_actions_per_turn} must be >= 1")
        self.k = max_actions_per_turn
        self.alive_cells = np.flatnonzero(alive)
        self._row = {int(cell): i for i, cell in enumerate(self.alive_cells)}
        self._terminal = np.zeros(trans.shape[1])
        self._terminal[goal] = 1.0
        self._levels = self._sequence_levels(trans)
        self._memo: dict[tuple[int, int], np.ndarray] = {}

    def _sequence_levels(self, trans: np.ndarray) -> list[tuple[list[tuple[int, ...]], np.ndarray]]:
        """Per length L = 1..k: the distinct action sequences and their ``(m, n_alive, n)`` end-cell distributions."""
        seqs = [(a,) for a in range(4)]
        dists = trans[:, self.alive_cells, :]
        levels = [(seqs, dists)]
        for _ in range(self.k - 1):
            dists = (dists[:, None] @ trans[None]).reshape(-1, *dists.shape[1:])
            seqs = [seq + (a,) for seq in seqs for a in range(4)]
            first: dict[bytes, int] = {}
            for i, dist in enumerate(np.round(dists, 12)):
                first.setdefault(dist.tobytes(), i)  # keep the lexicographically first sequence of each class
            keep = sorted(first.values())
            seqs, dists = [seqs[i] for i in keep], dists[keep]
            levels.append((seqs, dists))
        return levels

    def _clip(self, turns_left: int, actions_left: int) -> tuple[int, int]:
        actions_left = min(actions_left, turns_left * self.k)
        return min(turns_left, actions_left), actions_left

    def _solve(self, turns_left: int, actions_left: int) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """Tables for clipped budgets: ``(n,)`` success probability, ``(n,)`` discounted success (both under the
        planner's choices) and, per alive cell, the index of its chosen sequence in :meth:`_candidates`."""
        key = (turns_left, actions_left)
        if key not in self._memo:
            value, discounted, choice = self._terminal.copy(), self._terminal.copy(), []
            if turns_left > 0 and actions_left > 0:
                scores, later = [], []
                for length in range(1, min(self.k, actions_left) + 1):
                    after, after_discounted, _ = self._solve(*self._clip(turns_left - 1, actions_left - length))
                    dists = self._levels[length - 1][1]  # (m, n_alive, n)
                    scores.append(dists @ after)  # (m, n_alive)
                    later.append(dists @ np.where(self._terminal > 0, 1.0, TURN_DISCOUNT * after_discounted))
                score, soon = np.concatenate(scores), np.concatenate(later)  # (M, n_alive)
                best = score >= score.max(axis=0) - _TIE  # near-optimal success
                soon = np.where(best, soon, -1.0)
                choice = np.argmax(soon >= soon.max(axis=0) - _TIE, axis=0).tolist()  # first: shorter, then L<D<R<U
                rows = np.arange(len(self.alive_cells))
                value[self.alive_cells] = score[choice, rows]
                discounted[self.alive_cells] = soon[choice, rows]
            self._memo[key] = (value, discounted, choice)
        return self._memo[key]

    def _candidates(self, actions_left: int) -> list[tuple[int, ...]]:
        """The sequences a turn may send with ``actions_left``, shorter first, in the order of :meth:`_solve`."""
        return [seq for length in range(1, min(self.k, actions_left) + 1) for seq in self._levels[length - 1][0]]

    def values(self, turns_left: int, actions_left: int) -> np.ndarray:
        """``(n,)`` success probability from every cell under optimal play (1 on the goal, 0 in holes)."""
        return self._solve(*self._clip(max(turns_left, 0), max(actions_left, 0)))[0]

    def best_sequence(self, cell: int, turns_left: int, actions_left: int) -> tuple[tuple[int, ...], float]:
        """The chosen sequence for this turn from alive ``cell`` and its success probability.

        Among the sequences whose success probability is within 1e-9 of the best, the one that reaches the goal
        soonest (highest success discounted by :data:`TURN_DISCOUNT` per later turn); remaining ties go to the
        shorter sequence, then to the first in Left < Down < Right < Up order. Returns ``((), 0.0)`` when no action
        can be sent.
        """
        turns_left, actions_left = self._clip(turns_left, actions_left)
        if turns_left <= 0 or actions_left <= 0:
            return (), 0.0
        value, _, choice = self._solve(turns_left, actions_left)
        return self._candidates(actions_left)[choice[self._row[cell]]], float(value[cell])
