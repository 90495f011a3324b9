"""Extraction: page bytes in, an ``Article`` (title, text, date, picture, credited agency) or a ``Rejection`` out.

``article.extract_article`` is the pipeline; ``decode`` (bytes to a tree), ``cleanup`` and ``tables`` (the tree
before trafilatura), ``blocks`` (the text blocks after it), ``meta`` (headline and date), ``credits`` (picture and
agency) and ``headlines`` (what a reader sees of a page) are its steps; ``result`` is what it returns.
"""
