"""MkDocs hook: serve the figures of `evaluation/results/` as `img/...` without copying them
into `docs/` (one copy of each figure, the one the experiments write)."""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
FIGURES = {
    "img/figure3-paper.png": "evaluation/results/paper/figure3.png",
    "img/figure3-default.png": "evaluation/results/default/figure3.png",
    "img/scarcity.png": "evaluation/results/scarcity/scarcity.png",
    "img/tracks-binary.png": "evaluation/results/tracks/tracks-binary.png",
    "img/tracks-multiclass.png": "evaluation/results/tracks/tracks-multiclass.png",
    "img/tracks-10-binary.png": "evaluation/results/tracks-10/tracks-binary.png",
    "img/tracks-10-multiclass.png": "evaluation/results/tracks-10/tracks-multiclass.png",
}


def on_files(files, config):
    for dest, src in FIGURES.items():
        file = File(dest, src_dir=None, dest_dir=config["site_dir"],
                    use_directory_urls=config["use_directory_urls"])
        file.abs_src_path = str(ROOT / src)
        files.append(file)
    return files
