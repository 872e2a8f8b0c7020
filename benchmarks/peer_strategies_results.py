"""Write the ``peer-strategies`` section of benchmarks/RESULTS.md (issue 28) from a fresh run.

Runs ``benchmarks/selection.py --peer-strategies`` in this interpreter and replaces the
text between the section's marker lines (appending the section when it is absent).
Run with one BLAS and one rayon thread, as the numbers are meant::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 RAYON_NUM_THREADS=1 \\
        python benchmarks/peer_strategies_results.py --repeats 15
"""

from __future__ import annotations

import argparse
import contextlib
import io
from pathlib import Path

import selection

START, END = "<!-- peer-strategies:start -->", "<!-- peer-strategies:end -->"
NOTES = """
Parity (tests/core/test_peer_strategies.py, 240 random instances per strategy): our picks equal
pyversity's (dpp, msd, cover, ssd) and divsel's (gist) except where the first differing step is a
near-tie (reference margin < 1e-4: both peers compute in float32); our GIST objective
g(S) + lam * div(S) is never below divsel's by more than 1e-6 on the same inputs.

Clock: `--clock cpu` is this process's CPU time (time.process_time); the shared 2-core machine ran
at a load average near 8 while this was measured (7-13 over the rounds of the next section),
and wall-clock medians then mostly measure the wait for a core. Both peers and ours run
single-threaded here (OPENBLAS_NUM_THREADS=1, RAYON_NUM_THREADS=1).

Per-call cost at n=50 (issue 35 item 2): a pool of well-formed float arrays takes a validated
fast path (`validation._prepare_fast`: the row norms are the check, anything off falls back to
the full checks and their typed errors; about 13-16 us of CPU at n=50, d=384, was 35), and the
greedy steps make as few numpy calls as they can (issue 35 item 2, second pass): a tie-tolerant
argmax in one comparison pass, dpp's Cholesky row written in place with the picks kept out by the
clip itself, clipping as two ufunc calls (`np.clip`'s wrapper cost more than both), mmr's and
cover's work arrays preallocated, cover's F(S) carried over from the step that scored the last
pick, the z-score without `mean`/`std`'s wrappers, GIST's candidate sets as one array. For
n <= 128 the picks and scores are the same bits as before. pyversity receives the relevance
precomputed and checks nothing; `dc.select` still validates and computes it (`prepare_inputs`,
about 15 us of the n=50 figures; `benchmarks/selection.py --call-parts` splits one call).

n=1000: dpp follows a short list of candidates for pools above 128 (residual variances only fall
as picks are added, so a candidate left off the list is followed once it could still win), one
small product per step instead of a product with the whole pool; the picks are the eager loop's
except where the residuals have fallen to rounding noise (beyond the kernel's rank). msd needs
one similarity column of the whole pool per step, as pyversity does: at n=1000 both spend most
of a step in that matrix-vector product, and ours is ahead by the cheaper elementwise work
around it (the before/after rounds: the next section).
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: process CPU time (for an oversubscribed machine)")
    parser.add_argument("--results", type=Path, default=Path(__file__).with_name("RESULTS.md"))
    args = parser.parse_args()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        selection.peer_strategies(args.repeats, seed=0, clock=args.clock)
    command = (
        "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 RAYON_NUM_THREADS=1 "
        f"python benchmarks/peer_strategies_results.py --repeats {args.repeats} --clock {args.clock}"
    )
    body = (
        f"{START}\n## Peer strategies (issue 28): dpp, msd, cover, ssd vs pyversity 0.2, "
        f"gist vs divsel 0.1\n\nRegenerate: `{command}`\n\n{out.getvalue().strip()}\n{NOTES}{END}\n"
    )
    text = args.results.read_text() if args.results.exists() else ""
    if START in text and END in text:
        head, rest = text.split(START, 1)
        text = head + body + "\n" + rest.split(END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + body
    args.results.write_text(text)
    print(body)


if __name__ == "__main__":
    main()
