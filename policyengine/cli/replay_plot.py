"""The replay's curve as a self-contained HTML page: one inline SVG, no script, no dependency.

Unallocated GPU % (y) against arrived GPU demand % (x): each seed's curve in a light line, their
mean in a dark one, the value at 100% arrived marked, and reference figures (the paper's, or
any the caller passes) as horizontal ticks at 100%. The page opens in any browser and can be
attached to a review as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from html import escape

WIDTH, HEIGHT = 760, 460
LEFT, RIGHT, TOP, BOTTOM = 64, 180, 40, 56


def _path(
    points: Sequence[tuple[float, float]],
    sx: Callable[[float], float],
    sy: Callable[[float], float],
) -> str:
    return " ".join(
        f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for i, (x, y) in enumerate(points)
    )


def html_page(
    title: str,
    curves: Sequence[Sequence[tuple[float, float]]],
    mean: Sequence[tuple[float, float]],
    at_100: float | None,
    references: Mapping[str, float] | None = None,
) -> str:
    """The page; ``curves`` per seed and ``mean`` as (arrived %, unallocated %) points."""
    points = [p for c in curves for p in c] + list(mean)
    x_max = max([100.0, *(x for x, _ in points)])
    y_max = max([10.0, *(y for x, y in points if x >= 50)])
    y_max = min(100.0, 5 * (int(y_max / 5) + 1))
    x_min = 50.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def sx(x: float) -> float:
        return LEFT + (max(x, x_min) - x_min) / (x_max - x_min) * plot_w

    def sy(y: float) -> float:
        return TOP + plot_h - min(y, y_max) / y_max * plot_h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="#fafafa" '
        'stroke="#999"/>',
    ]
    tick = 10 if x_max - x_min > 40 else 5
    x = x_min
    while x <= x_max + 1e-9:
        parts.append(
            f'<line x1="{sx(x):.1f}" y1="{TOP}" x2="{sx(x):.1f}" y2="{TOP + plot_h}" '
            'stroke="#e4e4e4"/>'
            f'<text x="{sx(x):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{x:g}</text>'
        )
        x += tick
    step = 5 if y_max <= 40 else 10
    y = 0.0
    while y <= y_max + 1e-9:
        parts.append(
            f'<line x1="{LEFT}" y1="{sy(y):.1f}" x2="{LEFT + plot_w}" y2="{sy(y):.1f}" '
            'stroke="#e4e4e4"/>'
            f'<text x="{LEFT - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:g}</text>'
        )
        y += step
    parts.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 14}" text-anchor="middle">'
        "arrived GPU demand (% of the cluster's GPUs)</text>"
        f'<text transform="translate(16,{TOP + plot_h / 2}) rotate(-90)" '
        'text-anchor="middle">unallocated GPUs (%)</text>'
        f'<text x="{LEFT}" y="{TOP - 14}" font-size="14">{escape(title)}</text>'
    )
    for curve in curves:
        shown = [(x, y) for x, y in curve if x >= x_min]
        if shown:
            parts.append(
                f'<path d="{_path(shown, sx, sy)}" fill="none" stroke="#9ab" '
                'stroke-width="1" opacity="0.6"/>'
            )
    shown = [(x, y) for x, y in mean if x >= x_min]
    if shown:
        parts.append(
            f'<path d="{_path(shown, sx, sy)}" fill="none" stroke="#135" stroke-width="2"/>'
        )
    parts.append(
        f'<line x1="{sx(100):.1f}" y1="{TOP}" x2="{sx(100):.1f}" y2="{TOP + plot_h}" '
        'stroke="#c33" stroke-dasharray="4 3"/>'
    )
    legend_y = TOP + 10
    if at_100 is not None:
        parts.append(
            f'<circle cx="{sx(100):.1f}" cy="{sy(at_100):.1f}" r="4" fill="#135"/>'
            f'<text x="{LEFT + plot_w + 12}" y="{legend_y}" fill="#135">'
            f"this policy: {at_100:.2f}%</text>"
        )
        legend_y += 18
    for name, value in (references or {}).items():
        parts.append(
            f'<line x1="{sx(100) - 8:.1f}" y1="{sy(value):.1f}" x2="{sx(100) + 8:.1f}" '
            f'y2="{sy(value):.1f}" stroke="#c33" stroke-width="2"/>'
            f'<text x="{LEFT + plot_w + 12}" y="{legend_y}" fill="#c33">'
            f"{escape(name)}: {value:.2f}%</text>"
        )
        legend_y += 18
    parts.append("</svg>")
    svg = "\n".join(parts)
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title></head>\n<body>\n{svg}\n</body></html>\n"
    )
