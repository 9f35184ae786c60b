"""The serving process's collector: start-up frozen, young collections spaced out."""

from __future__ import annotations

import gc

import pytest

from app.adapters import collector


class FakeCollector:
    def __init__(self) -> None:
        self.threshold = (700, 10, 10)
        self.calls: list[str] = []

    def get_threshold(self) -> tuple[int, int, int]:
        return self.threshold

    def set_threshold(self, threshold0: int, threshold1: int = 10, threshold2: int = 10,
                      /) -> None:
        self.calls.append("set_threshold")
        self.threshold = (threshold0, threshold1, threshold2)

    def collect(self, generation: int = 2) -> int:
        self.calls.append("collect")
        return 0

    def freeze(self) -> None:
        self.calls.append("freeze")

    def unfreeze(self) -> None:
        self.calls.append("unfreeze")


def test_tune_collects_then_freezes_then_spaces_young_collections() -> None:
    fake = FakeCollector()
    collector.tune(10_000, fake)
    # Garbage from start-up is collected before the freeze, or it would stay for good.
    assert fake.calls == ["collect", "freeze", "set_threshold"]
    assert fake.threshold == (10_000, 10, 10)  # the older generations keep their ratios


def test_zero_leaves_the_collector_alone() -> None:
    fake = FakeCollector()
    collector.tune(0, fake)
    assert fake.calls == [] and fake.threshold == (700, 10, 10)


def test_factory_tunes_its_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from app import main

    monkeypatch.setenv("CONTEXTSYNTH_GC_YOUNG_THRESHOLD", "12345")
    # The allocator setting is the process's for good: test_allocator checks it apart.
    monkeypatch.setenv("CONTEXTSYNTH_MALLOC_MMAP_THRESHOLD_BYTES", "0")
    before = gc.get_threshold()
    try:
        main.factory()
        assert gc.get_threshold()[0] == 12345
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_tuned_restores_the_collector_after_the_block() -> None:
    fake = FakeCollector()
    with collector.tuned(5_000, fake):
        assert fake.threshold == (5_000, 10, 10)
    assert fake.threshold == (700, 10, 10)
    assert fake.calls[-2:] == ["unfreeze", "set_threshold"]


def test_tuned_restores_it_when_the_block_fails() -> None:
    fake = FakeCollector()
    with pytest.raises(RuntimeError), collector.tuned(5_000, fake):
        raise RuntimeError("bench failed")
    assert fake.threshold == (700, 10, 10)
