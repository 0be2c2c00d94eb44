"""The evidence view behind ``citegraph show``: ``page.build_page`` / ``page.render_page`` and the
page's template (``templates/show.html.j2``). It names no method: a trace is rendered from the
method's own ``trace_view``."""
