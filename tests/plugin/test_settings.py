"""Settings: validation and the environment (docs/configuration.md: tests/newsfold/test_settings_registry.py)."""

from __future__ import annotations

import pytest

from newsfold.plugin.client import plain_media_type
from newsfold.plugin.settings import Settings, settings_env


def test_settings_reject_bands_times_rows_over_num_perm():
    with pytest.raises(ValueError, match="70 x 4 = 280 > 256"):
        Settings(bands=70, rows=4)


@pytest.mark.parametrize("password", ["change-me-please", " CHANGEME ", "change-me-too"])
def test_settings_refuse_an_examples_placeholder_elasticsearch_password(password):
    """Issue 39, item 4: a copied example's password never works: the start refuses it, naming the setting."""
    with pytest.raises(ValueError, match=r"elasticsearch_password \(ELASTICSEARCH_PASSWORD.*placeholder"):
        Settings(elasticsearch_password=password)
    with pytest.raises(ValueError, match="placeholder"):
        Settings.from_env({"ELASTICSEARCH_PASSWORD": password})
    assert Settings(elasticsearch_password="a-real-one-" + password).elasticsearch_password


def test_settings_reject_threshold_out_of_range():
    with pytest.raises(ValueError, match="threshold must be in"):
        Settings(threshold=1.5)


def test_settings_from_env_parses_and_names_bad_variable():
    s = Settings.from_env({"NEWSFOLD_BANDS": "32", "NEWSFOLD_ROWS": "4", "ELASTICSEARCH_URL": "http://es:9200"})
    assert (s.bands, s.rows, s.elasticsearch_url) == (32, 4, "http://es:9200")
    with pytest.raises(ValueError, match="NEWSFOLD_BANDS='many'"):
        Settings.from_env({"NEWSFOLD_BANDS": "many"})


def test_settings_env_round_trip():
    s = Settings(bands=20, rows=5, elasticsearch_verify_certs=False, redis_url="redis://x:1/0")
    assert Settings.from_env(settings_env(s)) == s


def test_plain_media_type():
    assert plain_media_type("application/vnd.elasticsearch+json; compatible-with=9") == "application/json"
    assert plain_media_type("application/vnd.elasticsearch+x-ndjson; compatible-with=8") == "application/x-ndjson"
    assert plain_media_type("text/plain") == "text/plain"
