"""A small news search of its own that adopts newsfold (docs/embedding.md).

The host has its own index template (fields newsfold does not know:
``section``, ``author``, ``paywalled``), its own document ids and its own
query (a ``multi_match`` with a filter on ``section``). Adopting newsfold
takes the lines marked ``# newsfold``: compose the component template,
ingest each article after indexing it (as HTML or as text), and search
through ``fold_search``. Then the life of the index: a host field changed
with a partial update (the fold fields stay), an article rewritten (index
it, then ingest it again), an article deleted through ``delete_pages``
(its story stays whole), a section facet that counts stories, and errors
handled with one ``except NewsfoldError``.

    ELASTICSEARCH_URL=http://localhost:9200 python examples/host_search/app.py

Prints the folded results as JSON lines (one per story) and a summary line.
"""

from __future__ import annotations

import json
import os
import sys

from newsfold.plugin import (
    NewsfoldError,
    Page,
    Rejection,
    Settings,
    TextMeta,
    build_client,
    component_template,
    delete_pages,
    fold_search,
    folded_hits,
    ingest,
    sign_page,
    sign_text,
    story_buckets,
    story_count,
    unfolded_documents,
    with_story_counts,
)

INDEX = os.environ.get("HOST_INDEX", "hostnews-example")

HARBOUR = [
    "Dock workers at the northern harbour ended a nine day strike on Tuesday after union leaders accepted a pay offer.",
    "The agreement raises wages by six percent over two years and adds a new safety committee for night shifts.",
    "Shipping companies said the first container vessels would be unloaded within hours of the vote.",
    "Union members voted by a large majority to accept the deal at a meeting held in the port authority hall.",
    "The strike had left more than forty ships waiting offshore and delayed deliveries of fuel and grain.",
    "Regional officials welcomed the end of the dispute and promised to review the harbour's long term funding.",
]
FLOODS = [
    "Heavy rain flooded the lower town overnight, forcing the closure of two schools and the central market.",
    "Emergency crews pumped water from basements while volunteers filled sandbags along the river bank.",
    "The weather service said more rain was expected on Thursday and warned residents to avoid the old bridge.",
    "Farmers upstream reported damage to spring crops and asked the council for help with drainage repairs.",
    "The mayor said the town would apply for national disaster funds once the water level had fallen.",
]
MUSEUM = [
    "The city museum reopened its natural history wing after a renovation that took three years to complete.",
    "Visitors can now see a restored whale skeleton hanging above the main hall and a new gallery of minerals.",
    "The project was paid for by a public appeal and a grant from the national heritage lottery fund.",
    "Curators said school groups would be able to book guided tours of the collections from next month.",
]


def host_documents() -> list[dict]:
    """The host's own articles: its ids, its fields; three stories, some syndicated."""
    return [
        {"id": "wire-1001", "headline": "Harbour strike ends after pay deal", "text": HARBOUR, "section": "business",
         "author": "Wire staff", "paywalled": False, "as": "html", "url": "https://wire.example/harbour-deal"},
        {"id": "daily-77", "headline": "Dock strike is over", "text": HARBOUR, "section": "business",
         "author": "A. Reporter", "paywalled": True, "as": "text", "url": "https://daily.example/news/77"},
        {"id": "coast-5", "headline": "Port returns to work", "text": HARBOUR[:5], "section": "local",
         "author": "Coast desk", "paywalled": False, "as": "html", "url": "https://coast.example/port-work"},
        {"id": "wire-1002", "headline": "Floods close schools in lower town", "text": FLOODS, "section": "local",
         "author": "Wire staff", "paywalled": False, "as": "text", "url": "https://wire.example/floods"},
        {"id": "daily-78", "headline": "Town under water", "text": FLOODS, "section": "local",
         "author": "B. Writer", "paywalled": False, "as": "html", "url": "https://daily.example/news/78"},
        # indexed by the host but not (yet) given to newsfold: still found, as its own story
        {"id": "daily-79", "headline": "Museum wing reopens", "text": MUSEUM, "section": "culture",
         "author": "C. Critic", "paywalled": False, "as": None, "url": "https://daily.example/news/79"},
    ]


HOST_TEMPLATE = {
    "index_patterns": ["hostnews-*"],
    "composed_of": ["newsfold"],  # newsfold
    "template": {
        "settings": {"number_of_shards": 1, "number_of_replicas": 0},
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "headline": {"type": "text"},
                "text": {"type": "text"},
                "section": {"type": "keyword"},
                "author": {"type": "keyword"},
                "paywalled": {"type": "boolean"},
                "url": {"type": "keyword"},
            },
        },
    },
}


def html_of(doc: dict) -> str:
    paragraphs = "".join(f"<p>{p}</p>" for p in doc["text"])
    return (f"<html><head><title>{doc['headline']}</title></head><body><nav>Home | World | Sport</nav>"
            f"<article><h1>{doc['headline']}</h1>{paragraphs}</article><footer>(c) Example</footer></body></html>")


def setup(client, settings: Settings) -> None:
    client.cluster.put_component_template(name="newsfold", **component_template(settings))  # newsfold
    client.indices.put_index_template(name="hostnews", **HOST_TEMPLATE)
    client.options(ignore_status=404).indices.delete(index=INDEX)
    client.indices.create(index=INDEX)


def load(client, settings: Settings) -> list[dict]:
    """Index the host's documents, then give each to newsfold (as HTML or as text)."""
    signed = []
    for doc in host_documents():
        source = {k: doc[k] for k in ("headline", "section", "author", "paywalled", "url")}
        source["text"] = "\n\n".join(doc["text"])
        client.index(index=INDEX, id=doc["id"], document=source, refresh="wait_for")
        if doc["as"] == "html":  # newsfold
            one = sign_page(Page(html=html_of(doc), url=doc["url"], id=doc["id"]), settings)
        elif doc["as"] == "text":  # newsfold
            one = sign_text(source["text"],
                            TextMeta(title=doc["headline"], url=doc["url"], page_id=doc["id"]), settings=settings)
        else:
            continue
        if isinstance(one, Rejection):
            print(f"not folded: {doc['id']}: {one.message()}", file=sys.stderr)
            continue
        signed.append(one)
    outcomes = ingest(signed, client=client, settings=settings, index=INDEX)  # newsfold
    return [o.as_dict() for o in outcomes]


def search(client, words: str, *, sections: list[str] | None = None) -> dict:
    """The host's own query, folded by story."""
    body: dict = {
        "query": {
            "bool": {
                "must": [{"multi_match": {"query": words, "fields": ["headline^2", "text"]}}],
                "filter": [{"terms": {"section": sections}}] if sections else [],
            }
        },
        "size": 10,
        "_source": ["headline", "section", "author", "paywalled", "url"],
        # newsfold: each section bucket counts stories as well as documents
        "aggs": with_story_counts({"sections": {"terms": {"field": "section"}}}),
    }
    return fold_search(client, body, index=INDEX, versions=3, count_all=True)  # newsfold


def update_and_delete(client, settings: Settings) -> dict:
    """The index's life: change a host field, rewrite an article, delete one; what newsfold says of each."""
    # a host field changes: a partial update keeps newsfold's fields (a full ``index`` request would drop them)
    client.update(index=INDEX, id="daily-77", doc={"paywalled": False}, refresh="wait_for")
    # an article is rewritten: index the new version, then ingest it again; it goes where its new text belongs
    museum = {"headline": "Museum wing reopens", "text": "\n\n".join(MUSEUM), "section": "culture",
              "author": "Coast desk", "paywalled": False, "url": "https://coast.example/port-work"}
    client.index(index=INDEX, id="coast-5", document=museum, refresh="wait_for")  # drops its fold fields ...
    lost = unfolded_documents(client=client, index=INDEX)["ids"]  # ... which this check names
    rewritten = sign_text(museum["text"],
                          TextMeta(title=museum["headline"], url=museum["url"], page_id="coast-5"),
                          settings=settings)  # newsfold
    (again,) = ingest([rewritten], client=client, settings=settings, index=INDEX)  # newsfold
    # the founding article of the harbour story is deleted: the other copies stay one story
    deleted = delete_pages(["wire-1001"], client=client, settings=settings, index=INDEX)  # newsfold
    client.indices.refresh(index=INDEX)
    return {"unfolded_after_full_index": lost, "rewritten": again.as_dict(),
            "deleted": [o.as_dict() for o in deleted]}


def errors(client, settings: Settings) -> list[str]:
    """Bad input is a clear error a host catches with one ``except``; a page newsfold cannot use is a Rejection."""
    seen = []
    for attempt in (
        lambda: fold_search(client, {"query": {"match_all": {}}, "from": 9_999, "size": 10}, index=INDEX),
        lambda: ingest(["not a signed page"], client=client, settings=settings, index=INDEX),
        lambda: fold_search(client, {"query": {"match_all": {}}}, index=INDEX, versions=-1),
    ):
        try:
            attempt()
        except NewsfoldError as exc:  # newsfold: InputError, InputTypeError, IndexMismatchError, ServerError
            seen.append(type(exc).__name__)
    empty = sign_text("", TextMeta(page_id="empty-1"), settings=settings)  # newsfold: not an error, a rejection
    if isinstance(empty, Rejection):
        seen.append(f"Rejection:{empty.reason}")
    return seen


def main() -> int:
    settings = Settings.from_env()
    if not settings.elasticsearch_url:
        print("set ELASTICSEARCH_URL to the cluster to use, e.g. http://localhost:9200", file=sys.stderr)
        return 2
    client = build_client(settings)
    try:
        setup(client, settings)
        outcomes = load(client, settings)
        response = search(client, "harbour strike floods rain museum")
        for story in folded_hits(response):
            hit = story["hit"]
            print(json.dumps({
                "id": hit["_id"],
                **hit["_source"],
                "other_versions": story["other_versions_matching"],
                "other_versions_all": story["other_versions_all"],
                "versions": [v["_id"] for v in story["versions"]],
            }, sort_keys=True))
        buckets = story_buckets(response["aggregations"]["sections"])  # newsfold
        sections = {b["key"]: b["documents"] for b in buckets}
        section_stories = {b["key"]: b["stories"] for b in buckets}
        life = update_and_delete(client, settings)
        after = folded_hits(search(client, "harbour strike floods rain museum"))
        life["stories_after"] = sorted(
            [s["hit"]["_id"], *sorted(v["_id"] for v in s["versions"])] for s in after
        )
        print(json.dumps({"stories": story_count(response), "documents": response["hits"]["total"]["value"],
                          "sections": sections, "section_stories": section_stories, "outcomes": outcomes,
                          "life": life, "errors": errors(client, settings)}, sort_keys=True))
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
