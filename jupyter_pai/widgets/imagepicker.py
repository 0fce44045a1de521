"""The launcher's image choice: a catalogue entry or a registry's repository, then one of
its tags (newest first, with age, size, CUDA, framework, scan and GPU nodes holding it), or
any reference typed in where the admin allows it."""

from __future__ import annotations

import html

import ipywidgets as w

from ..images.choices import ImageChoices
from ..images.models import ImageRepository, ImageTag
from ..notebook.tables import age, size

#: A repository's option value: a prefix no image URI has.
REPOSITORY = "repository:"


def tag_label(tag: ImageTag) -> str:
    parts = [tag.name, age(tag.created), size(tag.size)]
    parts += [f"CUDA {tag.cuda}"] if tag.cuda else []
    parts += [tag.framework] if tag.framework else []
    return " · ".join(p for p in parts if p != "-")


def tag_detail(tag: ImageTag) -> str:
    """One line under the tags: what the tag is, in words."""
    parts = [f"built {age(tag.created)} ago" if tag.created else "", size(tag.size)]
    parts += [f"CUDA {tag.cuda}"] if tag.cuda else []
    parts += [tag.framework] if tag.framework else []
    if tag.scan_severity:
        parts.append(f"scan: {tag.scan_severity}")
    if tag.nodes_with_image:
        parts.append(f"on {tag.nodes_with_image} GPU node(s): starts without a pull")
    return " · ".join(html.escape(p) for p in parts if p and p != "-")


class ImagePicker(w.VBox):
    def __init__(self, choices: ImageChoices, style: dict[str, str]) -> None:
        self.choices = choices
        self.repositories = {r.uri: r for r in choices.repositories}
        options = [
            (f"{i.name} ({i.uri})" if i.name != i.uri else i.uri, i.uri) for i in choices.items
        ]
        options += [(f"{r.name} — {r.registry}", REPOSITORY + r.uri) for r in choices.repositories]
        layout = w.Layout(width="420px")
        self.image = w.Dropdown(options=options, description="image", style=style, layout=layout)
        self.tag = w.Dropdown(description="tag", style=style, layout=layout)
        self.detail = w.HTML()
        self.custom = w.Text(
            description="or type",
            placeholder="nvcr.io/nvidia/pytorch:24.05-py3",
            style=style,
            layout=layout,
        )
        down = [f"{r.name}: {r.error}" for r in choices.registries if not r.ok]
        self.notice = w.HTML(
            "<br>".join(f'<span class="jp-pai-registry-down">{html.escape(d)}</span>' for d in down)
        )
        parts = [self.image, self.tag, self.detail]
        parts += [self.custom] if choices.custom_images else []
        super().__init__([*parts, self.notice])
        self.image.observe(lambda _: self._show_tags(), names="value")
        self.tag.observe(lambda _: self._show_detail(), names="value")
        self._show_tags()

    @property
    def value(self) -> str:
        """The image the job runs: what was typed, else the tag, else the catalogue entry."""
        typed = self.custom.value.strip()
        if typed and self.choices.custom_images:
            return str(typed)
        chosen = str(self.image.value or "")
        if chosen.startswith(REPOSITORY):
            return str(self.tag.value or "")
        return chosen

    def repository(self) -> ImageRepository | None:
        chosen = str(self.image.value or "")
        return (
            self.repositories.get(chosen[len(REPOSITORY) :])
            if chosen.startswith(REPOSITORY)
            else None
        )

    def _show_tags(self) -> None:
        repository = self.repository()
        tags = repository.tags if repository else []
        self.tag.options = [(tag_label(t), t.uri) for t in tags]
        self.tag.value = tags[0].uri if tags else None
        self.tag.layout.display = None if repository else "none"
        self._show_detail()

    def _show_detail(self) -> None:
        repository = self.repository()
        tag = (
            next((t for t in repository.tags if t.uri == self.tag.value), None)
            if repository
            else None
        )
        self.detail.value = (
            f'<span class="jp-pai-image-detail">{tag_detail(tag)}</span>' if tag else ""
        )
