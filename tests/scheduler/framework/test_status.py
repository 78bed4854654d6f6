"""Status.skip() without a reason is one shared object: naming the plugin that skipped (the
runtime's with_plugin) gives a new Status and leaves the shared one unnamed."""

from __future__ import annotations

from phalanx.scheduler.framework.status import Code, Status


def test_a_shared_skip_is_never_named_in_place():
    named = Status.skip().with_plugin("VolumeBinding")
    assert (named.code, named.plugin) == (Code.SKIP, "VolumeBinding")
    again = Status.skip()
    assert (again.code, again.plugin, again.reasons) == (Code.SKIP, "", [])
    assert Status.skip().with_plugin("NodePorts").plugin == "NodePorts"


def test_a_skip_with_a_reason_is_its_own():
    st = Status.skip("no volumes")
    assert st.with_plugin("VolumeBinding") is st and st.plugin == "VolumeBinding"
    assert Status.skip("no volumes").plugin == ""
