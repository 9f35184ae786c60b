from app.engine.jobs.synthesize.modes import Mode
from app.engine.jobs.synthesize.reasoning import Bundle, Resolved, resolve


def test_the_strategys_bundle_wins_then_the_top_level_then_the_default():
    top = Bundle(synthesis_model="gpt-4o-mini", synthesis_temperature=0.5)
    mine = Bundle(synthesis=Mode.DEEP, synthesis_model="haiku")
    r = resolve(top, {"reflexion": mine}, "reflexion")
    assert r.synthesis == Resolved(Mode.DEEP, "strategies.reflexion")
    assert r.synthesis_model == Resolved("haiku", "strategies.reflexion")
    assert r.synthesis_temperature == Resolved(0.5, "top-level")
    assert r.synthesis_provider is None
    assert list(r.given()) == ["synthesis", "synthesis_model", "synthesis_temperature"]


def test_adaptive_reads_no_bundle_and_nothing_given_is_auto():
    r = resolve(Bundle(), {"adaptive": Bundle(synthesis=Mode.OFF)}, "adaptive")
    assert r.synthesis == Resolved(Mode.AUTO, "default")
    assert r.given() == {"synthesis": Resolved(Mode.AUTO, "default")}
