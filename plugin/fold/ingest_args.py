"""The arguments of ``plugin.fold.batch.ingest``, checked at the door: what a host passes is hostile until checked."""

from __future__ import annotations

from newsfold.plugin.errors import InputError, InputTypeError, check_type
from newsfold.plugin.extract.result import Rejection
from newsfold.plugin.fold.presence import Presence
from newsfold.plugin.ids import check_page_id
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signed_page import SignedPage


def check_pages(pages: object, *, settings: Settings) -> list[SignedPage]:
    """The pages of an ``ingest`` call, checked at the door.

    Raises:
        InputTypeError: ``pages`` is not a list of ``SignedPage`` (a ``Rejection``
            from ``sign_page``/``sign_text`` is named with its reason), or
            ``settings`` is not ``Settings``.
        InputError: a signature has another number of permutations than the
            settings (it was signed with other settings and cannot fold here),
            or a page id is outside the id grammar (``plugin.ids``).
    """
    check_type(settings, Settings, "settings")
    if isinstance(pages, str | bytes | dict) or not isinstance(pages, list | tuple):
        raise InputTypeError(f"pages must be a list of SignedPage, not {type(pages).__name__}")
    for n, p in enumerate(pages):
        if isinstance(p, Rejection):
            raise InputTypeError(
                f"pages[{n}] is a Rejection ({p.reason}: {p.detail}), not a SignedPage: leave rejected pages out "
                "of ingest (record their reason instead)"
            )
        check_type(p, SignedPage, f"pages[{n}]")
        check_page_id(p.page_id, f"pages[{n}].page_id")
        perms = len(p.signature.hashvalues)
        if perms != settings.num_perm:
            raise InputError(
                f"pages[{n}] ({p.page_id}) was signed with {perms} permutations, the settings say "
                f"{settings.num_perm}: sign it with the index's settings"
            )
    return list(pages)


MAX_DELIVERY_LENGTH = 256


def check_delivery(delivery: object) -> None:
    """``ingest``'s ``delivery``: None, or a non-empty string of at most :data:`MAX_DELIVERY_LENGTH` characters."""
    name = check_type(delivery, str, "delivery", optional=True)
    if isinstance(name, str) and not 0 < len(name) <= MAX_DELIVERY_LENGTH:
        raise InputError(f"delivery must be 1 to {MAX_DELIVERY_LENGTH} characters, not {len(name)}")


def check_presence(presence: object) -> None:
    """``ingest``'s ``presence``: None, or an object with the methods of ``plugin.fold.presence.Presence``."""
    if presence is not None and not isinstance(presence, Presence):
        raise InputTypeError(f"presence must be a Presence (plugin.fold.presence), not {type(presence).__name__}")
