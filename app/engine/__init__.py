"""The pure core: transcripts in, transcripts and receipts out.

Nothing in this package performs I/O, reads the environment or the clock;
``tests/engine/test_purity.py`` holds it to that.
"""
