"""``ascend-v0`` behaves as its recorded fingerprint says (teamgym's versioning policy).

A change in behaviour is a new version: register ``ascend-v1`` beside ``ascend-v0`` in ``teamgym_ascend``, then
``teamgym versions ascend-v1 --record --file tests/fingerprints.json``.
"""

from __future__ import annotations

from pathlib import Path

from teamgym.contrib.versions import check_record

RECORD = Path(__file__).with_name("fingerprints.json")


def test_behaviour_matches_the_recorded_fingerprint() -> None:
    findings = check_record(RECORD, ["ascend-v0"])
    assert not findings, "\n".join(finding.message() for finding in findings)
