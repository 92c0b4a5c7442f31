"""Pure bookkeeping of refused work: per work key, reported per Configuration."""

from __future__ import annotations

from akri.controller.refusals import Refusals

CAM = ("default", "cam")
MIC = ("default", "mic")


def test_each_key_clears_only_its_own_refusal() -> None:
    refusals: Refusals[str] = Refusals()
    assert refusals.note("slices", CAM, "422 slice") is True
    assert refusals.note("slices", CAM, "422 slice") is False  # the same: nothing to report
    assert refusals.note("instance", CAM, "403 template") is True
    assert refusals.note("other", MIC, "400 pod") is True
    assert refusals.message(CAM) == "403 template; 422 slice"
    assert refusals.note("slices", None, None) is True
    assert refusals.message(CAM) == "403 template"
    assert refusals.configuration_of("instance") == CAM
    assert refusals.note("never-refused", None, None) is False
    refusals.forget(CAM)
    assert refusals.message(CAM) is None
    assert refusals.message(MIC) == "400 pod"
