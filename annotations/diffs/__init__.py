"""``annotate diff`` and ``annotate history``: whole-version diffs and one symbol's timeline.

* `model`: the report objects (what changed, who cites it).
* `build`: a `model.DiffReport` from `annotations.matching.diff_versions`.
* `usage`: what a changed symbol started or stopped using.
* `citations`: which claims cite a changed symbol.
* `markdown`, `json_format`, `html_page` (with `sidebyside`): the renderers.
* `timeline`: `annotate history`.

`annotations.diff_report` is the entry point the CLI uses.
"""
