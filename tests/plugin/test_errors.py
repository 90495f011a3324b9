"""Bad input at the door of the public API, and one exception hierarchy (issue 21, items 5-8).

Every error newsfold raises on purpose is a ``newsfold.plugin.NewsfoldError``;
``InputError`` (a ``ValueError``) and ``InputTypeError`` (also a ``TypeError``)
say "your input" and name the argument, ``IndexMismatchError`` says "your
index" and what to do, ``ServerError`` says "the server".
"""

from __future__ import annotations

import pytest

from newsfold.plugin import (
    IndexMismatchError,
    InputError,
    InputTypeError,
    NewsfoldError,
    Page,
    ServerError,
    Settings,
    SignedPage,
    TextMeta,
    fold_search,
    ingest,
    sign_page,
    sign_text,
)
from newsfold.plugin.extract.result import Rejection
from tests.pages import page, story

TEXT = "\n\n".join(story(640))


def test_a_rejection_passed_to_ingest_is_named_with_its_reason(es, settings):
    rejected = sign_text("too short", settings=settings)
    assert isinstance(rejected, Rejection)
    with pytest.raises(InputTypeError, match=r"pages\[1\] is a Rejection \(too_short: .*not a SignedPage") as err:
        ingest([sign_text(TEXT, TextMeta(page_id="ok"), settings=settings), rejected], client=es, settings=settings)
    assert isinstance(err.value, NewsfoldError) and isinstance(err.value, TypeError)
    assert es.count(index=settings.index)["count"] == 0  # refused before anything was written


@pytest.mark.parametrize(
    ("pages", "message"),
    [("a page", r"pages must be a list of SignedPage, not str"), ([{"id": 1}], r"pages\[0\] must be SignedPage")],
)
def test_ingest_refuses_what_is_not_a_list_of_signed_pages(es, settings, pages, message):
    with pytest.raises(InputTypeError, match=message):
        ingest(pages, client=es, settings=settings)


def test_ingest_checks_its_other_arguments_by_name(es, settings):
    signed = sign_text(TEXT, TextMeta(page_id="p"), settings=settings)
    with pytest.raises(InputTypeError, match="settings must be Settings, not dict"):
        ingest([signed], client=es, settings={"num_perm": 256})
    with pytest.raises(InputTypeError, match="index must be str or None, not int"):
        ingest([signed], client=es, settings=settings, index=7)


def test_a_signature_with_other_permutations_is_refused_before_any_write(es, settings):
    small = sign_text(TEXT, TextMeta(page_id="small"), settings=settings.replace(num_perm=128, bands=64))
    with pytest.raises(InputError, match=r"signed with 128 permutations, the settings say 256"):
        ingest([small], client=es, settings=settings)
    assert es.count(index=settings.index)["count"] == 0


def test_other_signature_settings_on_the_same_client_are_checked_too(es, settings):
    (first,) = ingest([sign_text(TEXT, TextMeta(page_id="a"), settings=settings)], client=es, settings=settings)
    assert first.status == "new"
    other = settings.replace(seed=settings.seed + 1)
    with pytest.raises(IndexMismatchError, match="seed: index has 1, settings say 2"):
        ingest([sign_text(TEXT, TextMeta(page_id="b"), settings=other)], client=es, settings=other)


def test_sign_text_refuses_bytes_and_names_the_argument(settings):
    with pytest.raises(InputTypeError, match="text must be str, not bytes: decode it first"):
        sign_text(TEXT.encode(), settings=settings)
    with pytest.raises(InputTypeError, match="title must be str or None, not int"):
        sign_text(TEXT, TextMeta(title=3), settings=settings)
    with pytest.raises(InputTypeError, match="settings must be Settings"):
        sign_text(TEXT, settings=None)


def test_lone_surrogates_are_cleaned_not_a_crash(es, settings):
    broken = TEXT.replace(" ", " \ud800", 3)
    signed = sign_text(broken, TextMeta(title="Head\udfffline", page_id="sur"), settings=settings)
    assert isinstance(signed, SignedPage) and "\ufffd" in signed.article.text
    html = page("Harbour \ud83d strike", story(641))
    from_html = sign_page(Page(html=html, id="sur-html"), settings)
    assert isinstance(from_html, SignedPage)
    outcomes = ingest([signed, from_html], client=es, settings=settings)
    assert {o.status for o in outcomes} == {"new"}


def test_sign_page_refuses_what_is_not_a_page(settings):
    with pytest.raises(InputTypeError, match="page must be Page, not str"):
        sign_page("<html></html>", settings)
    with pytest.raises(InputTypeError, match=r"page.html must be bytes or str, not NoneType"):
        sign_page(Page(html=None), settings)


def test_fold_search_refuses_a_window_over_ten_thousand_before_asking_the_server(es, settings):
    ingest([sign_text(TEXT, TextMeta(page_id="w"), settings=settings)], client=es, settings=settings)
    es.indices.refresh(index=settings.index)
    with pytest.raises(InputError, match="from \\+ size must be at most 10,000, got 10,005"):
        fold_search(es, {"query": {"match_all": {}}, "from": 9995, "size": 10}, index=settings.index)
    with pytest.raises(InputError, match="from and size must be whole numbers"):
        fold_search(es, {"query": {"match_all": {}}, "size": "ten"}, index=settings.index)


def test_fold_search_on_an_index_without_the_fold_fields_says_what_to_do(es, settings):
    bare = f"{settings.index}-bare"
    es.indices.create(index=bare, mappings={"properties": {"title": {"type": "text"}}})
    try:
        es.index(index=bare, id="1", document={"title": "harbour"}, refresh=True)
        with pytest.raises(IndexMismatchError, match="has no newsfold fields .*component_template"):
            fold_search(es, {"query": {"match_all": {}}}, index=bare)
    finally:
        es.indices.delete(index=bare)


def test_one_hierarchy_for_every_error_newsfold_raises_on_purpose():
    from newsfold.esinstall import NodeError
    from newsfold.indexer.jobs.archive import ArchiveError
    from newsfold.indexer.jobs.ingest import JobError
    from newsfold.indexer.jobs.reindex import ReindexError
    from newsfold.indexer.records import PageFileError
    from newsfold.plugin import CorrectionError

    for cls in (InputError, InputTypeError, IndexMismatchError, ServerError, CorrectionError, JobError,
                ReindexError, ArchiveError, PageFileError, NodeError):  # fmt: skip
        assert issubclass(cls, NewsfoldError), cls
    assert issubclass(InputError, ValueError) and issubclass(InputTypeError, TypeError)
    assert issubclass(CorrectionError, InputError)  # an editor's bad request is "your input"
    assert issubclass(IndexMismatchError, RuntimeError) and issubclass(ServerError, RuntimeError)
    with pytest.raises(NewsfoldError):
        Settings(num_perm=0)  # a bad setting is an InputError too


def test_refusals_of_the_server_reach_the_host_as_newsfold_errors(es, settings):
    """A missing index (or any refusal) used to raise the client's own NotFoundError, or read every id as missing."""
    from newsfold.plugin import delete_pages, fold_versions, unfolded_documents
    from newsfold.plugin.search.queries import FOLD_FIELD as FOLD

    gone = f"{settings.index}-misspelt"
    calls = {
        "fold_search": lambda: fold_search(es, {"query": {"match_all": {}}}, index=gone),
        "fold_versions": lambda: fold_versions(es, {"query": {"match_all": {}}}, [{"fields": {FOLD: ["c"]}}],
                                               index=gone),
        "ingest": lambda: ingest([sign_text(TEXT,
                                            TextMeta(page_id="x"), settings=settings)], client=es, settings=settings,
                                 index=gone),
        "unfolded_documents": lambda: unfolded_documents(client=es, index=gone),
        "delete_pages": lambda: delete_pages(["x"], client=es, settings=settings, index=gone),
    }  # fmt: skip
    for name, call in calls.items():
        with pytest.raises(ServerError) as err:
            call()
        assert isinstance(err.value, NewsfoldError), name
        assert err.value.status == 404 and err.value.error == "index_not_found_exception", name


def test_connection_errors_stay_the_clients_own(settings):
    import elastic_transport

    from newsfold.plugin import build_client

    down = build_client(settings.replace(elasticsearch_url="http://127.0.0.1:9", es_max_retries=0, es_timeout=2))
    with pytest.raises(elastic_transport.ConnectionError) as err:
        fold_search(down, {"query": {"match_all": {}}}, index=settings.index)
    assert not isinstance(err.value, NewsfoldError)


@pytest.mark.parametrize(
    ("item", "status"),
    [
        ({"_id": "a", "error": {"type": "node_not_connected_exception", "reason": "[n2] Node not connected"}}, 503),
        ({"status": 500, "error": {"type": "search_phase_execution_exception",
                                   "caused_by": {"type": "node_disconnected_exception"}}}, 503),  # fmt: skip
        ({"status": 503, "error": {"type": "unavailable_shards_exception"}}, 503),
        ({"status": 429, "error": {"type": "es_rejected_execution_exception"}}, 429),
        ({"status": 429, "error": {"type": "cluster_block_exception",
                                   "reason": "index [x] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded]"}}, 429),
        ({"error": {"type": "cluster_block_exception", "reason": "[SERVICE_UNAVAILABLE/2/no master]"}}, 503),
        ({"status": 403, "error": {"type": "cluster_block_exception",
                                   "reason": "index [x] blocked by: [FORBIDDEN/8/index write (api)];"}}, 403),
        ({"status": 409, "error": {"type": "version_conflict_engine_exception"}}, 409),
        ({"_id": "a", "error": {"type": "index_not_found_exception"}}, None),
    ],
)
def test_a_refused_item_of_an_answer_says_whether_waiting_helps(item, status):
    """A node lost mid-batch used to make its pages `failed` for good (a per-document refusal had no status)."""
    from newsfold.plugin.errors import item_refusal

    err = item_refusal("reading page 'a'", item)
    assert isinstance(err, ServerError) and err.status == status
    assert err.error == item["error"]["type"] and "reading page 'a'" in str(err)
