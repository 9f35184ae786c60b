"""The transcript as the engine sees it: the canonical model, the wire formats that
parse into it and render back from it, and its token counts."""
