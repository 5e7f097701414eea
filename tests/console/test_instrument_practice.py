"""A team edits practice items with the instrument in the console's editor: a gold answer outside
its item's scale is refused naming the practice item's field, and nothing is saved; a valid
practice set is saved and the Qualification page counts it."""

from __future__ import annotations

import yaml

from annotation.instrument_services import instrument_revision
from tests.console.test_instrument_editor import URL, _row, editing  # noqa: F401 - fixture


def test_a_gold_outside_the_scale_is_refused_on_its_field(client, editing):  # noqa: F811
    row = _row(editing)
    data = dict(row.definition)
    data["practice"] = [dict(entry) for entry in data["practice"]]
    data["practice"][1]["gold"] = 7
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    response = client.post(URL, {"op": "definition", "based_on": instrument_revision(row), "document": text})
    assert response.status_code == 400
    assert "practice[1].gold: 7 is not a point of the scale" in response.content.decode()
    assert _row(editing).fingerprint == row.fingerprint

    data["practice"] = data["practice"][:2]
    data["practice"][1]["gold"] = 2
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    saved = client.post(URL, {"op": "definition", "based_on": instrument_revision(row), "document": text})
    assert saved.status_code == 302
    assert [entry["gold"] for entry in _row(editing).definition["practice"]] == [5, 2]
    page = client.get(f"/console/{editing.slug}/qualification/").content.decode()
    assert "2 practice items" in page
