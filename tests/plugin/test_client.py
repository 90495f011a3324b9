"""The client: several nodes in ``ELASTICSEARCH_URL``, and going on through the others when one is down."""

from __future__ import annotations

from newsfold.plugin.client import build_client


def test_a_comma_separated_url_names_every_node_and_a_dead_one_is_passed_over(es, settings):
    many = settings.replace(elasticsearch_url=f"http://127.0.0.1:9, {settings.elasticsearch_url}", es_max_retries=3)
    client = build_client(many)
    assert len(client.transport.node_pool.all()) == 2
    for _ in range(4):  # round robin: some of these go to the dead node first, then to the live one
        assert client.count(index=settings.index)["count"] == 0
    client.close()


def test_a_url_given_where_the_settings_belong_is_refused_naming_the_argument():
    import pytest

    from newsfold.plugin import InputError, Settings

    with pytest.raises(InputError, match="settings"):
        build_client("http://127.0.0.1:9200")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="retry_on_timeout"):
        build_client(Settings(elasticsearch_url="http://127.0.0.1:9200"), retry_on_timeout="yes")  # type: ignore[arg-type]
