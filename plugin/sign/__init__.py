"""Signing: an article becomes a ``SignedPage``: shingles, a MinHash signature, LSH band keys, passage keys.

``signing`` is the step (``sign_page``, ``sign_text``); ``shingles`` holds the shingle schemes (one registry),
``signature`` the MinHash and band keys, ``weighted`` the weighted MinHash, ``passages`` the passage keys,
``novelty`` what a version adds to its story's reference (read from the keys); ``signed_page`` is the data
signing takes and gives.
"""
