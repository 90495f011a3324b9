"""Extraction: page bytes in, an ``Article`` (title, text, date, picture, credited agency) or a ``Rejection`` out.

``article.extract_article`` is the pipeline. Its steps: ``decode`` (bytes to a tree), ``cleanup``
(the tree before trafilatura), ``blocks`` (the text blocks after it), ``edges`` (the text's first and last
lines), ``meta`` (headline and date), ``credits`` (picture and agency) and ``headlines`` (what a reader sees of
a page); ``result`` is what it returns.
"""
