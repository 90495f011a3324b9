"""The app factory, ``create_app``: config, templates, extensions, blueprints (``newsfold.web.create_app``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from flask import Flask, jsonify, request

from newsfold.plugin.admin.admin_queries import MAX_LIST_CLUSTERS
from newsfold.plugin.admin.text_compare import MAX_TEXT_WORDS
from newsfold.plugin.edit.correction_log import MAX_ID_CHARS, MAX_NOTE_CHARS
from newsfold.plugin.search.public_query import MAX_PASSAGE_CHARS, MAX_QUERY_CHARS
from newsfold.plugin.settings import Settings
from newsfold.settings_registry import warn_unknown_env
from newsfold.web import auth, demo_media, display, errors, formatting, resources, validation
from newsfold.web.admin import views as admin_views
from newsfold.web.api import correction_views
from newsfold.web.api import views as api_views
from newsfold.web.config import WebSettings
from newsfold.web.home import section_label
from newsfold.web.search import views as search_views
from newsfold.web.stories import views as story_views
from newsfold.web.validation import MAX_FILTER_CHARS


def create_app(
    test_config: Mapping | None = None, *, settings: Settings | None = None, web: WebSettings | None = None
) -> Flask:
    """Build the Flask app.

    Args:
        test_config: Flask config values that win over the defaults and the
            ``FLASK_*`` environment variables.
        settings: the newsfold settings; ``Settings.from_env()`` when omitted.
        web: the web's own settings (login, cookies, tokens, page size);
            ``WebSettings.from_env()`` when omitted.

    Returns:
        The app; its Elasticsearch and Celery clients are built on first use.
    """
    warn_unknown_env()
    settings = settings if settings is not None else Settings.from_env()
    web = web if web is not None else WebSettings.from_env()
    app = Flask("newsfold.web")  # named after the package: its templates and static files are in web/
    # ids may hold "//" (URLs as ids): a path must reach its route as it is, not be redirected to another id
    app.url_map.merge_slashes = False
    app.url_map.converters["story"] = validation.StoryNameConverter  # a name a route puts last
    _configure(app, web, test_config)
    _set_up_templates(app)
    resources.init_app(app, settings, web)
    errors.register(app)
    auth.init_app(app, web)
    _register_blueprints(app)
    demo_media.init_app(app, web.demo_media)
    app.before_request(_strict_api_arguments)
    return app


def _strict_api_arguments():
    """A JSON API read with a single-valued parameter given empty or twice is a 400 naming it."""
    if request.path.startswith("/api/") and request.method in ("GET", "HEAD"):
        problem = validation.api_argument_problem(request.args)
        if problem is not None:
            return jsonify(error=problem), 400
    return None


def _configure(app: Flask, web: WebSettings, test_config: Mapping | None) -> None:
    """The Flask config: the defaults, then ``FLASK_*`` variables, then ``test_config``."""
    app.config.from_mapping(
        SECRET_KEY=web.secret_key,
        # the session cookie only carries the login: never readable by scripts, not sent on cross-site posts
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=web.cookie_secure,
        PERMANENT_SESSION_LIFETIME=dt.timedelta(hours=web.session_hours),
        # the web's Elasticsearch client fails fast so a down server answers 503 quickly
        ES_TIMEOUT=5.0,
        ES_MAX_RETRIES=1,
        # POST /api/pages: at most this many pages, and this many bytes, per request
        MAX_API_PAGES=1000,
        MAX_CONTENT_LENGTH=100 * 1024 * 1024,
        VERSIONS_PER_STORY=20,
        ADMIN_CLUSTERS=50,
    )
    app.config.from_prefixed_env()
    if test_config:
        app.config.from_mapping(test_config)


def _set_up_templates(app: Flask) -> None:
    """Jinja's whitespace control, the limits the pages state, and the template filters."""
    app.jinja_env.trim_blocks = True
    app.jinja_env.lstrip_blocks = True
    # the limits the pages state or apply (a form's maxlength is the check behind it)
    app.jinja_env.globals["limits"] = {
        "list_clusters": MAX_LIST_CLUSTERS,
        "text_words": MAX_TEXT_WORDS,
        "query": MAX_QUERY_CHARS,
        "passage": MAX_PASSAGE_CHARS,
        "filter": MAX_FILTER_CHARS,
        "id": MAX_ID_CHARS,
        "note": MAX_NOTE_CHARS,
        "user": auth.MAX_USER_CHARS,
        "password": auth.MAX_PASSWORD_CHARS,
    }
    app.add_template_filter(formatting.format_date, "date")
    app.add_template_filter(formatting.format_datetime, "datetime")
    app.add_template_filter(formatting.percent, "percent")
    app.add_template_filter(formatting.safe_fragment, "fragment")
    app.add_template_filter(formatting.safe_url, "safe_url")
    app.add_template_filter(formatting.plural, "plural")
    app.add_template_filter(formatting.news_time, "news_time")
    app.add_template_filter(formatting.language_name, "language")
    app.add_template_filter(formatting.foreign_lang, "foreign_lang")
    app.add_template_filter(display.headline_filter, "headline")
    app.add_template_filter(section_label, "section")


def _register_blueprints(app: Flask) -> None:
    """Every feature's blueprint at its URL prefix, and the liveness route."""
    app.register_blueprint(search_views.bp)
    app.register_blueprint(api_views.bp, url_prefix="/api")
    app.register_blueprint(admin_views.bp, url_prefix="/admin")
    app.register_blueprint(correction_views.bp, url_prefix="/api")
    app.register_blueprint(story_views.bp)
    app.register_blueprint(story_views.api_bp, url_prefix="/api")
    # liveness for container health checks: the process answers (servers are checked per request)
    app.add_url_rule("/healthz", "healthz", lambda: {"status": "ok"})
