"""The self-correction loop for many sentences at once on a continuous-batching engine. Django-free.

Each sentence runs its own copy of the protocol (self_correction._self_correction_loop, the very
code run_self_correction drives). Every sentence's first request goes in at once; whenever all
answers of a sentence's step are back, that sentence's next requests go in at once, whatever the
other sentences are doing. There is no lockstep: a sentence never waits for the slowest sentence of
its step, and the engine always has every sentence's next request in hand.

A call whose agent is played by a backend without submit/collect is answered on the spot. The
answers a sentence receives are the ones run_self_correction would get for the same calls, so with a
deterministic backend each result is the one of run_self_correction, and a CachedBackend shares
its entries with both other ways of running the loop.
"""

from __future__ import annotations

from collections.abc import Sequence

from generation.backends.base import BackendError, ChatBackend, Completion, GenerationParams
from generation.backends.streaming import Request, streams
from generation.pipeline.self_correction import SelfCorrectionResult, _Agents, _Call, _Loop


def drive_loops(
    loops: Sequence[_Loop], agents: Sequence[_Agents], params: GenerationParams
) -> list[SelfCorrectionResult]:
    """Run every loop to its end, each step's calls submitted as soon as the step is reached."""
    results: list[SelfCorrectionResult | None] = [None] * len(loops)
    # loop index -> the calls of its current step, and their answers so far (by position)
    steps: dict[int, list[_Call]] = {}
    answers: dict[int, list[Completion | None]] = {}
    owner: dict[str, tuple[int, int]] = {}  # request key -> (loop index, position in its step)
    serial = 0
    engines: dict[int, ChatBackend] = {}  # id() -> a backend with requests in flight

    def step_done(index: int) -> None:
        # Every answer of this loop's step is in: send them and start its next step (or finish).
        got = [answer for answer in answers.pop(index) if answer is not None]
        del steps[index]
        try:
            start(index, loops[index].send(got))
        except StopIteration as done:
            results[index] = done.value

    def start(index: int, calls: list[_Call]) -> None:
        nonlocal serial
        steps[index] = calls
        answers[index] = [None] * len(calls)
        immediate = True
        for position, call in enumerate(calls):
            backend = agents[index].backend_for(call.agent)
            if streams(backend):
                key = f"{index}.{serial}"
                serial += 1
                owner[key] = (index, position)
                backend.submit(Request(key, call.messages, call.agent, params, call.context))  # type: ignore[attr-defined]
                engines[id(backend)] = backend
                immediate = False
            else:
                answers[index][position] = backend.complete(
                    call.messages, agent=call.agent, params=params, context=call.context
                )
        if immediate:
            step_done(index)

    for index, loop in enumerate(loops):
        start(index, next(loop))
    while owner:
        progressed = False
        for backend in list(engines.values()):
            for key, completion in backend.collect():  # type: ignore[attr-defined]
                index, position = owner.pop(key)
                answers[index][position] = completion
                progressed = True
                if all(answer is not None for answer in answers[index]):
                    step_done(index)
        if not progressed:
            raise BackendError(f"the engine answered none of {len(owner)} pending requests")
    return [result for result in results if result is not None]
